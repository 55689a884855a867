//! The OpenCL backend (opencl3).
