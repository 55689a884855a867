//! The T1 reader against recorded data: the valid configurations built from each of the
//! three benchmark_hub T1 files must be exactly those of the brute-force caches of the same
//! benchmarks.
//!
//! Two kinds of checks: against `tests/data/t1/valid_configs.json` (count and SHA-256 of the
//! sorted cache keys, derived from the caches by `tests/data/t1/derive.py`), which always
//! run; and directly against the caches in `shared/data/tuning-caches` beside the
//! repository, which are reported as ignored when that folder is absent (as on CI). And the
//! expression evaluator against Python itself on random expressions (ignored without python3).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Failed, Trial};
use sha2::{Digest, Sha256};
use tune_runtime::t1::expr::{self, Binding, PyValue, Resolve, Vars};
use tune_runtime::t1::{T1Space, T1};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/t1")
}

/// `shared/data` beside the repository (or beside the folder of worktrees), or
/// `$TUNE_SHARED_DATA`.
fn shared() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TUNE_SHARED_DATA") {
        return Some(PathBuf::from(p)).filter(|p| p.join("tuning-caches").is_dir());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../..", "../../.."]
        .iter()
        .map(|up| root.join(up).join("shared/data"))
        .find(|p| p.join("tuning-caches").is_dir())
}

fn sorted_keys(s: &T1Space) -> Vec<String> {
    let mut k: Vec<String> = s.space.iter().map(|c| s.key(&c)).collect();
    k.sort();
    k
}

fn space(file: &str) -> Result<T1Space, Failed> {
    let t1 = T1::read(data().join(file)).map_err(|e| e.to_string())?;
    let s = t1.space().map_err(|e| e.to_string())?;
    if !s.warnings.is_empty() {
        return Err(format!("unexpected warnings: {:?}", s.warnings).into());
    }
    Ok(s)
}

fn against_fixture(file: &'static str) -> Result<(), Failed> {
    let fixture: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data().join("valid_configs.json"))?)?;
    let want = &fixture[file];
    let s = space(file)?;
    let keys = sorted_keys(&s);
    let count = keys.len() as u64;
    if Some(count) != want["count"].as_u64() || s.space.len() != count as u128 {
        return Err(format!(
            "{count} valid configurations, the caches have {}",
            want["count"]
        )
        .into());
    }
    let hash = format!("{:x}", Sha256::digest(keys.join("\n").as_bytes()));
    if Some(hash.as_str()) != want["sha256"].as_str() {
        return Err("same count, but not the same configurations as the caches".into());
    }
    Ok(())
}

fn cache_keys(path: &Path) -> Result<(Vec<String>, serde_json::Value), Failed> {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let doc: serde_json::Value = serde_json::from_str(&text)?;
    let names = doc["tune_params_keys"]
        .as_array()
        .ok_or("no tune_params_keys")?
        .iter()
        .map(|n| n.as_str().unwrap_or_default().to_string())
        .collect();
    Ok((names, doc))
}

/// The space's keys must equal the cache's keys, as sets.
fn against_cache(file: &'static str, cache: &'static str) -> Result<(), Failed> {
    let shared = shared().ok_or("no shared data")?;
    let (names, doc) = cache_keys(&shared.join("tuning-caches/benchmark_hub").join(cache))?;
    let s = space(file)?;
    let mine: Vec<&str> = s.space.params().iter().map(|p| p.name()).collect();
    if mine != names {
        return Err(format!("parameters {mine:?}, the cache has {names:?}").into());
    }
    let ours: BTreeSet<String> = sorted_keys(&s).into_iter().collect();
    let theirs: BTreeSet<String> = doc["cache"]
        .as_object()
        .ok_or("no cache")?
        .keys()
        .cloned()
        .collect();
    let only_ours: Vec<_> = ours.difference(&theirs).take(5).collect();
    let only_theirs: Vec<_> = theirs.difference(&ours).take(5).collect();
    if !only_ours.is_empty() || !only_theirs.is_empty() {
        return Err(format!(
            "{} built, {} recorded; only built: {only_ours:?}; only recorded: {only_theirs:?}",
            ours.len(),
            theirs.len()
        )
        .into());
    }
    Ok(())
}

/// The gemm T1 space has no cache of its own; the legacy gemm cache records an older
/// variant with fewer values and without the last condition (see tests/data/t1/README.md).
fn gemm_against_legacy_cache() -> Result<(), Failed> {
    let shared = shared().ok_or("no shared data")?;
    let (names, doc) =
        cache_keys(&shared.join("tuning-caches/benchmark_hub/legacy/gemm/RTX_2080_Ti.json.gz"))?;
    let s = space("gemm_milo.json")?;
    let tp = &doc["tune_params"];
    let slots: Vec<usize> = names
        .iter()
        .map(|n| s.space.slot(n).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let mut restricted = BTreeSet::new();
    for c in s.space.iter() {
        let v = s.values(&c);
        let fits = names.iter().zip(&slots).all(|(n, &k)| {
            tp[n]
                .as_array()
                .is_some_and(|l| l.iter().any(|x| x.as_i64() == v[k].as_int()))
        });
        if fits {
            let key: Vec<String> = slots.iter().map(|&k| v[k].to_string()).collect();
            restricted.insert(key.join(","));
        }
    }
    let cache = doc["cache"].as_object().ok_or("no cache")?;
    let mut extra = 0;
    for (key, e) in cache {
        let breaks_last = [("MWG", 128), ("NWG", 128), ("MDIMC", 8), ("NDIMC", 8)]
            .iter()
            .all(|(n, v)| e[*n].as_i64() == Some(*v));
        if breaks_last {
            extra += 1;
            if restricted.contains(key) {
                return Err(format!("{key} breaks the last condition but was built").into());
            }
        } else if !restricted.contains(key) {
            return Err(format!("{key} is recorded but was not built").into());
        }
    }
    if restricted.len() + extra != cache.len() || extra != 484 {
        return Err(format!(
            "{} built within the cache's values, {} recorded, {extra} break the last condition",
            restricted.len(),
            cache.len()
        )
        .into());
    }
    Ok(())
}

/// Random expressions of the subset over three integer variables, deterministic.
struct Gen(u64);

impl Gen {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
    fn atom(&mut self) -> String {
        match self.next(6) {
            0 => ["a", "b", "c"][self.next(3) as usize].to_string(),
            1 => format!("{}.5", self.next(4)),
            2 => ["True", "False"][self.next(2) as usize].to_string(),
            _ => (self.next(12) as i64 - 3).to_string(),
        }
    }
    fn expr(&mut self, depth: u32) -> String {
        if depth == 0 {
            return self.atom();
        }
        let d = depth - 1;
        match self.next(14) {
            0 => format!("({} + {})", self.expr(d), self.expr(d)),
            1 => format!("({} - {})", self.expr(d), self.expr(d)),
            2 => format!("({} * {})", self.expr(d), self.expr(d)),
            3 => format!("({} // {})", self.expr(d), self.expr(d)),
            4 => format!("({} % {})", self.expr(d), self.expr(d)),
            5 => format!("({} / {})", self.expr(d), self.expr(d)),
            6 => format!("({} ** {})", self.atom(), self.next(4)),
            7 => format!("({} < {} <= {})", self.expr(d), self.expr(d), self.expr(d)),
            8 => format!(
                "({} and {} or {})",
                self.expr(d),
                self.expr(d),
                self.expr(d)
            ),
            9 => format!("(not {} == {})", self.expr(d), self.expr(d)),
            10 => format!(
                "({} if {} else {})",
                self.expr(d),
                self.expr(d),
                self.expr(d)
            ),
            11 => format!(
                "({} in [{}, {}, 2])",
                self.expr(d),
                self.expr(d),
                self.atom()
            ),
            12 => format!(
                "{}({}, {})",
                ["min", "max"][self.next(2) as usize],
                self.expr(d),
                self.expr(d)
            ),
            _ => format!("(-{} != abs({}))", self.expr(d), self.expr(d)),
        }
    }
}

struct Abc;

impl Resolve for Abc {
    fn resolve(&self, name: &str) -> Option<Binding> {
        ["a", "b", "c"]
            .iter()
            .position(|n| *n == name)
            .map(Binding::Slot)
    }
    fn known(&self) -> String {
        "a, b, c".into()
    }
}

/// Python's own `eval` and ours agree on random expressions of the subset: the same value
/// (printed as `repr` prints it), or both a division by zero.
fn expressions_agree_with_python() -> Result<(), Failed> {
    let mut g = Gen(7);
    let cases: Vec<(String, [i64; 3])> = (0..600)
        .map(|i| {
            let vars = [0, 1, 2].map(|_| g.next(9) as i64 - 3);
            (g.expr(1 + i % 3), vars)
        })
        .collect();
    let input: String = cases
        .iter()
        .map(|(e, v)| format!("{}\t{}\t{}\t{e}\n", v[0], v[1], v[2]))
        .collect();
    let script = "import sys\nfor line in sys.stdin:\n    a, b, c, e = line.rstrip('\\n').split('\\t')\n    try:\n        print(repr(eval(e, {}, {'a': int(a), 'b': int(b), 'c': int(c)})))\n    except ZeroDivisionError:\n        print('ZeroDivisionError')\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    std::io::Write::write_all(&mut child.stdin.take().ok_or("no stdin")?, input.as_bytes())?;
    let out = child.wait_with_output()?;
    let theirs: Vec<String> = String::from_utf8(out.stdout)?
        .lines()
        .map(str::to_owned)
        .collect();
    if theirs.len() != cases.len() {
        return Err(format!("python answered {} of {} lines", theirs.len(), cases.len()).into());
    }
    let mut zero = 0;
    for ((e, v), want) in cases.iter().zip(&theirs) {
        let vars = v.map(PyValue::Int);
        let got = match expr::parse(e, &Abc)
            .map_err(|x| x.to_string())?
            .eval(&Vars(&vars))
        {
            Ok(x) => x.to_string(),
            Err(x) if x.message.contains("division by zero") => "ZeroDivisionError".into(),
            Err(x) => x.to_string(),
        };
        zero += usize::from(want == "ZeroDivisionError");
        let same = got == *want
            || matches!((got.parse::<f64>(), want.parse::<f64>()), (Ok(x), Ok(y)) if x == y);
        if !same {
            return Err(format!("`{e}` with a, b, c = {v:?}: python {want}, tune {got}").into());
        }
    }
    if zero == 0 || zero > cases.len() / 2 {
        return Err(format!("{zero} divisions by zero: the generator needs tuning").into());
    }
    Ok(())
}

fn python() -> bool {
    std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn main() {
    let args = Arguments::from_args();
    let have = shared().is_some();
    let mut trials = Vec::new();
    for file in [
        "convolution_milo.json",
        "dedispersion_milo.json",
        "gemm_milo.json",
    ] {
        trials.push(Trial::test(
            format!("valid_configurations_match_the_fixture::{file}"),
            move || against_fixture(file),
        ));
    }
    for (file, cache) in [
        ("convolution_milo.json", "convolution_milo/A100.json.gz"),
        ("convolution_milo.json", "convolution_milo/A4000.json.gz"),
        ("dedispersion_milo.json", "dedispersion_milo/A100.json.gz"),
    ] {
        trials.push(
            Trial::test(
                format!("valid_configurations_equal_the_cache::{cache}"),
                move || against_cache(file, cache),
            )
            .with_ignored_flag(!have),
        );
    }
    trials.push(
        Trial::test(
            "gemm_space_equals_the_legacy_cache_within_its_values",
            gemm_against_legacy_cache,
        )
        .with_ignored_flag(!have),
    );
    trials.push(
        Trial::test(
            "expressions_agree_with_python",
            expressions_agree_with_python,
        )
        .with_ignored_flag(!python()),
    );
    if !have {
        eprintln!(
            "t1: shared/data/tuning-caches not found beside the repository (set TUNE_SHARED_DATA); \
             the direct cache comparisons are ignored, the fixture comparisons run"
        );
    }
    libtest_mimic::run(&args, trials).exit();
}
