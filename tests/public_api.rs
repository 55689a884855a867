//! The public API of `tune`, pinned: every item a user may name, by the path they name it
//! with. Removing or moving one breaks this file's build; adding one should add it here
//! (and to the crate docs' map, where it is a new piece). The tests below check that the
//! shortcuts (the root, the prelude) name the same items as the modules.
#![allow(unused_imports)]

/// The macros, `Error`/`Result` and the names most programs write.
mod root {
    use tune::{space, test, testgen_backend, tunable, Enum};
    use tune::{technique_by_name, Technique, TechniqueKind, Tuner, TuningResult};
    use tune::{testing, Cost, Error, Evaluator, Failure, Measured, Result};
    use tune::{Bound, Config, EnumParam, Kind, Neighbourhood, Param, ParamType, Space};
    use tune::{SpaceBuilder, Value};
}

mod prelude {
    use tune::prelude::{space, tunable, Closure, Database, Elapsed, Enum, Error, Evaluations};
    use tune::prelude::{Config, Neighbourhood, Param, Space, SpaceBuilder, Value};
    use tune::prelude::{Evaluator, Failure, Measured, Technique, TechniqueKind};
    use tune::prelude::{Tuner, TuningResult};
}

mod param {
    use tune::param::{Bound, EnumParam, Integer, Kind, Param, ParamType, Value};
}

mod space {
    use tune::space::DEFAULT_MEMORY_LIMIT;
    use tune::space::{Config, Neighbourhood, ParamInfo, Space, SpaceBuilder};
}

mod search {
    use tune::search::{technique_by_name, Technique, TechniqueKind};
    use tune::search::{Annealing, Bandit, Bayes, DiffEvo, Exhaustive, Genetic, Guided};
    use tune::search::{LocalSearch, Mcmc, Phased, Pso, Random, Surrogate, WarmStart};
}

mod abort {
    use tune::abort::{cost, duration, evaluations, fraction, valid_evaluations, whole_space};
    use tune::abort::{speedup_over_evaluations, speedup_over_time};
    use tune::abort::{AbortCondition, AbortExt, And, Or, Progress};
    use tune::abort::{CostReached, Elapsed, Evaluations, Fraction, Improvement, Speedup};
    use tune::abort::{ValidEvaluations, WholeSpace};
}

mod cost {
    use tune::cost::Cost;
}

mod evaluate {
    use tune::evaluate::closure::{Closure, IntoMeasured, NoPrepare, Timed};
    use tune::evaluate::process::{CostFrom, Process, DEFAULT_MAX_OUTPUT};
    use tune::evaluate::{Cause, Evaluator, Failure, Measured};
}

mod backend {
    use tune::backend::composition::Timing;
    use tune::backend::composition::{Buffer, BufferArgument, BufferId, Composition};
    use tune::backend::composition::{CompositionEvaluator, Inputs, Kernel, KernelId};
    use tune::backend::composition::{KernelSource, Launch, PreparedComposition, Queue, Run};
    use tune::backend::conformance::{checks, run, Check, Kernels};
    use tune::backend::{config_defines, Backend, CompileRequest, ConfigFn, DeviceInfo};
    use tune::backend::{BufferArg, Element, HostArgs, HostData, LaunchArg, LaunchDims};
    use tune::backend::{Comparator, ReferenceFn, ReferenceKernel, Tolerance};
    use tune::backend::{KernelCheckFn, KernelProps, Occupancy, OccupancyLimit, AFTER_COMPILING};
    use tune::backend::{KernelEvaluator, KernelLimits, KernelSpec, PreparedKernel};

    #[cfg(unix)]
    use tune::backend::isolated::{worker_main, Isolated, IsolatedBuffer, IsolatedKernel, Target};

    #[cfg(feature = "opencl")]
    use tune::backend::opencl::{ClKernel, DeviceEntry, OpenCl};

    #[cfg(feature = "cuda")]
    use tune::backend::cuda::{check_device_limits, check_kernel_limits, compile, options};
    #[cfg(feature = "cuda")]
    use tune::backend::cuda::{cudarc, list_devices, nvrtc_version, probe, supported_archs};
    #[cfg(feature = "cuda")]
    use tune::backend::cuda::{Arch, Compiled, Cuda, CudaBuffer, CudaDevice, CudaKernel};
    #[cfg(feature = "cuda")]
    use tune::backend::cuda::{CudaProps, DeviceSelector, Geometry, KernelAttributes};
    #[cfg(feature = "cuda")]
    use tune::cuda::{Cuda as _, DeviceSelector as _};
}

mod measure {
    use tune::measure::{admit, Contender, Finalist, Remeasure, Remeasured, Spread};
}

mod scale {
    #[cfg(feature = "mpi")]
    use tune::scale::mpi::Cluster;
    #[cfg(all(unix, feature = "cuda"))]
    use tune::scale::pick::cuda;
    #[cfg(all(unix, feature = "opencl"))]
    use tune::scale::pick::opencl;
    #[cfg(unix)]
    use tune::scale::{pick, Pick};
    use tune::scale::{Devices, Dropped};
}

mod simulate {
    use tune::simulate::{prior, CacheEntry, Recording, SimulatedEvaluator};
}

mod tuner {
    use tune::tuner::online::{Input, Online, OnlineCost, Stats, Trial};
    use tune::tuner::testing::{full_run, record_requested, tune_test};
    use tune::tuner::testing::{SHORT_DURATION, SHORT_EVALUATIONS};
    use tune::tuner::{Best, Tuner, TuningResult};
}

mod results {
    use tune::results::database::TunableFile;
    use tune::results::database::{file_name, key_distance, Entry, Policy, Ranked, SCHEMA};
    use tune::results::database::{Choice, Database, Fingerprint, Source, Stale, StaleReason};
    use tune::results::export::T4Times;
    use tune::results::export::{from_csv, to_csv, write_csv, T4Measurement, T4Result, T4};
    use tune::results::fingerprint::{of, space_hash, TUNE_VERSION};
    use tune::results::log::{read, LogWriter};
    use tune::results::{timestamp, write_atomic, Choice as _, Database as _, Source as _};
    use tune::results::{Named, Record};
}

#[cfg(feature = "select")]
mod select {
    use tune::select::classify::{train, train_tree, Trained};
    use tune::select::cross::cross_evaluate;
    use tune::select::features::{components, names, of};
    use tune::select::matrix::{best_in, score};
    use tune::select::nested;
    use tune::select::report::{Report, Row};
    use tune::select::set::{choose, UNMEASURED};
    use tune::select::{classify, cross, deploy, features, matrix, report, set};
    use tune::select::{evaluate, group_splits, measured, needed, random_split, tune_inputs};
    use tune::select::{Choice, Nested, Recipe};
    use tune::select::{Classifier, Input, Matrix, Node, Normalisation, Plan, Score};
    use tune::select::{Selector, SetMethod, Split, Stats, TreeLimits};
}

mod tools {
    use tune::import::{detect, from_t4, kernel_tuner, ktt, read, read_json, records, Format};
    use tune::score::{aggregate, score, Settings, SpaceStats, Trace};
    use tune::summary::{objective, random_baseline, runs, BestSeen, Point, Run, Summary};
    use tune::t1::expr::{parse, slots_of, Binding, Env, Expr, ExprError, NoVars, PyValue};
    use tune::t1::expr::{Resolve, Vars};
    use tune::t1::{Argument, Condition, ConfigurationSpace, KernelSpecification, Language};
    use tune::t1::{T1File, T1Kernel, T1Space, TuningParameter, T1};
    use tune::watch::{frame, Tail};

    #[cfg(feature = "plot")]
    use tune::plot::{convergence, cost_vs_param, histogram, save, write_all, SIZE};
    #[cfg(feature = "plot")]
    use tune::plot::{Axis, Baseline, Chart, Format as PlotFormat};
}

/// The shortcuts name the very items of the modules.
#[allow(dead_code)]
fn shortcuts_are_the_same_items(
    (c, s, b, e): (
        tune::Config,
        tune::Space,
        tune::SpaceBuilder<'static>,
        tune::Error,
    ),
    r: tune::TuningResult<f64>,
) -> (
    tune::space::Config,
    tune::prelude::Space,
    tune::space::SpaceBuilder<'static>,
    tune::prelude::Error,
    tune::tuner::TuningResult<f64>,
) {
    (c, s, b, e, r)
}

/// What the prelude brings is enough to declare a space, make a function tunable and tune.
#[test]
fn the_prelude_is_enough_to_declare_and_tune() -> tune::Result<()> {
    use tune::prelude::*;

    #[derive(Clone, Copy, Debug, PartialEq, Enum)]
    enum Order {
        Rows,
        Columns,
    }

    #[tunable(technique = exhaustive)]
    fn sum(x: &[f64], #[tp([1, 2, 4, 8], divides(x.len()))] lanes: usize, #[tp] o: Order) -> f64 {
        let mut acc = vec![0.0; lanes];
        match o {
            Order::Rows => x.iter().enumerate().for_each(|(i, v)| acc[i % lanes] += v),
            Order::Columns => x.chunks(lanes).for_each(|c| {
                c.iter().zip(acc.iter_mut()).for_each(|(v, a)| *a += v);
            }),
        }
        acc.iter().sum()
    }

    let x = vec![1.0; 64];
    let space: Space = space! { LANES: usize in [1, 2, 4, 8], divides(x.len()); O: Order; }?;
    assert_eq!(space.len(), SumConfig::space(&x)?.len());

    let cost = Closure::new(|c: &Config| -> Result<f64, Failure> {
        let cfg = SumConfig::try_from(c).map_err(|e| Failure::Other(e.to_string()))?;
        Ok(cfg.call(&x) + cfg.lanes as f64)
    });
    let result: TuningResult<f64> = Tuner::new(space, cost)
        .technique(TechniqueKind::Exhaustive.build())
        .abort(Evaluations(8).or(Elapsed(std::time::Duration::from_secs(30))))
        .progress(false)
        .run()?;
    assert_eq!(result.evaluations, 8);
    assert_eq!(result.best.config.get::<usize>(0), 1);
    Ok(())
}
