//! What the CPU and GPU runs share: the shapes, the recipes, the measuring plan past the
//! cross-evaluation, the run file and the tables.
//!
//! - [`shapes`]: the GEMM shapes of the networks and the CPU run's helpers;
//! - [`recipe`]: the splits, the set sizes, the recipes and the selector that ships;
//! - [`labels`]: the label step of a tuning run, and the split of the 15% budget;
//! - [`remeasure`]: each shape's best cells measured again, interleaved (select7);
//! - [`cells`]: the cells measured past the tuning run (scoring, the rest of the grid);
//! - [`run_file`]: what a run measured (`run.json.gz`);
//! - [`analyse`]: the tables of a run;
//! - [`explain`]: where a split's shipped selector loses.

mod analyse;
mod cells;
mod explain;
mod labels;
mod recipe;
pub mod remeasure;
mod run_file;
mod shapes;

pub use analyse::{analyse, analyse_dir, classifiers_dir, plan_dir};
pub use cells::{fill, verify};
pub use explain::explain_dir;
pub use labels::{
    label_budget, label_step, labelled, set_budget, training_sets, BUDGET, TUNE_SHARE,
};
pub use recipe::deploy;
pub use run_file::{read_run, write_run, RunFile};
pub use shapes::{cpu_name, random, time_cpu, Shape, Shapes};
