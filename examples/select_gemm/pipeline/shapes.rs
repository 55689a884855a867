//! The GEMM shapes of the networks, and what the CPU run needs to time them.

use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tune::select::Input;
use tune::{Error, Result};

/// One GEMM shape of the networks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shape {
    /// Transposed A, transposed B (kept in the key; the kernels compute `A B`).
    pub ta: bool,
    /// See `ta`.
    pub tb: bool,
    /// Rows of C.
    pub m: usize,
    /// Columns of C.
    pub n: usize,
    /// The inner dimension.
    pub k: usize,
    /// Products in the batch.
    pub batch: usize,
    /// The networks it occurs in.
    pub networks: Vec<String>,
}

impl Shape {
    /// The features a selector reads.
    pub const FEATURES: [&'static str; 6] = ["m", "n", "k", "batch", "ta", "tb"];

    /// The input key.
    pub fn key(&self) -> String {
        format!(
            "m={},n={},k={},batch={},ta={},tb={}",
            self.m, self.n, self.k, self.batch, self.ta, self.tb
        )
    }

    /// The features, in [`Shape::FEATURES`]' order.
    pub fn features(&self) -> Vec<f64> {
        [
            self.m,
            self.n,
            self.k,
            self.batch,
            usize::from(self.ta),
            usize::from(self.tb),
        ]
        .map(|x| x as f64)
        .to_vec()
    }

    /// Floating-point operations of the batch.
    pub fn flops(&self) -> f64 {
        2.0 * (self.m * self.n * self.k * self.batch) as f64
    }

    /// Floats of the batch's A.
    pub fn a_len(&self) -> usize {
        self.batch * self.m * self.k
    }
    /// Floats of the batch's B.
    pub fn b_len(&self) -> usize {
        self.batch * self.k * self.n
    }
    /// Floats of the batch's C.
    pub fn c_len(&self) -> usize {
        self.batch * self.m * self.n
    }
}

/// A list of shapes.
#[derive(Clone, Debug, Default)]
pub struct Shapes(pub Vec<Shape>);

impl Shapes {
    /// bench/select/gemm_shapes.csv (`$TUNE_GEMM_SHAPES` names another).
    pub fn read() -> Result<Shapes> {
        let path = std::env::var("TUNE_GEMM_SHAPES")
            .unwrap_or_else(|_| "bench/select/gemm_shapes.csv".into());
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Io {
            path: path.clone(),
            source: e,
        })?;
        let mut out = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("ta,"))
        {
            let f: Vec<&str> = line.split(',').map(str::trim).collect();
            let num = |i: usize| f.get(i).and_then(|v| v.parse::<usize>().ok());
            let (Some(ta), Some(tb), Some(m), Some(n), Some(k), Some(batch)) =
                (num(0), num(1), num(2), num(3), num(4), num(5))
            else {
                return Err(Error::Format {
                    path,
                    reason: format!("`{line}` is not `ta,tb,m,n,k,batch,networks`"),
                });
            };
            out.push(Shape {
                ta: ta == 1,
                tb: tb == 1,
                m,
                n,
                k,
                batch,
                networks: f
                    .get(6)
                    .map_or(Vec::new(), |n| n.split('+').map(String::from).collect()),
            });
        }
        Ok(Shapes(out))
    }

    /// One shape per product the kernels compute (transposes dropped, networks merged).
    pub fn distinct_products(self) -> Shapes {
        let mut out: Vec<Shape> = Vec::new();
        for s in self.0 {
            match out
                .iter_mut()
                .find(|o| (o.m, o.n, o.k, o.batch) == (s.m, s.n, s.k, s.batch))
            {
                Some(o) => {
                    for n in s.networks {
                        if !o.networks.contains(&n) {
                            o.networks.push(n);
                        }
                    }
                }
                None => out.push(Shape {
                    ta: false,
                    tb: false,
                    ..s
                }),
            }
        }
        Shapes(out)
    }

    /// The shapes of at most `flops`.
    pub fn at_most(self, flops: f64) -> Shapes {
        Shapes(self.0.into_iter().filter(|s| s.flops() <= flops).collect())
    }

    /// The inputs of a matrix.
    pub fn inputs(&self) -> Vec<Input> {
        self.0
            .iter()
            .map(|s| Input {
                key: s.key(),
                features: s.features(),
                groups: s.networks.clone(),
            })
            .collect()
    }

    /// The inputs of a matrix whose features are `names` (of [`Shape::FEATURES`], in
    /// that order): a tunable's `input(..)` components, which its selector may read.
    pub fn inputs_of(&self, names: &[&str]) -> Result<Vec<Input>> {
        let at = names
            .iter()
            .map(|n| {
                Shape::FEATURES
                    .iter()
                    .position(|f| f == n)
                    .ok_or_else(|| Error::Select(format!("a shape has no feature `{n}`")))
            })
            .collect::<Result<Vec<usize>>>()?;
        Ok(self
            .inputs()
            .into_iter()
            .map(|mut i| {
                i.features = at
                    .iter()
                    .filter_map(|&f| i.features.get(f).copied())
                    .collect();
                i
            })
            .collect())
    }

    /// The largest A, B and C in floats.
    pub fn buffers(&self) -> (usize, usize, usize) {
        let max = |f: fn(&Shape) -> usize| self.0.iter().map(f).max().unwrap_or(1);
        (max(Shape::a_len), max(Shape::b_len), max(Shape::c_len))
    }
}

/// The CPU's model name and threads.
pub fn cpu_name() -> String {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    format!("{model} ({threads} threads)")
}

/// Seeded random floats in [-1, 1).
pub fn random(len: usize, seed: u64) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..len).map(|_| rng.random_range(-1.0..1.0)).collect()
}

/// Seconds of `f`: an untimed call, then the median of 3.
pub fn time_cpu(mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..3)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64().max(1e-9)
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[1]
}
