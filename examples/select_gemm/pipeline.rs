//! What the CPU and GPU runs share: the shapes, the verification of deployed cells, the
//! tables and the deployed selector.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use tune::results::Named;
use tune::select::features::Derived;
use tune::select::matrix::{best_in, score};
use tune::select::{
    evaluate, group_splits, needed, random_split, Choice, Classifier, Input, Matrix, Nested,
    Normalisation, Recipe, Selector, SetMethod, Split, Stats, TreeLimits,
};
use tune::{Error, Result, Value};

/// The set sizes of the tables.
pub const KS: [usize; 4] = [4, 6, 8, 15];

/// How many configurations ship (the budget: at most 8). Which set method and
/// which tree ship is chosen by cross-validation inside the training shapes
/// ([`Nested`]), never on the shapes a table reports.
pub const DEPLOY_K: usize = 8;

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

/// The splits of the tables: random 70/30 and one per network.
pub fn splits(m: &Matrix) -> Vec<Split> {
    let mut s = vec![random_split(m, 0.7, 1)];
    s.extend(group_splits(m));
    s
}

fn methods() -> Vec<SetMethod> {
    let mut v = SetMethod::MAIN.to_vec();
    for n in [
        Normalisation::RawCutoff,
        Normalisation::StandardCutoff,
        Normalisation::Sigmoid,
    ] {
        v.push(SetMethod::KMeans(n));
        v.push(SetMethod::PcaKMeans(n));
    }
    v
}

/// The set sizes in the order their scoring cells are measured: should the measuring
/// stop early, the shipped size and the other target come first.
const KS_FIRST: [usize; 4] = [DEPLOY_K, 4, 6, 15];

/// Measures the cells that the tables and the vendor comparison read and `m` lacks, into
/// a copy of `m`, the truth the tables score on (`m` stays what the selectors learn
/// from: see [`needed`]): each test input's baselines and every configuration of every
/// set of every split on its test inputs ([`needed`]), and every configuration of every
/// method's [`DEPLOY_K`]-set chosen from all inputs on every input (whichever recipe ships,
/// its choice is measured everywhere). `measure` returns `None` when a cell fails or the
/// time is up (the cell stays empty; the tables count it). Returns the truth, the cells
/// measured and the cells planned.
pub fn verify(
    m: &Matrix,
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
) -> Result<(Matrix, usize, usize)> {
    let mut cells = needed(m, &splits(m), &methods(), &KS_FIRST[..1])?;
    let mut seen: HashSet<(usize, usize)> = cells.iter().copied().collect();
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    for method in methods() {
        for c in tune::select::set::choose(m, &all, DEPLOY_K, method)? {
            for i in 0..m.inputs().len() {
                if m.get(i, c).is_none() && seen.insert((i, c)) {
                    cells.push((i, c));
                }
            }
        }
    }
    for c in needed(m, &splits(m), &methods(), &KS_FIRST[1..])? {
        if seen.insert(c) {
            cells.push(c);
        }
    }
    let mut truth = m.clone();
    let mut done = 0;
    for &(i, c) in &cells {
        if let Some(v) = measure(&m.inputs()[i], &m.configs()[c]) {
            truth.set(i, c, v)?;
            done += 1;
        }
    }
    Ok((truth, done, cells.len()))
}

/// The label step of a tuning run, for every split: after the cross-evaluation, every
/// configuration of the sets any method chooses on the training shapes, measured on every
/// training shape (the cells [`with_labels`] reads), then the scoring cells of the sets
/// chosen from the matrix with those labels ([`needed`]), into `truth`, while `go_on()`.
/// Returns the label cells measured and the scoring cells measured.
pub fn label_step(
    m: &Matrix,
    truth: &mut Matrix,
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
    mut go_on: impl FnMut() -> bool,
) -> Result<(usize, usize)> {
    let (mut labels, mut scoring) = (0, 0);
    for split in splits(m) {
        let mut union: Vec<usize> = Vec::new();
        for method in methods() {
            for k in KS {
                union.extend(tune::select::set::choose(m, &split.train, k, method)?);
            }
        }
        union.sort_unstable();
        union.dedup();
        let label_cells = split
            .train
            .iter()
            .flat_map(|&i| union.iter().map(move |&c| (i, c)));
        if !fill_cells(m, truth, label_cells, &mut measure, &mut go_on, &mut labels)? {
            return Ok((labels, scoring));
        }
        let (lab, _, _) = with_labels(m, truth, &split)?;
        let scoring_cells = needed(&lab, std::slice::from_ref(&split), &methods(), &KS_FIRST)?;
        if !fill_cells(
            m,
            truth,
            scoring_cells,
            &mut measure,
            &mut go_on,
            &mut scoring,
        )? {
            return Ok((labels, scoring));
        }
    }
    Ok((labels, scoring))
}

/// Measures the `cells` that `truth` lacks into it while `go_on()`, counting them in
/// `count`; false when `go_on()` stopped it.
fn fill_cells(
    m: &Matrix,
    truth: &mut Matrix,
    cells: impl IntoIterator<Item = (usize, usize)>,
    measure: &mut impl FnMut(&Input, &Named<Value>) -> Option<f64>,
    go_on: &mut impl FnMut() -> bool,
    count: &mut usize,
) -> Result<bool> {
    for (i, c) in cells {
        if truth.get(i, c).is_some() {
            continue;
        }
        if !go_on() {
            return Ok(false);
        }
        if let Some(v) = measure(&m.inputs()[i], &m.configs()[c]) {
            truth.set(i, c, v)?;
            *count += 1;
        }
    }
    Ok(true)
}

/// Measures what `truth` lacks of the whole grid (every configuration of the matrix on
/// every shape), shape by shape in a seeded order, while `go_on()`: the per-shape optimum
/// the tables divide by is then the best of every candidate (not only of those measured),
/// and any measurement plan can be replayed from it. Never read by a set or a tree.
/// Returns the cells measured.
pub fn fill(
    truth: &mut Matrix,
    mut measure: impl FnMut(&Input, &Named<Value>) -> Option<f64>,
    mut go_on: impl FnMut() -> bool,
) -> Result<usize> {
    let mut order: Vec<usize> = (0..truth.inputs().len()).collect();
    order.shuffle(&mut SmallRng::seed_from_u64(4));
    let mut done = 0;
    for i in order {
        for c in 0..truth.configs().len() {
            if truth.get(i, c).is_some() {
                continue;
            }
            if !go_on() {
                return Ok(done);
            }
            let (input, config) = (truth.inputs()[i].clone(), truth.configs()[c].clone());
            if let Some(v) = measure(&input, &config) {
                truth.set(i, c, v)?;
                done += 1;
            }
        }
    }
    Ok(done)
}

/// The matrix of `split` with label cells: every configuration that some method's set
/// (any k of the tables) chosen from `m`'s training shapes holds, on every training shape,
/// as a tuning run would measure them after its cross-evaluation so that each training
/// shape's label (its best of a set) is known rather than the best of the few measured
/// there. Cells `truth` lacks stay empty. Returns the matrix, the label cells it gained
/// and those wanted.
pub fn with_labels(m: &Matrix, truth: &Matrix, split: &Split) -> Result<(Matrix, usize, usize)> {
    let mut union: Vec<usize> = Vec::new();
    for method in methods() {
        for k in KS {
            union.extend(tune::select::set::choose(m, &split.train, k, method)?);
        }
    }
    union.sort_unstable();
    union.dedup();
    let mut out = m.clone();
    let (mut gained, mut wanted) = (0, 0);
    for &i in &split.train {
        for &c in &union {
            if m.get(i, c).is_some() {
                continue;
            }
            wanted += 1;
            if let Some(v) = truth.get(i, c) {
                out.set(i, c, v)?;
                gained += 1;
            }
        }
    }
    Ok((out, gained, wanted))
}

/// Features a tree may read besides the sizes, fixed before the fourth GPU run (issue
/// 14's select4) from what limits a GEMM kernel, not from any table: `mn`, the output's
/// size (the blocks of a kernel that does not split K); `mnk`, the work; `m_per_n`, the
/// output's aspect; `k2_per_mn`, K against the output's side (`k / sqrt(m n)`, squared:
/// a tree splits the same way); `intensity`, `m n k / (m k + k n + m n)`, the flops per
/// element moved. Indices into [`Shape::FEATURES`].
pub fn derived() -> Vec<Derived> {
    let (m, n, k) = (0, 1, 2);
    let product = |name: &str, terms: &[(usize, i32)]| Derived::Product {
        name: name.into(),
        terms: terms.to_vec(),
    };
    vec![
        product("mn", &[(m, 1), (n, 1)]),
        product("mnk", &[(m, 1), (n, 1), (k, 1)]),
        product("m_per_n", &[(m, 1), (n, -1)]),
        product("k2_per_mn", &[(k, 2), (m, -1), (n, -1)]),
        Derived::Harmonic {
            name: "intensity".into(),
            of: vec![m, n, k],
        },
    ]
}

/// How the shipped recipe is chosen (fixed before the fourth GPU run): every set method
/// and tree, on the sizes alone or with [`derived`] features, by cross-validation inside
/// the training shapes whose folds leave out a network when the split does
/// (`by_group`), random folds otherwise.
pub fn scheme(by_group: bool) -> Nested {
    Nested {
        recipes: Recipe::and_derived(&Recipe::all()),
        by_group,
        derived: derived(),
        ..Nested::default()
    }
}

/// The selector that ships: [`DEPLOY_K`] configurations, the recipe chosen by
/// cross-validation over every shape with a network left out per fold (a library meets
/// networks it was not tuned on).
pub fn deploy(m: &Matrix) -> Result<(Selector, Choice)> {
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    scheme(true).fit(m, &all, DEPLOY_K)
}

/// The nested choice on one split, for each k: the recipe chosen inside the training
/// shapes, its inner score, its score on the test shapes and its set's upper bound there.
struct NestedRow {
    k: usize,
    choice: Choice,
    test: tune::select::Score,
    bound: tune::select::Score,
}

fn nested_rows(
    m: &Matrix,
    truth: &Matrix,
    split: &Split,
    nested: &Nested,
    ks: &[usize],
) -> Result<Vec<NestedRow>> {
    let mut rows = Vec::new();
    for &k in ks {
        let (s, choice) = nested.fit(m, &split.train, k)?;
        let set: Vec<usize> = s
            .configs
            .iter()
            .filter_map(|cfg| truth.configs().iter().position(|x| x == cfg))
            .collect();
        let test = score(truth, &split.test, |i| {
            s.choose(&truth.inputs()[i].features)
                .and_then(|cfg| truth.configs().iter().position(|x| x == cfg))
        });
        let bound = score(truth, &split.test, |i| best_in(truth, i, &set));
        rows.push(NestedRow {
            k,
            choice,
            test,
            bound,
        });
    }
    Ok(rows)
}

fn pct(s: &tune::select::Score) -> String {
    match s.unmeasured {
        _ if s.scored == 0 => "-".into(),
        0 => format!("{:.2}", 100.0 * s.geomean),
        u => format!("{:.2} ({u} unmeasured)", 100.0 * s.geomean),
    }
}

/// The report: how the matrix was measured, the tables of every split, the deployed
/// selector against the vendor library (seconds per shape key) where given.
pub fn analyse(run: &RunFile) -> Result<String> {
    let (m, stats, verified) = (&run.matrix, &run.stats, run.verified);
    let truth = run.truth()?;
    let truth = &truth;
    let vendor = run.vendor.as_ref().map(|(n, v)| (n.as_str(), v.as_slice()));
    let mut out = format!(
        "# {} on {}\n\n{} shapes; {} configurations in the matrix. Searches measured {} cells; the cross-evaluation {} (anchors) + {} (promising): {:.1}% of the {}-cell grid of candidates x shapes in all ({:.1}% cross-evaluated), {} measurements failed or were skipped. What the selectors learn from: these {} cells.\n\n",
        m.tunable,
        m.device,
        m.inputs().len(),
        m.configs().len(),
        stats.searched,
        stats.anchored,
        stats.promising,
        100.0 * stats.measured_fraction(),
        stats.grid,
        100.0 * stats.fraction(),
        stats.failed,
        m.measured()
    );
    if run.labelled.0 > 0 {
        let _ = writeln!(
            out,
            "Label step (`label_step`, read only by the tables \"with label cells\"): {} label cells on the training shapes of the splits, {} scoring cells of the sets chosen with them.\n",
            run.labelled.0, run.labelled.1
        );
    }
    if run.filled > 0 {
        let _ = writeln!(
            out,
            "Filling the grid (never read by a set or a tree): {} more cells of the {} configurations x {} shapes, {} of them measured in all ({:.1}%).\n",
            run.filled,
            m.configs().len(),
            m.inputs().len(),
            truth.measured(),
            100.0 * truth.measured() as f64 / truth.grid().max(1) as f64,
        );
    }
    if run.planned > 0 {
        let _ = writeln!(
            out,
            "Scoring only (never read by a set or a tree): {verified} of {} planned cells measure the baselines and every set's configurations on the test shapes of each split, and every method's {DEPLOY_K}-set (chosen from all shapes) on every shape: {:.1}% of the grid more ({:.1}% with the searches and cross-evaluation). The per-shape optimum is the best of all {} cells.\n",
            run.planned,
            100.0 * verified as f64 / stats.grid.max(1) as f64,
            100.0 * (stats.searched + stats.anchored + stats.promising + verified) as f64
                / stats.grid.max(1) as f64,
            truth.measured()
        );
    } else {
        let _ = writeln!(
            out,
            "{verified} more cells measured the deployed configurations on the test shapes into the same matrix (a run before the scoring cells were kept apart: the selectors of one split may learn from cells measured to score another).\n"
        );
    }
    let classifiers = Classifier::ALL;
    let mut summary = String::from(
        "| split (train / test shapes) | one config | nearest input (today) | shipped k=4 | shipped k=8 | bound, shipped set k=8 | chosen inside the training shapes, k=8 | select3's scheme k=4 / k=8 |\n|---|---:|---:|---:|---:|---:|---|---:|\n",
    );
    let mut labels = String::from(
        "| split | label cells measured / wanted (% of the grid) | shipped k=4 | shipped k=8 | chosen, k=8 |\n|---|---:|---:|---:|---|\n",
    );
    let (m_ext, truth_ext) = (m.with_derived(&derived()), truth.with_derived(&derived()));
    for (n_split, split) in splits(m).into_iter().enumerate() {
        if split.train.is_empty() || split.test.is_empty() {
            continue;
        }
        // The first split is random; the others leave out a network.
        let by_group = n_split > 0;
        let r = evaluate(m, truth, &split, &SetMethod::MAIN, &classifiers, &KS)?;
        let _ = writeln!(out, "## {}\n\n{}", split.name, r.markdown());
        let norms: Vec<SetMethod> = methods().into_iter().skip(4).collect();
        let n = evaluate(
            m,
            truth,
            &split,
            &norms,
            &[Classifier::Tree(TreeLimits::B)],
            &KS,
        )?;
        let _ = writeln!(out, "Normalisations ({}):\n\n{}", split.name, n.markdown());
        let mut trees = classifiers[..4].to_vec();
        trees.retain(|c| *c != Classifier::NearestInput);
        let d = evaluate(&m_ext, &truth_ext, &split, &SetMethod::MAIN, &trees, &KS)?;
        let _ = writeln!(
            out,
            "Derived features ({}): the trees and 1-NN reading {} besides the sizes:\n\n{}",
            split.name,
            derived()
                .iter()
                .map(|d| d.name().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            d.markdown()
        );
        // A split too small for a scheme's folds gets no shipped rows (said in the report).
        let mut skipped = |r: Result<Vec<NestedRow>>, what: &str| {
            r.unwrap_or_else(|e| {
                let _ = writeln!(out, "{what} ({}): not fitted: {e}\n", split.name);
                Vec::new()
            })
        };
        let rows = skipped(
            nested_rows(m, truth, &split, &scheme(by_group), &KS),
            "Shipped",
        );
        let old = skipped(
            nested_rows(m, truth, &split, &Nested::default(), &[4, DEPLOY_K]),
            "select3's scheme",
        );
        let folds = if by_group {
            "one fold per network of the training shapes (each left out in turn)"
        } else {
            "5 random folds"
        };
        let _ = writeln!(
            out,
            "Shipped ({}): set method, tree and features chosen by cross-validation inside the {} training shapes, {folds} (inner score: the left-out folds), scored on the {} test shapes:\n\n| k | chosen | inner score | test score | set's bound on the test shapes | runner-up (inner) |\n|---:|---|---:|---:|---:|---|",
            split.name,
            split.train.len(),
            split.test.len()
        );
        for row in &rows {
            let inner = row
                .choice
                .scores
                .first()
                .map(|(_, s)| pct(s))
                .unwrap_or_default();
            let second = row
                .choice
                .scores
                .get(1)
                .map(|(r, s)| format!("{} ({})", r.name(), pct(s)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "| {} | {} | {inner} | {} | {} | {second} |",
                row.k,
                row.choice.recipe.name(),
                pct(&row.test),
                pct(&row.bound)
            );
        }
        let _ = writeln!(out);
        let at = |k: usize| rows.iter().find(|r| r.k == k);
        let old_at = |k: usize| {
            old.iter()
                .find(|r| r.k == k)
                .map(|r| pct(&r.test))
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "select3's scheme ({}; 5 random folds, sizes only): k = 4 {} ({}), k = {DEPLOY_K} {} ({}).\n",
            split.name,
            old_at(4),
            old.first().map(|r| r.choice.recipe.name()).unwrap_or_default(),
            old_at(DEPLOY_K),
            old.get(1).map(|r| r.choice.recipe.name()).unwrap_or_default(),
        );
        let _ = writeln!(
            summary,
            "| {} ({} / {}) | {} | {} | {} | {} | {} | {} | {} / {} |",
            split.name,
            split.train.len(),
            split.test.len(),
            pct(&r.single_best),
            pct(&r.nearest_best),
            at(4).map(|r| pct(&r.test)).unwrap_or_default(),
            at(8).map(|r| pct(&r.test)).unwrap_or_default(),
            at(8).map(|r| pct(&r.bound)).unwrap_or_default(),
            at(8).map(|r| r.choice.recipe.name()).unwrap_or_default(),
            old_at(4),
            old_at(DEPLOY_K),
        );
        let (lab, gained, wanted) = with_labels(m, truth, &split)?;
        let rows =
            nested_rows(&lab, truth, &split, &scheme(by_group), &[4, DEPLOY_K]).unwrap_or_default();
        let _ = writeln!(
            labels,
            "| {} | {gained} / {wanted} ({:.1}%) | {} | {} | {} |",
            split.name,
            100.0 * gained as f64 / stats.grid.max(1) as f64,
            rows.first().map(|r| pct(&r.test)).unwrap_or_default(),
            rows.get(1).map(|r| pct(&r.test)).unwrap_or_default(),
            rows.get(1)
                .map(|r| r.choice.recipe.name())
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(
        out,
        "## Summary (unseen shapes, % of the per-shape optimum)\n\n{summary}"
    );
    let _ = writeln!(
        out,
        "## With label cells (unseen shapes, % of the per-shape optimum)\n\nThe same scheme, learning from the matrix plus every configuration of the sets any method chooses (k = {KS:?}) on every training shape (`with_labels`; taken from the scoring and filling cells: wanted cells never measured stay empty):\n\n{labels}"
    );
    let (s, choice) = deploy(m)?;
    let _ = writeln!(
        out,
        "## Deployed\n\n{} configurations by {} (chosen by cross-validation over all {} shapes, a network left out per fold, inner score {}), tree depth {}, {} leaves:\n",
        s.configs.len(),
        choice.recipe.name(),
        m.inputs().len(),
        choice.scores.first().map(|(_, s)| pct(s)).unwrap_or_default(),
        s.tree.shape().0,
        s.tree.shape().1,
    );
    for c in &s.configs {
        let _ = writeln!(out, "- `{c}`");
    }
    if let Some((name, times)) = vendor {
        // (all shapes, shapes of at least 1 GFLOP) x (deployed, per-shape best).
        let mut logs: [[Vec<f64>; 2]; 2] = Default::default();
        let mut tiled = 0;
        for (i, input) in m.inputs().iter().enumerate() {
            let Some(&(_, t)) = times.iter().find(|(k, _)| *k == input.key) else {
                continue;
            };
            let cfg = s.choose(&input.features);
            if cfg.is_some_and(|c| c.get("KERNEL") == Some(&Value::Str("sgemm".into()))) {
                tiled += 1;
            }
            let ours = cfg
                .and_then(|cfg| truth.configs().iter().position(|x| x == cfg))
                .and_then(|c| truth.get(i, c));
            let flops = 2.0 * input.features.iter().take(4).product::<f64>();
            if let (Some(ours), Some((_, best))) = (ours, truth.best(i)) {
                for l in &mut logs[..if flops >= 1e9 { 2 } else { 1 }] {
                    l[0].push((t / ours).ln());
                    l[1].push((t / best).ln());
                }
            }
        }
        let g = |v: &[f64]| (v.iter().sum::<f64>() / v.len().max(1) as f64).exp();
        let _ = writeln!(
            out,
            "\nAgainst {name} on {} shapes (geometric mean of {name}'s time / ours; above 1: faster than {name}): the deployed set {:.3}, the per-shape best measured {:.3}; on the {} shapes of at least 1 GFLOP, {:.3} and {:.3}. The deployed selector picks the tiled SGEMM for {tiled} of {} shapes.",
            logs[0][0].len(),
            g(&logs[0][0]),
            g(&logs[0][1]),
            logs[1][0].len(),
            g(&logs[1][0]),
            g(&logs[1][1]),
            m.inputs().len()
        );
    }
    Ok(out)
}

/// `analyse OUT_DIR`: the tables again from the matrix (and `vendor.json`) a run wrote.
pub fn analyse_dir(dir: &Path) -> Result<()> {
    println!("{}", analyse(&read_run(dir)?)?);
    Ok(())
}

/// `plan OUT_DIR`: the scoring cells [`verify`] plans on a run's matrix, by kind.
pub fn plan_dir(dir: &Path) -> Result<()> {
    let run = read_run(dir)?;
    let m = &run.matrix;
    let started = Instant::now();
    let (_, _, planned) = verify(m, |_, _| None)?;
    let first = needed(m, &splits(m), &methods(), &KS_FIRST[..1])?.len();
    println!(
        "{planned} scoring cells ({:.1}% of the {}-cell grid; {first} for the baselines and the k = {DEPLOY_K} sets), planned in {:.1?}",
        100.0 * planned as f64 / m.grid().max(1) as f64,
        m.grid(),
        started.elapsed()
    );
    Ok(())
}

fn read_run(dir: &Path) -> Result<RunFile> {
    let path = dir.join("run.json");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        source: e,
    })?;
    serde_json::from_str(&text).map_err(|e| Error::Format {
        path: path.display().to_string(),
        reason: e.to_string(),
    })
}

/// Everything a run measured, for `analyse`.
#[derive(serde::Serialize, serde::Deserialize)]
pub struct RunFile {
    /// The matrix the selectors learn from: the searches and the cross-evaluation.
    pub matrix: Matrix,
    /// How it was measured.
    pub stats: Stats,
    /// Cells measured for scoring.
    pub verified: usize,
    /// Cells planned for scoring (0 in runs before the scoring cells were kept apart,
    /// whose `matrix` holds them).
    #[serde(default)]
    pub planned: usize,
    /// Cells measured past the scoring ones to fill the grid ([`fill`]).
    #[serde(default)]
    pub filled: usize,
    /// Label cells and their scoring cells ([`label_step`]).
    #[serde(default)]
    pub labelled: (usize, usize),
    /// The scoring and filling cells, `[input, config, cost]` of `matrix`'s inputs and
    /// configurations: with `matrix`, the truth the tables score on.
    #[serde(default)]
    pub scoring: Vec<(usize, usize, f64)>,
    /// The vendor library's name and seconds per shape key.
    pub vendor: Option<(String, Vec<(String, f64)>)>,
}

impl RunFile {
    /// A run of the matrix `m` and the truth `truth` (`m` with the scoring cells).
    pub fn new(
        m: Matrix,
        truth: &Matrix,
        stats: Stats,
        (verified, planned): (usize, usize),
        vendor: Option<(String, Vec<(String, f64)>)>,
    ) -> RunFile {
        let mut scoring = Vec::new();
        for i in 0..truth.inputs().len() {
            for c in 0..truth.configs().len() {
                if let (None, Some(v)) = (m.get(i, c), truth.get(i, c)) {
                    scoring.push((i, c, v));
                }
            }
        }
        RunFile {
            matrix: m,
            stats,
            verified,
            planned,
            filled: 0,
            labelled: (0, 0),
            scoring,
            vendor,
        }
    }

    /// The matrix with the scoring cells.
    pub fn truth(&self) -> Result<Matrix> {
        let mut t = self.matrix.clone();
        for &(i, c, v) in &self.scoring {
            t.set(i, c, v)?;
        }
        Ok(t)
    }
}

/// Writes `run.json` and `REPORT.md` into `dir`.
pub fn write_run(dir: &Path, run: &RunFile, report: &str) -> Result<()> {
    let text = serde_json::to_string(run).map_err(|e| Error::Select(e.to_string()))?;
    tune::results::write_atomic(&dir.join("run.json"), text.as_bytes())?;
    tune::results::write_atomic(&dir.join("REPORT.md"), report.as_bytes())
}
