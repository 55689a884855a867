//! The composition machinery's own host time per run (issue 13: under 1% of hand-written
//! host code launching the same kernels). A backend whose launches return at once, so what
//! is measured is the machinery alone: KTT's reduction as a composition (scratch buffers
//! sized by the configuration, an output) called through `CompositionEvaluator::call`,
//! against the same work written by hand on the `Backend` trait, in its two shapes: passes
//! (two launches of three arguments) and atomics (the result zeroed by a write, then one
//! launch: the configuration tuned on the H100). The difference of the two is the machinery's cost per run; the GPU part
//! (`examples/ktt_bench.rs`, part 3) sets it against the kernels' time.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use tune::backend::composition::{Composition, CompositionEvaluator, KernelSource};
use tune::backend::{
    Backend, BufferArg, CompileRequest, DeviceInfo, LaunchArg, LaunchDims, Tolerance,
};
use tune::{Config, Evaluator, Failure, Param, Space, SpaceBuilder, Value};

/// Launches that return at once: only host work is left to measure.
struct Null(DeviceInfo);

impl Backend for Null {
    type Buffer = usize;
    type Kernel = ();

    fn device(&self) -> &DeviceInfo {
        &self.0
    }
    fn compile(&self, _: &CompileRequest<'_>) -> Result<(), Failure> {
        Ok(())
    }
    fn alloc(&self, bytes: usize) -> tune::Result<usize> {
        Ok(bytes)
    }
    fn write(&self, _: &mut usize, _: &[u8]) -> tune::Result<()> {
        Ok(())
    }
    fn read(&self, _: &usize, _: &mut [u8]) -> tune::Result<()> {
        Ok(())
    }
    fn launch(
        &self,
        _: &(),
        dims: &LaunchDims,
        args: &[LaunchArg<'_, Self>],
    ) -> Result<Duration, Failure> {
        // Reads what a real backend reads, so neither side's work is optimised away.
        std::hint::black_box((dims, args.len()));
        Ok(Duration::from_nanos(1))
    }
}

const N: usize = 1 << 26;

fn groups(len: usize, wg: usize, vw: usize) -> usize {
    len.div_ceil(wg * vw).clamp(1, 2048)
}

fn setup() -> (Arc<Null>, Space, CompositionEvaluator<Null>) {
    let null = Arc::new(Null(DeviceInfo {
        backend: "null".into(),
        max_work_group_size: 1024,
        max_work_item_sizes: [1024, 1024, 64],
        ..Default::default()
    }));
    let space = SpaceBuilder::new()
        .param(Param::<usize>::values("WG", [256, 512]))
        .param(Param::<usize>::values("VW", [4, 8]))
        .param(Param::bool("ATOMICS"))
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut c = Composition::<Null>::new();
    let reduce = c.kernel(KernelSource::new("", "reduce"));
    // The input is declared empty: the null backend holds no data, and an empty input is
    // never rewritten, as on a device between runs.
    let x = c.input(BufferArg::zeros::<f32>(0));
    let most = |cfg: &Config| groups(N, cfg.get::<usize>(0), cfg.get::<usize>(1));
    let parts = [c.scratch::<f32>(most), c.scratch::<f32>(most)];
    let sum = c.output(BufferArg::zeros::<f32>(1));
    c.host(move |run| {
        let (wg, vw) = (run.config().get::<usize>(0), run.config().get::<usize>(1));
        if run.config().get::<bool>(2) {
            run.write(sum, &[0.0f32])?;
            return run
                .launch(reduce)
                .global([groups(N, wg, vw) * wg])
                .local([wg])
                .arg(x)
                .arg(sum)
                .scalar(N as u32)
                .run()
                .map(|_| ());
        }
        let (mut len, mut from, mut pass) = (N, x, 0);
        loop {
            let g = groups(len, wg, vw);
            let to = if g == 1 { sum } else { parts[pass % 2] };
            run.launch(reduce)
                .global([g * wg])
                .local([wg])
                .arg(from)
                .arg(to)
                .scalar(len as u32)
                .run()?;
            if g == 1 {
                return Ok(());
            }
            (len, from, pass) = (g, to, pass + 1);
        }
    });
    c.tolerance(Tolerance::Exact);
    let ev = CompositionEvaluator::new(null.clone(), &space, c).unwrap_or_else(|e| panic!("{e}"));
    (null, space, ev)
}

/// The same work, written by hand.
fn hand(
    null: &Null,
    bufs: &mut [usize; 4],
    wg: usize,
    vw: usize,
    atomics: bool,
) -> Result<Duration, Failure> {
    if atomics {
        null.write(&mut bufs[3], &0f32.to_ne_bytes())
            .map_err(|e| Failure::Launch(e.to_string()))?;
        let l = (N as u32).to_ne_bytes();
        let dims = LaunchDims {
            dims: 1,
            global: [groups(N, wg, vw) * wg, 1, 1],
            local: Some([wg, 1, 1]),
            dynamic_local_bytes: 0,
        };
        let args = [
            LaunchArg::Buffer(&bufs[0]),
            LaunchArg::Buffer(&bufs[3]),
            LaunchArg::Scalar(&l),
        ];
        return null.launch(&(), &dims, &args);
    }
    let bufs = &*bufs;
    let (mut len, mut from, mut pass, mut time) = (N, &bufs[0], 0, Duration::ZERO);
    loop {
        let g = groups(len, wg, vw);
        let to = if g == 1 {
            &bufs[3]
        } else {
            &bufs[1 + pass % 2]
        };
        let l = (len as u32).to_ne_bytes();
        let dims = LaunchDims {
            dims: 1,
            global: [g * wg, 1, 1],
            local: Some([wg, 1, 1]),
            dynamic_local_bytes: 0,
        };
        let args = [
            LaunchArg::Buffer(from),
            LaunchArg::Buffer(to),
            LaunchArg::Scalar(&l),
        ];
        time += null.launch(&(), &dims, &args)?;
        if g == 1 {
            return Ok(time);
        }
        (len, from, pass) = (g, to, pass + 1);
    }
}

fn bench(c: &mut Criterion) {
    let (null, space, ev) = setup();
    let mut g = c.benchmark_group("composition_overhead");
    for (shape, atomics) in [("passes", false), ("atomics", true)] {
        let config = space
            .config_from_values([
                ("WG", Value::UInt(512)),
                ("VW", Value::UInt(8)),
                ("ATOMICS", Value::Bool(atomics)),
            ])
            .unwrap_or_else(|e| panic!("{e}"));
        let prepared = ev
            .prepare(&space, &config)
            .unwrap_or_else(|f| panic!("{f}"));
        g.bench_function(format!("{shape}/composition"), |b| {
            b.iter(|| {
                ev.call(&space, &config, &prepared, |_| Ok(()), |_| Ok(()))
                    .unwrap_or_else(|f| panic!("{f}"))
            })
        });
        let mut bufs = [0usize, 1, 2, 3];
        let (wg, vw) = (config.get::<usize>(0), config.get::<usize>(1));
        g.bench_function(format!("{shape}/hand_written"), |b| {
            b.iter(|| hand(&null, &mut bufs, wg, vw, atomics).unwrap_or_else(|f| panic!("{f}")))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
