pub mod engine_overhead;
