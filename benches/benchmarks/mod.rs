pub mod dispatch;
pub mod engine_overhead;
pub mod select;
