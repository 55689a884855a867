//! Procedural macros of tune.
