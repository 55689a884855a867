pub mod composition_overhead;
pub mod dispatch;
pub mod engine_overhead;
pub mod select;
