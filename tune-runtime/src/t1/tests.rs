#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use super::expr::PyValue;
use super::*;

fn t1(json: &str) -> T1 {
    T1::from_json(json, Path::new("test.json")).unwrap()
}

fn space_of(params: &str, conditions: &str) -> Result<T1Space> {
    t1(&format!(
        r#"{{"ConfigurationSpace": {{"TuningParameters": [{params}], "Conditions": [{conditions}]}}}}"#
    ))
    .space()
}

/// Every configuration of the Cartesian product that passes `keep`, as cache keys.
fn brute(values: &[Vec<i64>], keep: impl Fn(&[i64]) -> bool) -> Vec<String> {
    let mut out = vec![Vec::new()];
    for vs in values {
        out = out
            .into_iter()
            .flat_map(|p: Vec<i64>| {
                vs.iter().map(move |&v| {
                    let mut q = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    let mut keys: Vec<String> = out
        .into_iter()
        .filter(|c| keep(c))
        .map(|c| c.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
        .collect();
    keys.sort();
    keys
}

fn keys(s: &T1Space) -> Vec<String> {
    let mut k: Vec<String> = s.space.iter().map(|c| s.key(&c)).collect();
    k.sort();
    k
}

#[test]
fn conditions_match_brute_force() {
    let s = space_of(
        r#"{"Name": "bx", "Type": "int", "Values": "[2**i for i in range(1, 8)]"},
           {"Name": "by", "Type": "int", "Values": "list(range(1, 9))"},
           {"Name": "t", "Type": "int", "Values": "[1, 2, 3, 4]"},
           {"Name": "s", "Type": "int", "Values": "[0, 1]"}"#,
        r#"{"Expression": "32 <= bx * by <= 256"},
           {"Expression": "t > 1 or s == 0"},
           {"Expression": "(bx * t) % 3 != 1 and not (by == 4 and s == 1)"}"#,
    )
    .unwrap();
    let want = brute(
        &[
            (1..8).map(|i| 1 << i).collect(),
            (1..9).collect(),
            vec![1, 2, 3, 4],
            vec![0, 1],
        ],
        |c| {
            let (bx, by, t, s) = (c[0], c[1], c[2], c[3]);
            (32..=256).contains(&(bx * by))
                && (t > 1 || s == 0)
                && (bx * t) % 3 != 1
                && !(by == 4 && s == 1)
        },
    );
    assert_eq!(keys(&s), want);
    assert_eq!(s.cartesian, 7 * 8 * 4 * 2);
    assert!(s.warnings.is_empty());
}

#[test]
fn types_defaults_and_keys() {
    let s = space_of(
        r#"{"Name": "f", "Type": "float", "Values": "[0.5, 1, 2.5]", "Default": 1},
           {"Name": "b", "Type": "bool", "Values": "[False, True]", "Default": true},
           {"Name": "k", "Type": "string", "Values": "['row', 'col']", "Default": "col"},
           {"Name": "n", "Type": "int", "Values": [1, 2], "Default": [2]}"#,
        r#"{"Expression": "k == 'row' or f < 2"}, {"Expression": "b or n == 1"}"#,
    )
    .unwrap();
    let k = keys(&s);
    assert!(k.contains(&"2.5,True,row,2".to_string()), "{k:?}");
    assert!(k.contains(&"1.0,False,col,1".to_string()), "{k:?}");
    assert!(!k.iter().any(|x| x.starts_with("2.5") && x.contains("col")));
    assert_eq!(k.len(), 3 * 3 + 2 * 3);
    let d = s.space.default_config().unwrap();
    assert_eq!(
        s.values(&d)[1..],
        [
            PyValue::Bool(true),
            PyValue::Str("col".into()),
            PyValue::Int(2)
        ]
    );
}

#[test]
fn errors_name_the_condition_or_parameter() {
    let e = space_of(
        r#"{"Name": "x", "Type": "int", "Values": "[1, 2]"}"#,
        r#"{"Expression": "x > 0"}, {"Expression": "x.bit_length() > 1"}"#,
    )
    .unwrap_err();
    match &e {
        Error::Expression {
            path,
            context,
            source,
        } => {
            assert_eq!(path, "test.json");
            assert_eq!(context, "condition 2 `x.bit_length() > 1`");
            assert_eq!(source.column, 0);
        }
        other => panic!("{other:?}"),
    }
    let e = e.to_string();
    assert!(
        e.contains("condition 2") && e.contains("column 1") && e.contains("`x.bit_length`"),
        "{e}"
    );
    // A value list outside the subset names its parameter and the column.
    match space_of(r#"{"Name": "x", "Type": "int", "Values": "[1, 2**]"}"#, "") {
        Err(Error::Expression {
            context, source, ..
        }) => {
            assert_eq!(context, "the values of parameter `x` `[1, 2**]`");
            assert_eq!(source.column, 7, "{source}");
        }
        other => panic!("{other:?}"),
    }
    let e = space_of(
        r#"{"Name": "x", "Type": "int", "Values": "[1, 2]"}"#,
        r#"{"Expression": "x > y"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("unknown name `y`") && e.contains("known names: x"),
        "{e}"
    );
    let e = space_of(r#"{"Name": "x", "Type": "int", "Values": "[1.5]"}"#, "")
        .unwrap_err()
        .to_string();
    assert!(e.contains("declared `int`"), "{e}");
    let e = space_of(r#"{"Name": "x", "Type": "int", "Values": "7"}"#, "")
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a list"), "{e}");
    let e = space_of(r#"{"Name": "x", "Type": "int", "Values": "[1, 1]"}"#, "")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`x`") && e.contains("twice"), "{e}");
}

#[test]
fn raising_conditions_leave_configurations_out_and_warn() {
    let s = space_of(
        r#"{"Name": "x", "Type": "int", "Values": "[0, 1, 2]"},
           {"Name": "y", "Type": "int", "Values": "[4, 6]"}"#,
        r#"{"Expression": "y % x == 0"}"#,
    )
    .unwrap();
    assert_eq!(keys(&s), ["1,4", "1,6", "2,4", "2,6"]);
    assert_eq!(s.warnings.len(), 1);
    assert!(
        s.warnings[0].contains("division by zero"),
        "{:?}",
        s.warnings
    );
    let e = space_of(
        r#"{"Name": "x", "Type": "int", "Values": "[0, 1]"}"#,
        r#"{"Expression": "1 > 2"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`1 > 2` is always false"), "{e}");
    // A condition that no configuration meets names itself.
    let e = space_of(
        r#"{"Name": "x", "Type": "int", "Values": "[0, 1]"}"#,
        r#"{"Expression": "x > 5"}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("`x > 5`"), "{e}");
}

#[test]
fn kernel_launch_follows_kernel_tuner() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "__global__ void k(float* a, int n) {}",
    )
    .unwrap();
    let path = dir.path().join("k.json");
    let text = r#"{
      "ConfigurationSpace": {"TuningParameters": [
        {"Name": "block_size_x", "Type": "int", "Values": "[32, 64]"},
        {"Name": "tile", "Type": "int", "Values": "[1, 3]"}], "Conditions": []},
      "KernelSpecification": {"Language": "CUDA", "KernelName": "k", "KernelFile": "k.cu",
        "ProblemSize": [1000, "2 * 3"], "GridDivX": ["block_size_x", "tile"],
        "Arguments": [
          {"Name": "a", "Type": "float", "MemoryType": "Vector", "FillType": "Constant",
           "FillValue": 2.0, "Size": "ProblemSize[0] * max(tile)", "Output": 1},
          {"Name": "n", "Type": "int32", "MemoryType": "Scalar", "FillValue": 1000}]}}"#;
    std::fs::write(&path, text).unwrap();
    let t1 = T1::read(&path).unwrap();
    let s = t1.space().unwrap();
    let k = t1.kernel(&s).unwrap();
    assert_eq!(k.language, Language::Cuda);
    assert_eq!(k.problem_size, [1000, 6, 1]);
    assert!(k.source.starts_with("extern \"C\" {"));
    assert!(k.options.iter().any(|o| o.starts_with("-I")));
    assert_eq!(k.repetitions, 7);
    let c = s.space.iter().find(|c| s.key(c) == "64,3").unwrap();
    let (grid, block) = k.launch(&s, &c).unwrap();
    // ceil(1000 / (64 * 3)) = 6; y has no divisor and no block_size_y: 6 / 1.
    assert_eq!(grid, [6, 6, 1]);
    assert_eq!(block, [64, 1, 1]);
    let spec = format!("{:?}", k.spec(&s, 0));
    assert!(spec.contains("3000 x float, output"), "{spec}");
    assert!(spec.contains("block_size_y"), "{spec}");
}

/// A `Constant` argument is, as in Kernel Tuner, both a kernel argument and (CUDA) the data
/// of the `__constant__` array of its name; on OpenCL it is the `__constant` argument only.
#[test]
fn constant_memory_arguments_fill_the_array_of_their_name_on_cuda() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "__global__ void k(float* a, float* d_taps) {}",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("k.cl"),
        "__kernel void k(__global float* a, __constant float* d_taps) {}",
    )
    .unwrap();
    for (language, file) in [("CUDA", "k.cu"), ("OpenCL", "k.cl")] {
        let path = dir.path().join("k.json");
        let text = format!(
            r#"{{"ConfigurationSpace": {{"TuningParameters": [
                {{"Name": "block_size_x", "Type": "int", "Values": "[32, 64]"}}], "Conditions": []}},
              "KernelSpecification": {{"Language": "{language}", "KernelName": "k", "KernelFile": "{file}",
                "ProblemSize": [64],
                "Arguments": [
                  {{"Name": "a", "Type": "float", "MemoryType": "Vector", "Size": 64, "Output": 1}},
                  {{"Name": "d_taps", "Type": "float", "MemoryType": "Vector", "MemType": "Constant",
                   "FillType": "Random", "Size": 9}}]}}}}"#
        );
        std::fs::write(&path, text).unwrap();
        let t1 = T1::read(&path).unwrap();
        let s = t1.space().unwrap();
        let k = t1.kernel(&s).unwrap();
        let spec = format!("{:?}", k.spec(&s, 0));
        assert!(spec.contains("Buffer(9 x float)"), "{spec}");
        if language == "CUDA" {
            assert!(spec.contains("constants: [\"d_taps\"]"), "{spec}");
            assert!(k.warnings.is_empty(), "{:?}", k.warnings);
        } else {
            assert!(!spec.contains("constants"), "{spec}");
            assert!(
                k.warnings
                    .iter()
                    .any(|w| w.contains("`__constant` argument")),
                "{:?}",
                k.warnings
            );
        }
    }
}

#[test]
fn missing_kernel_files_and_languages_are_clear() {
    let t = t1(r#"{"ConfigurationSpace": {"TuningParameters": []},
            "KernelSpecification": {"Language": "HIP", "KernelName": "k", "KernelFile": "k.hip"}}"#);
    let s = t.space().unwrap();
    let e = t.kernel(&s).unwrap_err().to_string();
    assert!(e.contains("`hip` is not supported"), "{e}");
    let t = t1(r#"{"ConfigurationSpace": {"TuningParameters": []},
            "KernelSpecification": {"Language": "OpenCL", "KernelName": "k", "KernelFile": "nope.cl"}}"#);
    let e = t.kernel(&s).unwrap_err();
    assert!(
        matches!(&e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{e:?}"
    );
    let e = e.to_string();
    assert!(e.contains("`nope.cl` not found"), "{e}");
}

#[test]
fn string_and_bool_parameters_are_flagged_for_kernels() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.cl"), "__kernel void k() {}").unwrap();
    let path = dir.path().join("k.json");
    std::fs::write(
        &path,
        r#"{"ConfigurationSpace": {"TuningParameters": [
             {"Name": "layout", "Type": "string", "Values": "['row', 'col']"},
             {"Name": "pad", "Type": "bool", "Values": "[False, True]"}]},
           "KernelSpecification": {"Language": "OpenCL", "KernelName": "k", "KernelFile": "k.cl",
             "ProblemSize": [64]}}"#,
    )
    .unwrap();
    let t1 = T1::read(&path).unwrap();
    let s = t1.space().unwrap();
    let k = t1.kernel(&s).unwrap();
    assert_eq!(k.warnings.len(), 2, "{:?}", k.warnings);
    assert!(k.warnings[0].contains("`layout`") && k.warnings[0].contains("position"));
    assert!(k.warnings[1].contains("`pad`") && k.warnings[1].contains("0 or 1"));
    // An OpenCL source is not wrapped in `extern "C"`.
    assert_eq!(k.source, "__kernel void k() {}");
}
