#![doc = include_str!("../README.md")]
//!
//! # How the API is organised
//!
//! This crate is the facade: it re-exports the engine (`tune-runtime`) and the macros
//! (`tune-macros`) by name, and what is listed here is the whole public API
//! (`tests/public_api.rs` pins it).
//!
//! - [`prelude`]: `use tune::prelude::*;` brings what a program that declares a space
//!   ([`space!`], [`tunable`], [`Enum`]) and tunes it with a [`Tuner`] writes.
//! - At the root: the macros, [`Error`] and [`Result`], and the names most programs write
//!   (the space and its configurations, parameters of user types, the evaluator trait and
//!   its failures, techniques, the tuner and its result, [`testing`] for tuning in
//!   `cargo test`). `cuda` (feature `cuda`) is [`backend::cuda`](crate::backend).
//! - One module per piece of the engine, in the order data flows through them:
//!   [`param`] → [`space`](mod@space) → [`search`] and [`abort`] → [`evaluate`] (with [`cost`],
//!   [`backend`], [`measure`], [`simulate`]) → [`tuner`] → [`results`]; and tools over
//!   results: [`import`], [`t1`], [`summary`], [`score`], `plot` (feature `plot`),
//!   [`watch`].
//! - Every fallible call returns [`Result`]; [`Error`] is one `#[non_exhaustive]` enum whose
//!   variants carry what a caller matches on (the parameter, constraint, file, format
//!   version, T1 expression and column, the driver's error code, the reference kernel's
//!   [`Failure`]). A configuration that fails is no error: it is recorded as a [`Failure`]
//!   and the search goes on.
//! - Not public API: `__private`, what the macros expand to (hidden, may change in any
//!   release), and `#[doc(hidden)]` hooks named `__*` that tests and benches use.
#![warn(missing_docs)]

// The engine's modules, one per piece of the design.
pub use tune_runtime::{
    abort, backend, cost, evaluate, import, measure, param, results, score, search, simulate,
    space, summary, t1, tuner, watch,
};

/// Plots of tuning runs (feature `plot`).
#[cfg(feature = "plot")]
#[cfg_attr(docsrs, doc(cfg(feature = "plot")))]
pub use tune_runtime::plot;

/// The CUDA backend (feature `cuda`), also at `backend::cuda`.
#[cfg(feature = "cuda")]
#[cfg_attr(docsrs, doc(cfg(feature = "cuda")))]
#[doc(no_inline)]
pub use tune_runtime::cuda;

// The names most programs write.
pub use tune_runtime::{technique_by_name, Technique, TechniqueKind};
pub use tune_runtime::{Bound, Config, Neighbourhood, Param, Space, SpaceBuilder, Value};
pub use tune_runtime::{Cost, Evaluator, Failure, Measured};
pub use tune_runtime::{EnumParam, Kind, ParamType};
pub use tune_runtime::{Error, Result};
pub use tune_runtime::{Tuner, TuningResult};

/// Tuning in `cargo test` (also at `tuner::testing`).
#[doc(no_inline)]
pub use tune_runtime::testing;

/// Generates the backend conformance tests (see [`backend::conformance`]).
pub use tune_runtime::testgen_backend;

/// Declares a search space; evaluates to [`Result<Space>`](crate::Space).
///
/// Each entry is `NAME: TYPE in VALUES, CONSTRAINT, ..;`:
/// - values: an integer interval `lo..=hi` or `lo..hi`, optionally `step s`; a list
///   `[a, b, c]`; or any iterator (a generator, e.g. `(0..=10).map(|i| 1 << i)`). `bool`
///   and enums with `#[derive(tune::Enum)]` need no values. Bounds and values may be any
///   expression over the surrounding code's variables (`n`, `x.len()`).
/// - constraints: boolean Rust expressions over the parameters declared *before* this one
///   and the surrounding variables, or the aliases `divides(e)`, `multiple_of(e)`,
///   `less_than(e)`, `greater_than(e)`, `at_most(e)`, `at_least(e)`, `equal(e)`,
///   `unequal(e)`, which constrain the parameter being declared, combined with `&&`, `||`
///   and `!`. Several comma-separated constraints must all hold. An alias that is a whole
///   conjunct of an integer parameter prunes by generating candidates (`divides(n)` visits
///   only the divisors of `n`).
/// - `default = v`: the value production code uses when nothing better is known.
///
/// A stand-alone constraint, `where EXPR;` (or `where EXPR, EXPR;`), may stand anywhere,
/// before or after the parameters it reads, e.g. when translating a list of restrictions
/// from another tuner or a paper. It is a boolean expression over any parameters (no
/// aliases, since it belongs to no parameter), checked as soon as the last parameter it
/// reads is bound: exactly as if it had been written on that parameter.
///
/// `crate = path;` as the first item names the facade crate when it is renamed.
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq, tune::Enum)]
/// enum Kernel { Naive, Tiled }
///
/// let n = 1024usize;
/// let max_wg = 256;
/// let space = tune::space! {
///     WPT: usize in 1..=n, divides(n);
///     LS:  usize in 1..=n, divides(n / WPT) && at_most(max_wg);
///     VW:  u32   in [1, 2, 4, 8];
///     PAD: bool;
///     K:   Kernel;
///     TS:  usize in (0..=4).map(|i| 1 << i);
///     ST:  usize in 0..=64 step 8, default = 16;
///     where X * TS <= 32;
///     X:   usize in 1..=4, WPT * X <= 8 || PAD;
/// }?;
/// assert!(space.len() > 0);
/// # Ok::<(), tune::Error>(())
/// ```
///
/// Constraint closures borrow the surrounding variables, so they must be `Sync` (no `Rc`,
/// no `Cell`).
pub use tune_macros::space;

/// Makes a host function tunable: each argument marked `#[tp(..)]` is a tuning parameter.
///
/// `#[tp(VALUES, CONSTRAINT, .., default = v)]` takes what a [`space!`] entry takes after
/// `in`; `#[tp]` alone declares a `bool` or enum parameter. Bounds and constraints may read
/// the function's other arguments and the tuning arguments before it.
///
/// For `fn saxpy(..)` it generates, beside the unchanged function:
/// - `struct SaxpyConfig { pub wpt: usize, .. }`, one field per `#[tp]` argument, with the
///   function's visibility, `Copy`, `Debug`, `PartialEq` and `Display` (`wpt=4 ls=64`);
/// - `SaxpyConfig::space(other arguments) -> tune::Result<tune::Space>`: the non-tuning
///   arguments in order, `&mut` ones taken as `&` (arguments taken by value are moved in);
/// - `cfg.call(other arguments)`, which calls `saxpy` with the configuration;
/// - `From<SaxpyConfig> for tune::Config` and `TryFrom<&tune::Config>` (by slot: the
///   `#[tp]` arguments in order).
///
/// `cfg` attributes written after `#[tunable]` apply to the generated items too. Methods
/// are not supported (nothing can be generated beside an `impl` item): call a free
/// `#[tunable]` function from the method. The constraint closures borrow the other
/// arguments, so generic argument types need `Sync`.
///
/// # Tuning and dispatch
///
/// It also generates the tuning entry point and the dispatch (for a function that is not
/// `async` or `unsafe` and takes no `impl Trait` argument):
/// - `SaxpyConfig::tuner(other arguments) -> tune::Result<tune::Tuner<..>>`: a configured
///   [`Tuner`] over the function's space whose evaluator calls `saxpy` with each
///   configuration. Change it with the tuner's builder methods (`.abort(..)`,
///   `.database(..)`, `.log(..)`, `.seed(..)`), then `.run()`, or `.run_test()` inside a
///   `#[test]` (a short budget unless `TUNE_FULL=1`, failing when no configuration is valid
///   or one gave a wrong result, and recording into the default database only a full run
///   or with `TUNE_RECORD=1`; see [`testing`]).
/// - `SaxpyConfig::tuner_with(other arguments, check)`: the same, where
///   `check(&returned, &arg1, &arg2, ..)` sees the first call's return value and the
///   arguments after it (`&mut` ones as `&`, values by `&`) and returns
///   `Err(Failure::WrongResult(..))` for a wrong output.
/// - `SaxpyConfig::best(arguments) -> tune::Result<(SaxpyConfig, tune::results::Choice)>`:
///   the configuration to run on this device for this input key — the best recorded for
///   the key, else for the nearest recorded key, else the declared defaults (`default = v`
///   on every `#[tp]`), else the first valid configuration — and which of these
///   (`choice.source`, a [`results::Source`]). Results recorded for another version of
///   the declaration (the function as written, `#[tp]`s and body, doc comments aside), or
///   another space or tune version, are passed over: `choice.stale` says so, and so does a
///   warning on standard error, once per process and input. `best_in(&db, arguments)`
///   reads another database. With `TUNE_VERBOSE=1`, every choice is told on standard error.
/// - `saxpy_auto(arguments) -> tune::Result<R>`: calls `saxpy` with `best`'s configuration.
///   It builds the space on each call: in a hot loop, call `best` once and then `.call(..)`.
///
/// Arguments: the tuner keeps them for the whole run; arguments taken by value are cloned
/// for every call (they need `Clone`), and all of them must be `Send`.
///
/// The database is `$TUNE_DB`, else `tuning/` in the crate that declares the function
/// (`CARGO_MANIFEST_DIR`). The cost is:
/// - the function's return value with `cost = value`, the default when the written return
///   type is `f64`, `f32`, `Duration`, `Measured<..>`, a tuple of these or a `Result` of
///   one: a [`Cost`] or a `Result` whose `Err` (a [`Failure`], an [`Error`] or a `String`)
///   is recorded as a failed configuration;
/// - else (`cost = time`, the default for `()` and other return types) the median wall time
///   of `repetitions` calls (default 5) after one untimed call, the one `check` sees; a
///   written `Result` return type's `Err` is a failure.
///
/// # Options
/// `#[tunable(key = value, ..)]`, each at most once; mistakes are compile errors:
/// - `technique = name`: one of `exhaustive`, `random`, `annealing`, `pso`, `mcmc`,
///   `genetic`, `diff_evo`, `bandit` (the default), `bayes`, `local`;
/// - `abort = condition` (or in quotes): `duration(30s)` (units `ms`, `s`, `min`, `h`),
///   `evaluations(100)`, `valid_evaluations(50)`, `fraction(0.1)`, `cost(1e-3)`,
///   `speedup_over_time(1.05, 10s)`, `speedup_over_evaluations(1.05, 50)`, `whole_space`,
///   combined with `|` (either stops) and `&` (both must), in parentheses as needed; the
///   default is the whole space;
/// - `cost = time | value` and `repetitions = n`: see above;
/// - `input = expr` (its `Display` is the input key) or `input(n = expr, m = expr)` (key
///   `n=..,m=..`), over the arguments; by default the lengths of slice, `Vec`, array and
///   string arguments and the values of integer arguments, in order (`x=1024,n=7`). Keys
///   of `name=number` components let the dispatch find the nearest recorded input;
/// - `device = expr`: the device name recorded and looked up (default `"cpu"`, as the
///   closure evaluator records it); e.g. the GPU's name for a host function that launches
///   kernels, or the CPU's model;
/// - `name = "..."`: the tunable's name in the database (default `module::path::function`);
/// - `where = EXPR`, as often as needed: a stand-alone constraint over the `#[tp]`
///   arguments (see [`space!`]), checked once the last argument it reads is bound;
/// - `online`: also generates an online tuner (see below);
/// - `crate = "path"`: a renamed facade.
///
/// ```
/// #[tune::tunable(
///     technique = random,
///     abort = evaluations(20) | duration(10s),
///     input(n = x.len()),
/// )]
/// fn saxpy(
///     a: f32,
///     x: &[f32],
///     y: &mut [f32],
///     #[tp(1..=x.len(), divides(x.len()), default = 1)] wpt: usize,
///     #[tp(1..=x.len(), divides(x.len() / wpt), default = 1)] ls: usize,
/// ) -> usize {
///     for (yi, xi) in y.iter_mut().zip(x) {
///         *yi += a * xi;
///     }
///     x.len() / wpt / ls
/// }
///
/// let x = vec![1.0; 1024];
/// let mut y = vec![0.0; 1024];
/// let space = SaxpyConfig::space(2.0, &x, &y)?;
/// assert_eq!(space.len(), 66);
/// let cfg = SaxpyConfig::try_from(space.get(5).unwrap())?;
/// assert_eq!(cfg.call(2.0, &x, &mut y), 1024 / cfg.wpt / cfg.ls);
///
/// # let dir = std::env::temp_dir().join(format!("tune-doc-saxpy-{}", std::process::id()));
/// # let db = tune::results::Database::open(&dir);
/// // Nothing recorded yet: the declared defaults.
/// let (cfg, choice) = SaxpyConfig::best_in(&db, 2.0, &x, &y)?;
/// assert_eq!(choice.source, tune::results::Source::Default);
/// // Tune (the cost is the time: `saxpy` returns `usize`) and record the best.
/// let result = SaxpyConfig::tuner(2.0, &x, &mut y)?.database(db.clone()).progress(false).run()?;
/// let (cfg, choice) = SaxpyConfig::best_in(&db, 2.0, &x, &y)?;
/// assert_eq!((choice.source, tune::Config::from(cfg)), (tune::results::Source::Exact, result.best.config));
/// // `saxpy_auto(2.0, &x, &mut y)?` runs it, from the default database.
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), tune::Error>(())
/// ```
///
/// # Host functions that launch kernels
///
/// The function takes a device handle, a [`Queue`](backend::composition::Queue), compiles
/// its kernels through it (once per source and defines) and returns their device time, the
/// cost (KTT's tuned host code; for several kernels tuned as one unit with a reference and
/// restored inputs, see [`backend::composition`]):
///
/// ```no_run
/// # #[cfg(feature = "opencl")] mod m {
/// use std::time::Duration;
/// use tune::backend::composition::{Buffer, KernelSource, Queue};
/// use tune::backend::opencl::OpenCl;
/// use tune::Failure;
///
/// const SRC: &str = "__kernel void scale(__global const float* x, __global float* y) { /* .. */ }";
///
/// #[tune::tunable(online, device = q.name(), input(n = x.len()))]
/// fn scale(
///     q: &Queue<OpenCl>,
///     x: &Buffer<OpenCl, f32>,
///     y: &mut Buffer<OpenCl, f32>,
///     #[tp([32, 64, 128])] ls: usize,
///     #[tp([1, 2, 4], divides(x.len() / ls))] wpt: usize,
/// ) -> Result<Duration, Failure> {
///     let k = q.kernel(&KernelSource::new(SRC, "scale").define("LS", ls).define("WPT", wpt))?;
///     q.launch(&k).global([x.len() / wpt]).local([ls]).arg(x).arg(&*y).run()
/// }
/// # }
/// ```
///
/// # Online tuning
///
/// With `online`, `XConfig::online()` makes an online tuner of the function
/// ([`tuner::online`]), for the application's own loop: `tuner.call(arguments, check)` runs
/// the function with the next configuration to try and returns its result; the first result
/// of each configuration goes through `check(&result, arguments..)` (`&mut` ones as `&`),
/// and a wrong one never reaches the caller (the call runs a validated configuration
/// instead). After the exploration (the abort condition, else 50 configurations) every call
/// runs the best. `.prepare(|cfg| ..)` compiles configurations ahead on a background
/// thread; `.with(|o| o.log(path))` keeps the progress, so a restarted application goes on
/// where it stopped.
///
/// ```no_run
/// # #[cfg(feature = "opencl")] mod m {
/// # use std::time::Duration;
/// # use tune::backend::composition::{Buffer, KernelSource, Queue};
/// # use tune::backend::opencl::OpenCl;
/// # use tune::Failure;
/// # const SRC: &str = "";
/// # #[tune::tunable(online, device = q.name(), input(n = x.len()))]
/// # fn scale(q: &Queue<OpenCl>, x: &Buffer<OpenCl, f32>, y: &mut Buffer<OpenCl, f32>,
/// #     #[tp([32, 64, 128])] ls: usize) -> Result<Duration, Failure> { todo!() }
/// # fn main() -> tune::Result<()> {
/// let q = Queue::new(OpenCl::first()?);
/// let x = q.buffer(&vec![1.0f32; 1 << 20])?;
/// let mut y = q.zeros::<f32>(1 << 20)?;
/// let mut tuner = ScaleConfig::online().with(|o| o.log("target/tune/scale-online.jsonl"));
/// for _frame in 0..1000 {
///     tuner.call(&q, &x, &mut y, |_, q, _, y| {
///         let ok = q.read(y).map_err(|e| Failure::Other(e.to_string()))?.iter().all(|&v| v == 3.0);
///         if ok { Ok(()) } else { Err(Failure::WrongResult("y != 3 x".into())) }
///     })??;
/// }
/// # Ok(()) }
/// # }
/// ```
///
/// Inside a test (the cargo-test flow), or with [`test`](macro@test):
///
/// ```no_run
/// # #[tune::tunable] fn saxpy(x: &[f32], #[tp([1, 2])] w: usize) {}
/// #[test]
/// fn tune_saxpy() -> tune::Result<()> {
///     let x = vec![1.0; 1 << 20];
///     SaxpyConfig::tuner(&x)?.run_test()?; // `TUNE_FULL=1 cargo test` for a full run
///     Ok(())
/// }
/// ```
pub use tune_macros::tunable;

/// Turns a function whose body ends with a tuner into a tuning test: a `#[test]` that runs
/// it with [`testing::tune_test`] — a short budget, unless `TUNE_FULL=1` asks for the
/// tuner's own abort condition — and fails when no configuration is valid or one gave a
/// wrong result (a failed check of `tuner_with`). A full run records the best configuration
/// in the tuner's database (by default `$TUNE_DB`, else `tuning/` of the crate), where the
/// generated `best` and `_auto` find it; a short run is recorded there only with
/// `TUNE_RECORD=1` (the test output says where it would have gone), and always into a
/// database the test names with `.database(Database::open(..))`. The function takes no
/// arguments and has no return
/// type; `?` works in its body. `#[tune::test(crate = "path")]` names a renamed facade.
///
/// ```no_run
/// #[tune::tunable(abort = duration(5min))]
/// fn saxpy(x: &[f32], y: &mut [f32], #[tp([1, 2, 4, 8])] wpt: usize) {
///     # let _ = (x, y, wpt);
///     // ...
/// }
///
/// #[tune::test]
/// fn tune_saxpy() {
///     let x = vec![1.0f32; 1 << 20];
///     let mut y = vec![0.0f32; 1 << 20];
///     SaxpyConfig::tuner(&x, &mut y)?
/// }
/// # fn main() {}
/// ```
pub use tune_macros::test;

/// Derives [`ParamType`] and [`EnumParam`] for a fieldless enum, so that it can be the type
/// of a tuning parameter taking every variant. The enum also needs `Clone`, `Copy`,
/// `Debug` and `PartialEq`. `#[tune(crate = "path")]` names a renamed facade.
///
/// ```
/// #[derive(Clone, Copy, Debug, PartialEq, tune::Enum)]
/// enum Layout { RowMajor, ColMajor }
///
/// let space = tune::space! { L: Layout; }?;
/// assert_eq!(space.len(), 2);
/// # Ok::<(), tune::Error>(())
/// ```
pub use tune_macros::Enum;

#[doc(hidden)]
pub use tune_runtime::__private;

/// What a program that declares a space and tunes it writes: `use tune::prelude::*;`.
///
/// The macros [`space!`](crate::space!), [`tunable`](macro@crate::tunable) and
/// [`Enum`](macro@crate::Enum); the space, its parameters and configurations; the tuner,
/// the techniques and the two most used abort conditions (and `.and()`/`.or()` on every
/// condition); evaluators, the closure evaluator and failures; the tuning database; and
/// [`Error`]. Left out on purpose: `Result`
/// (it would shadow the standard one; write `tune::Result`) and the `test` attribute (it
/// would shadow `#[test]`; write `#[tune::test]`).
///
/// ```
/// use tune::prelude::*;
///
/// let space = space! { WPT: usize in [1, 2, 4, 8]; PAD: bool; }?;
/// let cost = Closure::new(|c: &Config| -> Result<f64, Failure> {
///     let (wpt, pad): (usize, bool) = (c.get(0), c.get(1));
///     Ok((wpt as f64 - 4.0).abs() + if pad { 0.5 } else { 0.0 })
/// });
/// let result = Tuner::new(space, cost)
///     .abort(Evaluations(8) | Elapsed(std::time::Duration::from_secs(10)))
///     .progress(false)
///     .run()?;
/// assert_eq!(result.best.config.get::<usize>(0), 4);
/// # Ok::<(), Error>(())
/// ```
pub mod prelude {
    pub use tune_macros::{space, tunable, Enum};
    pub use tune_runtime::abort::{AbortExt as _, Elapsed, Evaluations};
    pub use tune_runtime::evaluate::closure::Closure;
    pub use tune_runtime::results::Database;
    pub use tune_runtime::{Config, Neighbourhood, Param, Space, SpaceBuilder, Value};
    pub use tune_runtime::{Error, Evaluator, Failure, Measured};
    pub use tune_runtime::{Technique, TechniqueKind, Tuner, TuningResult};
}
