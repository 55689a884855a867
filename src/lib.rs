#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

pub use tune_runtime::*;

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
/// Options: `#[tunable(crate = "path")]` for a renamed facade; `technique = name` (one of
/// `exhaustive`, `random`, `annealing`, `pso`, `mcmc`, `genetic`, `diff_evo`, `bandit`,
/// `bayes`) for the tuning entry points to come.
///
/// ```
/// #[tune::tunable]
/// fn saxpy(
///     a: f32,
///     x: &[f32],
///     y: &mut [f32],
///     #[tp(1..=x.len(), divides(x.len()))] wpt: usize,
///     #[tp(1..=x.len(), divides(x.len() / wpt))] ls: usize,
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
/// # Ok::<(), tune::Error>(())
/// ```
pub use tune_macros::tunable;

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

/// The names most programs need.
pub mod prelude {
    pub use tune_macros::{space, tunable, Enum};
    pub use tune_runtime::{Config, Neighbourhood, Param, Space, SpaceBuilder, Value};
}
