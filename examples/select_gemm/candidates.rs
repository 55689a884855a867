//! The kernels the GPU run chooses among, compiled once each with the sizes as arguments:
//! XgemmDirect (examples/common/cases/xgemm_direct.rs; any shape, CUDA and OpenCL) and, on
//! CUDA, the tiled SGEMM of the gemm case (kernels/sgemm.cu with `SIZE_ARGS`), which
//! needs M, N and K to be multiples of its tiles. A library running the tiled kernel on any
//! shape pads: A and B are copied into zero-padded buffers where their sizes are not
//! multiples, C is computed in a padded buffer and copied out (kernels/select_pad.cu), and
//! every copy is timed with the product, so the tiled kernel wins a shape only with its
//! copies paid.

use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::time::Instant;

use crate::common::cases::gemm::{sgemm, sgemm_smem, Gemm, Layout};
use crate::common::cases::xgemm_direct::{XgemmDirect, MDIMCD, NDIMCD, WGD};
use crate::common::cases::{Language, Study, Target};
use crate::pipeline::{self, Shape};
use tune::backend::{Backend, CompileRequest, LaunchArg, LaunchDims};
use tune::results::Named;
use tune::{Config, Error, Failure, Result, Space, Value};

/// The largest tiles of the SGEMM space (BM and BN, BK): the padded buffers fit them.
const MAX_TILE: (usize, usize) = (256, 32);

/// Which kernel a candidate is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// XgemmDirect.
    Direct,
    /// The tiled SGEMM, padded.
    Tiled,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Direct => "xgemm_direct",
            Kind::Tiled => "sgemm",
        }
    }
}

/// A compiled configuration.
pub struct Compiled<K> {
    /// Which kernel.
    pub kind: Kind,
    /// Its configuration in that kernel's space.
    pub config: Config,
    kernel: K,
}

/// The compiled candidates, the spaces they come from and the copy kernels of the tiled one.
pub struct Pool<B: Backend> {
    /// Every candidate that compiled and computed a right product.
    pub kernels: Vec<Compiled<B::Kernel>>,
    direct: Space,
    tiled: Option<Space>,
    pads: Option<[B::Kernel; 2]>,
}

/// How the compiles went.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompileStats {
    /// Compiles started (failed ones included).
    pub count: usize,
    /// Threads that compiled.
    pub threads: usize,
    /// Seconds from the first start to the last end.
    pub wall: f64,
    /// The shortest and the median compile, from its start to its end (a compile that
    /// waits for another one's lock counts its wait).
    pub shortest: f64,
    /// See `shortest`.
    pub median: f64,
    /// The most compiles in flight at once.
    pub in_flight: usize,
}

impl std::fmt::Display for CompileStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rate = self.count as f64 / self.wall.max(1e-9);
        write!(
            f,
            "{} compiles on {} threads in {:.1} s ({:.2} per second; each {:.2} s shortest, {:.2} s median from start to end; up to {} in flight; the rate x the shortest: {:.1})",
            self.count,
            self.threads,
            self.wall,
            rate,
            self.shortest,
            self.median,
            self.in_flight,
            rate * self.shortest
        )
    }
}

/// Runs `build` on every job on `workers` threads, starting none that would end past
/// `by`: a thread starts a job while the jobs in flight and it, at the rate compiles have
/// ended so far, end by then (before the first ends, at most 4 in flight). A compiler
/// that compiles one at a time however many threads call it (a process-wide lock) then
/// gets about one job in flight, and one that runs them at once gets every thread.
fn compile_all<J: Send, K: Send>(
    jobs: Vec<J>,
    build: impl Fn(J) -> Option<K> + Sync,
    workers: usize,
    by: Instant,
) -> (Vec<Option<K>>, CompileStats) {
    struct State<J> {
        queue: std::collections::VecDeque<J>,
        in_flight: usize,
        most: usize,
        durations: Vec<f64>,
    }
    let started = Instant::now();
    let state = std::sync::Mutex::new(State {
        queue: jobs.into(),
        in_flight: 0,
        most: 0,
        durations: Vec::new(),
    });
    let out = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| loop {
                let job = {
                    let Ok(mut st) = state.lock() else { return };
                    let now = Instant::now();
                    if now > by || st.queue.is_empty() {
                        return;
                    }
                    let ended = st.durations.len();
                    let allowed = if ended == 0 {
                        st.in_flight < 4
                    } else {
                        let rate = ended as f64 / now.duration_since(started).as_secs_f64();
                        let left = by.saturating_duration_since(now).as_secs_f64();
                        (st.in_flight + 1) as f64 / rate <= left
                    };
                    if allowed {
                        st.in_flight += 1;
                        st.most = st.most.max(st.in_flight);
                        st.queue.pop_front()
                    } else {
                        None
                    }
                };
                let Some(job) = job else {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                    continue;
                };
                let t = Instant::now();
                let built = build(job);
                let took = t.elapsed().as_secs_f64();
                if let Ok(mut st) = state.lock() {
                    st.in_flight -= 1;
                    st.durations.push(took);
                }
                if let Ok(mut out) = out.lock() {
                    out.push(built);
                }
            });
        }
    });
    let wall = started.elapsed().as_secs_f64();
    let st = state.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut d = st.durations;
    d.sort_by(f64::total_cmp);
    let stats = CompileStats {
        count: d.len(),
        threads: workers.max(1),
        wall,
        shortest: d.first().copied().unwrap_or(0.0),
        median: d.get(d.len() / 2).copied().unwrap_or(0.0),
        in_flight: st.most,
    };
    (out.into_inner().unwrap_or_else(|e| e.into_inner()), stats)
}

/// The A, B and C of the largest shape, and the padded buffers of the tiled kernel.
pub struct Buffers<Buf> {
    a: Buf,
    b: Buf,
    c: Buf,
    padded: Option<[Buf; 3]>,
}

impl<B: Backend> Pool<B> {
    /// Compiles `direct` XgemmDirect configurations and (CUDA) `tiled` SGEMM ones, sampled
    /// from their spaces (the SGEMM's classic hand-written configuration first), in
    /// parallel, none started after `by`, and keeps those right on a 67 x 45 x 33 product.
    pub fn compile(
        backend: &B,
        target: &Target,
        (mm, nn, kk): (usize, usize, usize),
        (direct, tiled): (usize, usize),
        by: Instant,
    ) -> Result<Pool<B>> {
        // Only XgemmDirect's OpenCL shape bound (ranges up to max(M, N, K)) reads sizes.
        let xd = XgemmDirect(Gemm::new(mm.min(1024), nn.min(1024), kk.min(1024)));
        let direct_space = xd.space(target)?;
        let cuda = target.language == Language::Cuda;
        // OpenCL's space has ATF's ranges (work-groups of 1 to max(M, N, K) items): its
        // candidates here have at least a warp, 32 work-items, as the CUDA space's do.
        let warp = |c: &Config| cuda || c.get::<usize>(MDIMCD) * c.get::<usize>(NDIMCD) >= 32;
        let mut jobs: Vec<(Kind, Config)> = sample(&direct_space, Vec::new(), direct, 7, warp)
            .into_iter()
            .map(|c| (Kind::Direct, c))
            .collect();
        let (mut tiled_space, mut pads) = (None, None);
        if cuda && tiled > 0 {
            // Every tile of the space divides 4096.
            let g = Gemm::new(4096, 4096, 4096);
            let space = g.space(target)?;
            let first = g.known_good(target, &space);
            let mut configs = sample(&space, first, tiled, 11, |_| true);
            configs.extend(shaped(&space, &configs));
            jobs.extend(configs.into_iter().map(|c| (Kind::Tiled, c)));
            let src = include_str!("../../kernels/select_pad.cu");
            let compile = |kernel| {
                backend
                    .compile(&CompileRequest {
                        source: src,
                        kernel,
                        defines: &[],
                        options: &[],
                    })
                    .map_err(|f| Error::Select(format!("kernels/select_pad.cu: {f}")))
            };
            pads = Some([compile("pad")?, compile("unpad")?]);
            tiled_space = Some(space);
        }
        let sources = (
            xd.source(target)?,
            Gemm::new(1, 1, 1)
                .sources()
                .cuda
                .ok_or_else(|| Error::Select("no SGEMM source".into()))?,
        );
        let spaces = (&direct_space, tiled_space.as_ref());
        let build = |(kind, config): (Kind, Config)| -> Option<Compiled<B::Kernel>> {
            let (source, space, name) = match kind {
                Kind::Direct => (sources.0, spaces.0, "xgemm_direct"),
                Kind::Tiled => (sources.1, spaces.1?, "sgemm"),
            };
            let mut defines: Vec<(String, String)> = space
                .values(&config)
                .into_iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect();
            if kind == Kind::Tiled {
                defines.push(("SIZE_ARGS".into(), "1".into()));
            }
            let request = CompileRequest {
                source,
                kernel: name,
                defines: &defines,
                options: &[],
            };
            let kernel = backend.compile(&request).ok()?;
            Some(Compiled {
                kind,
                config,
                kernel,
            })
        };
        // Every core (`$TUNE_SELECT_COMPILE_THREADS` sets another number).
        let workers = std::env::var("TUNE_SELECT_COMPILE_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let (done, stats) = compile_all(jobs, build, workers, by);
        println!("{stats}");
        let kernels: Vec<Compiled<B::Kernel>> = done.into_iter().flatten().collect();
        let mut pool = Pool {
            kernels: Vec::new(),
            direct: direct_space,
            tiled: tiled_space,
            pads,
        };
        let check = Shape {
            m: 67,
            n: 45,
            k: 33,
            batch: 1,
            ..Shape::default()
        };
        let buffers = Buffers::new(backend, std::slice::from_ref(&check), pool.pads.is_some())?;
        pool.kernels = kernels
            .into_iter()
            .filter(|k| pool.right(backend, k, &check, &buffers))
            .collect();
        Ok(pool)
    }

    /// A candidate's name in the matrix: `KERNEL` and its parameters.
    pub fn named(&self, k: &Compiled<B::Kernel>) -> Named<Value> {
        let space = match (k.kind, &self.tiled) {
            (Kind::Tiled, Some(s)) => s,
            _ => &self.direct,
        };
        let mut v = vec![("KERNEL".to_string(), Value::Str(k.kind.name().into()))];
        v.extend(Named::of(space, &k.config).0);
        Named(v)
    }

    /// How many candidates of each kind.
    pub fn counts(&self) -> (usize, usize) {
        let tiled = self
            .kernels
            .iter()
            .filter(|k| k.kind == Kind::Tiled)
            .count();
        (self.kernels.len() - tiled, tiled)
    }

    /// Whether `k` computes `alpha A B + beta C` on `s` (per element, 1e-3); `buffers`
    /// are `s`'s own, filled as [`Buffers::new`] does.
    fn right(
        &self,
        backend: &B,
        k: &Compiled<B::Kernel>,
        s: &Shape,
        buffers: &Buffers<B::Buffer>,
    ) -> bool {
        let lang = match backend.device().backend.as_str() {
            "cuda" => Language::Cuda,
            _ => Language::OpenCl,
        };
        let (a, b, c) = (
            pipeline::random(s.m * s.k, 1),
            pipeline::random(s.k * s.n, 2),
            pipeline::random(s.m * s.n, 3),
        );
        let want = Gemm::new(s.m, s.n, s.k).host(Layout::of(lang), &a, &b, &c);
        let run = || -> Result<Vec<f32>> {
            // C is read (beta) and written: each check starts from the same C.
            let mut dc = backend.alloc(4 * c.len())?;
            backend.write(&mut dc, &bytes(&c))?;
            let buffers = Buffers {
                a: &buffers.a,
                b: &buffers.b,
                c: &dc,
                padded: buffers.padded.as_ref().map(|[x, y, z]| [x, y, z]),
            };
            self.call(backend, k, s, (1.5, -0.5), &buffers, 1)
                .map_err(Error::Failed)?;
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

    /// Device seconds of one call of `k` on `s` (the mean of `count` back to back): for
    /// the tiled kernel, its copies included.
    pub fn call<Buf: std::borrow::Borrow<B::Buffer>>(
        &self,
        backend: &B,
        k: &Compiled<B::Kernel>,
        s: &Shape,
        (alpha, beta): (f32, f32),
        buffers: &Buffers<Buf>,
        count: usize,
    ) -> std::result::Result<f64, Failure> {
        let timed = |kernel: &B::Kernel, dims: &LaunchDims, args: &[LaunchArg<'_, B>]| {
            let t = if count > 1 {
                backend.launch_repeated(kernel, dims, args, count)?
            } else {
                backend.launch(kernel, dims, args)?
            };
            Ok::<f64, Failure>(t.as_secs_f64() / count as f64)
        };
        let (a, b, c) = (buffers.a.borrow(), buffers.b.borrow(), buffers.c.borrow());
        let g = |slot| k.config.get::<usize>(slot);
        let ab = [alpha.to_ne_bytes(), beta.to_ne_bytes()];
        if k.kind == Kind::Direct {
            let (wgd, mc, nc) = (g(WGD), g(MDIMCD), g(NDIMCD));
            let dims = LaunchDims {
                dims: 2,
                global: [s.m.div_ceil(wgd) * mc, s.n.div_ceil(wgd) * nc, 1],
                local: Some([mc, nc, 1]),
                dynamic_local_bytes: 0,
            };
            let sizes = [s.m, s.n, s.k].map(int);
            let mut args: Vec<LaunchArg<'_, B>> =
                sizes.iter().map(|v| LaunchArg::Scalar(v)).collect();
            args.extend([
                LaunchArg::Scalar(&ab[0]),
                LaunchArg::Scalar(&ab[1]),
                LaunchArg::Buffer(a),
                LaunchArg::Buffer(b),
                LaunchArg::Buffer(c),
            ]);
            return timed(&k.kernel, &dims, &args);
        }
        let missing =
            || Failure::Launch("the tiled SGEMM needs its copy kernels and buffers".into());
        let [pad, unpad] = self.pads.as_ref().ok_or_else(missing)?;
        let [pa, pb, pc] = buffers.padded.as_ref().ok_or_else(missing)?;
        let (pa, pb, pc) = (pa.borrow(), pb.borrow(), pc.borrow());
        let (bm, bn, bk) = (g(sgemm::BM), g(sgemm::BN), g(sgemm::BK));
        let (mp, np, kp) = (
            s.m.next_multiple_of(bm),
            s.n.next_multiple_of(bn),
            s.k.next_multiple_of(bk),
        );
        let flat = |len: usize| LaunchDims {
            dims: 1,
            global: [len.next_multiple_of(256), 1, 1],
            local: Some([256, 1, 1]),
            dynamic_local_bytes: 0,
        };
        // dst (rows_p x cols_p) = src (rows x cols) padded with zeros.
        let copy_in = |dst: &B::Buffer, src: &B::Buffer, (r, c): (usize, usize), (rp, cp)| {
            let sizes = [r, c, rp, cp].map(int);
            let mut args = vec![LaunchArg::Buffer(dst), LaunchArg::Buffer(src)];
            args.extend(sizes.iter().map(|v| LaunchArg::Scalar(v)));
            timed(pad, &flat(rp * cp), &args)
        };
        let mut t = 0.0;
        let a = if (mp, kp) == (s.m, s.k) {
            a
        } else {
            t += copy_in(pa, a, (s.m, s.k), (mp, kp))?;
            pa
        };
        let b = if (kp, np) == (s.k, s.n) {
            b
        } else {
            t += copy_in(pb, b, (s.k, s.n), (kp, np))?;
            pb
        };
        let padded_c = (mp, np) != (s.m, s.n);
        let out = if padded_c {
            if beta != 0.0 {
                t += copy_in(pc, c, (s.m, s.n), (mp, np))?;
            }
            pc
        } else {
            c
        };
        let threads = (bm / g(sgemm::TM)) * (bn / g(sgemm::TN));
        let dims = LaunchDims {
            dims: 2,
            global: [np / bn * threads, mp / bm, 1],
            local: Some([threads, 1, 1]),
            dynamic_local_bytes: sgemm_smem(&k.config),
        };
        let sizes = [mp, np, kp].map(int);
        let mut args = vec![
            LaunchArg::Buffer(out),
            LaunchArg::Buffer(a),
            LaunchArg::Buffer(b),
            LaunchArg::Scalar(&ab[0]),
            LaunchArg::Scalar(&ab[1]),
        ];
        args.extend(sizes.iter().map(|v| LaunchArg::Scalar(v)));
        t += timed(&k.kernel, &dims, &args)?;
        if padded_c {
            let sizes = [s.m, s.n, np].map(int);
            let mut args = vec![LaunchArg::Buffer(c), LaunchArg::Buffer(pc)];
            args.extend(sizes.iter().map(|v| LaunchArg::Scalar(v)));
            t += timed(unpad, &flat(s.m * s.n), &args)?;
        }
        Ok(t)
    }
}

impl<Buf> Buffers<Buf> {
    /// A, B and C for the largest of `shapes` (one product of a batch), seeded random as
    /// [`pipeline::random`] with seeds 1, 2, 3; with `padded`, the tiled kernel's padded
    /// buffers too.
    pub fn new<B: Backend<Buffer = Buf>>(
        backend: &B,
        shapes: &[Shape],
        padded: bool,
    ) -> Result<Self> {
        let max = |f: &dyn Fn(&Shape) -> usize| shapes.iter().map(f).max().unwrap_or(1);
        let lens = [
            max(&|s| s.m * s.k),
            max(&|s| s.k * s.n),
            max(&|s| s.m * s.n),
        ];
        let mut filled = Vec::new();
        for (i, len) in lens.into_iter().enumerate() {
            let mut buf = backend.alloc(4 * len)?;
            backend.write(&mut buf, &bytes(&pipeline::random(len, i as u64 + 1)))?;
            filled.push(buf);
        }
        let [a, b, c]: [Buf; 3] = filled
            .try_into()
            .map_err(|_| Error::Select("buffers".into()))?;
        let padded = if padded {
            let (t, tk) = MAX_TILE;
            let up = |x: usize, to| x.next_multiple_of(to);
            Some([
                backend.alloc(4 * max(&|s| up(s.m, t) * up(s.k, tk)))?,
                backend.alloc(4 * max(&|s| up(s.k, tk) * up(s.n, t)))?,
                backend.alloc(4 * max(&|s| up(s.m, t) * up(s.n, t)))?,
            ])
        } else {
            None
        };
        Ok(Buffers { a, b, c, padded })
    }
}

/// Tiles for the shapes round 10 traced its losses to (select11; bench/select/RESULTS.md,
/// select10's item 1), beside the random sample `have` (whose configurations they are
/// not): [`SHAPED`] with 32 rows (MobileNet's `m = 32` GEMMs: 24 random tiles hold one or
/// two, and a set chosen from the pool missed them) and [`SHAPED`] with `BK = 32` and at
/// most 64 x 64 outputs (long-K GEMMs with small outputs: many blocks, few K steps). Drawn
/// from the space (seeded), so every one is a valid configuration; which of them a set
/// takes is the set choice's, as for any candidate.
fn shaped(space: &Space, have: &[Config]) -> Vec<Config> {
    let (bm, bn, bk) = (
        |c: &Config| c.get::<usize>(sgemm::BM),
        |c: &Config| c.get::<usize>(sgemm::BN),
        |c: &Config| c.get::<usize>(sgemm::BK),
    );
    let new = |c: &Config| !have.contains(c);
    let mut out = sample(space, Vec::new(), SHAPED, 13, |c| bm(c) == 32 && new(c));
    let long_k = sample(space, Vec::new(), SHAPED, 17, |c| {
        bk(c) == 32 && bm(c) * bn(c) <= 64 * 64 && new(c)
    });
    out.extend(
        long_k
            .into_iter()
            .filter(|c| !out.contains(c))
            .collect::<Vec<_>>(),
    );
    out
}

/// How many tiled SGEMM configurations of each traced kind [`shaped`] adds.
pub const SHAPED: usize = 4;

/// `count` distinct configurations: `first`, then samples of `space` that `keep` accepts
/// (seeded).
fn sample(
    space: &Space,
    first: Vec<Config>,
    count: usize,
    seed: u64,
    keep: impl Fn(&Config) -> bool,
) -> Vec<Config> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut configs: Vec<Config> = first.into_iter().take(count).collect();
    for _ in 0..count * 64 {
        if configs.len() >= count {
            break;
        }
        if let Some(c) = space.sample(&mut rng) {
            if keep(&c) && !configs.contains(&c) {
                configs.push(c);
            }
        }
    }
    configs
}

fn int(v: usize) -> [u8; 4] {
    i32::try_from(v).unwrap_or(i32::MAX).to_ne_bytes()
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shaped_tiles_are_new_and_of_the_traced_kinds() {
        let target = Target::without_device(Language::Cuda);
        let g = Gemm::new(4096, 4096, 4096);
        let space = g.space(&target).unwrap();
        let have = sample(&space, g.known_good(&target, &space), 24, 11, |_| true);
        let extra = shaped(&space, &have);
        let (bm, bn, bk) = (
            |c: &Config| c.get::<usize>(sgemm::BM),
            |c: &Config| c.get::<usize>(sgemm::BN),
            |c: &Config| c.get::<usize>(sgemm::BK),
        );
        assert!(extra.len() > SHAPED, "{}", extra.len());
        assert!(extra.iter().filter(|c| bm(c) == 32).count() >= SHAPED);
        for c in &extra {
            assert!(!have.contains(c));
            assert!(bm(c) == 32 || (bk(c) == 32 && bm(c) * bn(c) <= 4096));
            assert!(space.contains(c), "{c:?}");
        }
        // The random part is the same 24 as before (the pool a superset of round 10's).
        assert_eq!(have.len(), 24);
    }
}
