//! The composition machinery's own host time per run (issue 13: under 1% of hand-written
//! host code launching the same kernels). A backend whose launches return at once, so what
//! is measured is the machinery alone: KTT's reduction as a composition (two passes, three
//! arguments each, scratch buffers sized by the configuration, an output) called through
//! `CompositionEvaluator::call`, against the same two launches written by hand on the
//! `Backend` trait. The difference of the two is the machinery's cost per run; the GPU part
//! (`examples/ktt_bench.rs`, part 3) sets it against the kernels' time.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use tune::backend::composition::{Composition, CompositionEvaluator, KernelSource};
use tune::backend::{
    Backend, BufferArg, CompileRequest, DeviceInfo, LaunchArg, LaunchDims, Tolerance,
};
use tune::{Config, Evaluator, Failure, Param, Space, SpaceBuilder};

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

fn setup() -> (Arc<Null>, Space, Config, CompositionEvaluator<Null>) {
    let null = Arc::new(Null(DeviceInfo {
        backend: "null".into(),
        max_work_group_size: 1024,
        max_work_item_sizes: [1024, 1024, 64],
        ..Default::default()
    }));
    let space = SpaceBuilder::new()
        .param(Param::<usize>::values("WG", [256, 512]))
        .param(Param::<usize>::values("VW", [4, 8]))
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
    let config = space
        .get(3)
        .unwrap_or_else(|| panic!("the space has 4 configurations"));
    let ev = CompositionEvaluator::new(null.clone(), &space, c).unwrap_or_else(|e| panic!("{e}"));
    (null, space, config, ev)
}

/// The same two launches, written by hand.
fn hand(null: &Null, bufs: &[usize; 4], wg: usize, vw: usize) -> Result<Duration, Failure> {
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
    let (null, space, config, ev) = setup();
    let prepared = ev
        .prepare(&space, &config)
        .unwrap_or_else(|f| panic!("{f}"));
    let mut g = c.benchmark_group("composition_overhead");
    g.bench_function("composition_call", |b| {
        b.iter(|| {
            ev.call(&space, &config, &prepared, |_| Ok(()), |_| Ok(()))
                .unwrap_or_else(|f| panic!("{f}"))
        })
    });
    let bufs = [0usize, 1, 2, 3];
    let (wg, vw) = (config.get::<usize>(0), config.get::<usize>(1));
    g.bench_function("hand_written", |b| {
        b.iter(|| hand(&null, &bufs, wg, vw).unwrap_or_else(|f| panic!("{f}")))
    });
    g.finish();
}

criterion_group!(benches, bench);
