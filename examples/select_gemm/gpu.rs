//! The GPU run: XgemmDirect (examples/common/cases/xgemm_direct.rs) on every shape, with
//! CUDA or OpenCL. A pool of configurations sampled from the case's space is compiled once
//! each (in parallel) and checked once on an odd shape; the sizes are kernel arguments, so
//! every shape launches the same binaries. Each shape's search is a random sample of the
//! pool; the cross-evaluation and the tables are the CPU run's. On CUDA every shape is
//! also timed with cuBLAS SGEMM (TF32 off), the same way.
//!
//! `select_gemm gpu --backend cuda|opencl [POOL] [EVALS]` (defaults 192 and 24).
//!
//! The run keeps to `$TUNE_SELECT_SECONDS` (default 420; the GPU machine allows 10 minutes
//! a call): past a third of it no more configurations are compiled, past 40% of it the searches take 8 configurations a shape, past 75% the
//! cross-evaluation measures nothing more, past 95% neither does the verification (the
//! cells stay empty, and the report counts them), so that a slow device still writes its
//! matrix.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rayon::prelude::*;

use crate::common::cases::gemm::{Gemm, Layout};
use crate::common::cases::xgemm_direct::{
    back_to_back, XgemmDirect, MDIMCD, NDIMCD, PADA, PADB, WGD,
};
use crate::common::cases::{Language, Study, Target};
use crate::common::cli::number;
use crate::pipeline::{self, RunFile, Shape, Shapes};
use tune::backend::{Backend, CompileRequest, LaunchArg, LaunchDims};
use tune::results::Named;
use tune::select::{tune_inputs, Matrix, Plan};
use tune::{Config, Error, Result, Space};

pub fn main(_args: &[String]) -> ExitCode {
    crate::common::cli::main("select_gemm gpu", |device, args| {
        let args: Vec<String> = args.into_iter().filter(|a| a != "gpu").collect();
        let pool = number(&args, 0).unwrap_or(192);
        let evals = number(&args, 1).unwrap_or(24);
        match device {
            #[cfg(feature = "opencl")]
            crate::common::cli::Device::OpenCl(cl) => run(cl, pool, evals, |_| Ok(None)),
            #[cfg(feature = "cuda")]
            crate::common::cli::Device::Cuda(cuda) => {
                let c = cuda.clone();
                run(cuda, pool, evals, move |shapes| {
                    cublas(&c, shapes).map(Some)
                })
            }
        }
    })
}

/// A compiled configuration.
struct Compiled<K> {
    config: Config,
    kernel: K,
}

/// Seconds per call of cuBLAS SGEMM for every shape key (one product times the batch).
#[cfg(feature = "cuda")]
fn cublas(cuda: &tune::cuda::Cuda, shapes: &Shapes) -> Result<(String, Vec<(String, f64)>)> {
    let mut out = Vec::new();
    let mut done: Vec<((usize, usize, usize), f64)> = Vec::new();
    for s in &shapes.0 {
        let key = (s.m, s.n, s.k);
        let t = match done.iter().find(|(k, _)| *k == key) {
            Some(&(_, t)) => t,
            None => {
                let g = Gemm::new(s.m, s.n, s.k);
                let (t, _) =
                    crate::common::cuda::cublas_sgemm(cuda, &g, back_to_back(s.m, s.n, s.k), 5)?;
                done.push((key, t));
                t
            }
        };
        out.push((s.key(), t * s.batch as f64));
    }
    Ok(("cuBLAS SGEMM (TF32 off)".into(), out))
}

fn run<B: Backend>(
    backend: Arc<B>,
    pool: usize,
    evals: usize,
    vendor: impl FnOnce(&Shapes) -> Result<Option<(String, Vec<(String, f64)>)>>,
) -> Result<()> {
    let started = Instant::now();
    let target = Target::of(&*backend)?;
    let language = target.language;
    let shapes = Shapes::read()?;
    // Only the space's shape bound (OpenCL: ranges up to max(M, N, K)) depends on sizes.
    let (mm, nn, kk) = shapes.0.iter().fold((1, 1, 1), |(a, b, c), s| {
        (a.max(s.m), b.max(s.n), c.max(s.k))
    });
    let study = XgemmDirect(Gemm::new(mm.min(1024), nn.min(1024), kk.min(1024)));
    let space = study.space(&target)?;
    let source = study.source(&target)?;
    // Past a third of the budget no more configurations are compiled (NVIDIA's OpenCL
    // compiler took 486 s for 192 on an H100, leaving no time to measure).
    let compile_by = started + Duration::from_secs_f64(budget() / 3.0);
    let compiled = compile_pool(&*backend, &space, source, pool, compile_by)?;
    println!(
        "{}: {} of {pool} sampled configurations compiled and right, in {:.0?}",
        target.device.name,
        compiled.len(),
        started.elapsed()
    );
    let bench = Bench::new(backend.clone(), language, &shapes)?;
    let device = format!("{} ({language})", target.device.name);
    let m = Matrix::new(
        "xgemm_direct",
        device,
        Shape::FEATURES.map(String::from).to_vec(),
    );
    let named = |c: &Config| Named::of(&space, c);
    let index = |cfg: &Named<tune::Value>| compiled.iter().position(|k| named(&k.config) == *cfg);
    let find = |key: &str| {
        shapes
            .0
            .iter()
            .find(|s| s.key() == key)
            .cloned()
            .unwrap_or_default()
    };
    let budget = budget();
    let before = |share: f64| started.elapsed() < Duration::from_secs_f64(budget * share);
    let mut rng = SmallRng::seed_from_u64(1);
    let mut order: Vec<usize> = (0..compiled.len()).collect();
    let mut searched = 0usize;
    let (mut m, stats) = tune_inputs(
        m,
        shapes.inputs(),
        Plan::default(),
        |input| {
            // A random search over the compiled pool.
            order.shuffle(&mut rng);
            let s = find(&input.key);
            searched += 1;
            if searched % 50 == 0 {
                eprintln!("searched {searched} shapes, {:.0?}", started.elapsed());
            }
            let evals = if before(0.4) { evals } else { evals.min(8) };
            Ok(order
                .iter()
                .take(evals)
                .filter_map(|&c| Some((named(&compiled[c].config), bench.time(&compiled[c], &s)?)))
                .collect())
        },
        |input, cfg| {
            before(0.75).then_some(())?;
            bench.time(&compiled[index(cfg)?], &find(&input.key))
        },
    )?;
    println!(
        "searched {} cells, cross-evaluated {} + {} of a {}-cell grid ({:.1}%), {:.0?} in all",
        stats.searched,
        stats.anchored,
        stats.promising,
        stats.grid,
        100.0 * stats.fraction(),
        started.elapsed()
    );
    let verified = pipeline::verify(&mut m, |input, cfg| {
        before(0.95).then_some(())?;
        bench.time(&compiled[index(cfg)?], &find(&input.key))
    })?;
    eprintln!("verified {verified} cells, {:.0?}", started.elapsed());
    let vendor = vendor(&shapes)?;
    let report = pipeline::analyse(
        &m,
        &stats,
        verified,
        vendor.as_ref().map(|(n, v)| (n.as_str(), v.as_slice())),
    )?;
    let out = crate::out_dir(language.name());
    let run = RunFile {
        matrix: m,
        stats,
        verified,
        vendor,
    };
    pipeline::write_run(&out, &run, &report)?;
    println!(
        "{report}\n{:.0?} in all; wrote {}",
        started.elapsed(),
        out.display()
    );
    Ok(())
}

/// `$TUNE_SELECT_SECONDS`, default 420.
fn budget() -> f64 {
    std::env::var("TUNE_SELECT_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .unwrap_or(420.0)
}

/// Compiles `pool` configurations sampled from `space` (in parallel; none started after
/// `by`) and keeps those that compute a right product on an odd shape.
fn compile_pool<B: Backend>(
    backend: &B,
    space: &Space,
    source: &str,
    pool: usize,
    by: Instant,
) -> Result<Vec<Compiled<B::Kernel>>> {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut configs: Vec<Config> = Vec::new();
    for _ in 0..pool * 4 {
        if configs.len() == pool {
            break;
        }
        if let Some(c) = space.sample(&mut rng) {
            if !configs.contains(&c) {
                configs.push(c);
            }
        }
    }
    let kernels: Vec<Compiled<B::Kernel>> = configs
        .into_par_iter()
        .filter_map(|config| {
            if Instant::now() > by {
                return None;
            }
            let defines: Vec<(String, String)> = space
                .values(&config)
                .into_iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            let request = CompileRequest {
                source,
                kernel: "xgemm_direct",
                defines: &defines,
                options: &[],
            };
            backend
                .compile(&request)
                .ok()
                .map(|kernel| Compiled { config, kernel })
        })
        .collect();
    let check = Shape {
        m: 67,
        n: 45,
        k: 33,
        batch: 1,
        ..Shape::default()
    };
    Ok(kernels
        .into_iter()
        .filter(|k| right(backend, k, &check))
        .collect())
}

/// Whether a configuration computes `alpha A B + beta C` on `s` (per element, 1e-3).
fn right<B: Backend>(backend: &B, k: &Compiled<B::Kernel>, s: &Shape) -> bool {
    let g = Gemm::new(s.m, s.n, s.k);
    let lang = match backend.device().backend.as_str() {
        "cuda" => Language::Cuda,
        _ => Language::OpenCl,
    };
    let (a, b, c) = (
        pipeline::random(s.m * s.k, 1),
        pipeline::random(s.k * s.n, 2),
        pipeline::random(s.m * s.n, 3),
    );
    let want = g.host(Layout::of(lang), &a, &b, &c);
    let run = || -> Result<Vec<f32>> {
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_ne_bytes()).collect::<Vec<u8>>();
        let mut da = backend.alloc(4 * a.len())?;
        let mut db = backend.alloc(4 * b.len())?;
        let mut dc = backend.alloc(4 * c.len())?;
        backend.write(&mut da, &bytes(&a))?;
        backend.write(&mut db, &bytes(&b))?;
        backend.write(&mut dc, &bytes(&c))?;
        let scalars = scalars(s, 1.5, -0.5);
        launch_args(backend, k, s, &scalars, [&da, &db, &dc], 1).map_err(Error::Failed)?;
        let mut out = vec![0u8; 4 * c.len()];
        backend.read(&dc, &mut out)?;
        Ok(out
            .chunks_exact(4)
            .map(|w| f32::from_ne_bytes([w[0], w[1], w[2], w[3]]))
            .collect())
    };
    run().is_ok_and(|got| {
        got.iter()
            .zip(&want)
            .all(|(x, y)| (x - y).abs() <= 1e-3 * (1.0 + y.abs()))
    })
}

fn scalars(s: &Shape, alpha: f32, beta: f32) -> [Vec<u8>; 5] {
    [
        (s.m as i32).to_ne_bytes().to_vec(),
        (s.n as i32).to_ne_bytes().to_vec(),
        (s.k as i32).to_ne_bytes().to_vec(),
        alpha.to_ne_bytes().to_vec(),
        beta.to_ne_bytes().to_vec(),
    ]
}

/// Launches a configuration `count` times back to back on shape `s`; device seconds.
fn launch_args<B: Backend>(
    backend: &B,
    k: &Compiled<B::Kernel>,
    s: &Shape,
    scalars: &[Vec<u8>; 5],
    [a, b, c]: [&B::Buffer; 3],
    count: usize,
) -> std::result::Result<f64, tune::Failure> {
    let g = |slot| k.config.get::<usize>(slot);
    let (wgd, mc, nc) = (g(WGD), g(MDIMCD), g(NDIMCD));
    let dims = LaunchDims {
        dims: 2,
        global: [s.m.div_ceil(wgd) * mc, s.n.div_ceil(wgd) * nc, 1],
        local: Some([mc, nc, 1]),
        dynamic_local_bytes: 0,
    };
    let _ = (PADA, PADB);
    let mut args: Vec<LaunchArg<'_, B>> = scalars.iter().map(|v| LaunchArg::Scalar(v)).collect();
    args.extend([
        LaunchArg::Buffer(a),
        LaunchArg::Buffer(b),
        LaunchArg::Buffer(c),
    ]);
    let t = if count > 1 {
        backend.launch_repeated(&k.kernel, &dims, &args, count)?
    } else {
        backend.launch(&k.kernel, &dims, &args)?
    };
    Ok(t.as_secs_f64() / count as f64)
}

/// Device buffers for the largest shape and the timing of one configuration on a shape.
struct Bench<B: Backend> {
    backend: Arc<B>,
    buffers: [B::Buffer; 3],
    /// The best time per shape so far: a configuration far slower is not timed in full.
    best: std::cell::RefCell<std::collections::HashMap<String, f64>>,
}

impl<B: Backend> Bench<B> {
    fn new(backend: Arc<B>, _language: Language, shapes: &Shapes) -> Result<Self> {
        // One product of the batch at a time: the batch is timed as `batch` products.
        let max = |f: fn(&Shape) -> usize| shapes.0.iter().map(f).max().unwrap_or(1);
        let lens = [max(|s| s.m * s.k), max(|s| s.k * s.n), max(|s| s.m * s.n)];
        let mut buffers = Vec::new();
        for (i, len) in lens.into_iter().enumerate() {
            let mut buf = backend.alloc(4 * len)?;
            let data: Vec<u8> = pipeline::random(len, i as u64 + 1)
                .iter()
                .flat_map(|x| x.to_ne_bytes())
                .collect();
            backend.write(&mut buf, &data)?;
            buffers.push(buf);
        }
        let [a, b, c]: [B::Buffer; 3] = buffers
            .try_into()
            .map_err(|_| Error::Select("buffers".into()))?;
        Ok(Bench {
            backend,
            buffers: [a, b, c],
            best: Default::default(),
        })
    }

    /// Seconds of the batch: an untimed sample, then the median of 5, each of as many
    /// back-to-back launches as the case uses, times the batch. A configuration whose first
    /// timed sample is over 4 times the shape's best so far keeps that sample (it is out of
    /// the running; its cost is still what was measured). `None` if it fails.
    fn time(&self, k: &Compiled<B::Kernel>, s: &Shape) -> Option<f64> {
        let sc = scalars(s, 1.0, 0.0);
        let [a, b, c] = &self.buffers;
        let count = back_to_back(s.m, s.n, s.k);
        let key = s.key();
        let best = self.best.borrow().get(&key).copied();
        launch_args(&*self.backend, k, s, &sc, [a, b, c], count).ok()?;
        let mut t = Vec::new();
        for _ in 0..5 {
            t.push(launch_args(&*self.backend, k, s, &sc, [a, b, c], count).ok()?);
            if t.len() == 1 && best.is_some_and(|b| t[0] > 4.0 * b) {
                return Some(t[0] * s.batch as f64);
            }
        }
        t.sort_by(f64::total_cmp);
        let median = t[2];
        if best.is_none_or(|b| median < b) {
            self.best.borrow_mut().insert(key, median);
        }
        Some(median * s.batch as f64)
    }
}
