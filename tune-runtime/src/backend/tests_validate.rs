//! Tolerances on outputs of many chunks: the parallel check finds what a sequential one
//! would (the count, the first mismatch, the norm), on typed data and on bytes read back.

use super::*;

/// Elements in a few parallel chunks and a partial one.
const N: usize = 3 * 65536 + 123;

fn expected() -> Vec<f32> {
    (0..N).map(|i| (i % 1000) as f32 * 0.01 - 5.0).collect()
}

fn both(t: &Tolerance, e: &[f32], a: &[f32]) -> Result<(), String> {
    let (e, a) = (HostData::from(e.to_vec()), HostData::from(a.to_vec()));
    let typed = t.check(&e, &a);
    let bytes = t.check_bytes(&e, &a.to_bytes());
    assert_eq!(typed, bytes, "typed and byte checks disagree");
    typed
}

#[test]
fn mismatches_in_several_chunks_are_counted_and_the_first_is_named() {
    let e = expected();
    let t = Tolerance::default();
    assert_eq!(both(&t, &e, &e), Ok(()));
    let mut a = e.clone();
    for i in [N - 1, 2 * 65536 + 7, 65536 + 5] {
        a[i] += 1.0;
    }
    let err = both(&t, &e, &a).unwrap_err();
    let first = 65536 + 5;
    assert!(
        err.starts_with(&format!("3 of {N} elements differ; first at {first}: ")),
        "{err}"
    );
    // Within tolerance everywhere: accepted.
    let close: Vec<f32> = e.iter().map(|v| v + 5e-5).collect();
    assert_eq!(both(&t, &e, &close), Ok(()));
    assert!(both(&Tolerance::Exact, &e, &close).is_err());
    assert_eq!(both(&Tolerance::Exact, &e, &e), Ok(()));
}

#[test]
fn a_nan_in_the_last_chunk_fails_every_tolerance() {
    let e = expected();
    let mut a = e.clone();
    a[N - 2] = f32::NAN;
    for t in [
        Tolerance::default(),
        Tolerance::Absolute(1.0),
        Tolerance::Relative(1.0),
        Tolerance::Exact,
    ] {
        let err = both(&t, &e, &a).unwrap_err();
        assert!(
            err.contains(&format!("first at {}: NaN", N - 2)),
            "{t:?}: {err}"
        );
    }
    let err = both(&Tolerance::Norm(1.0), &e, &a).unwrap_err();
    let want = format!(
        "element {}: NaN where {} was expected",
        N - 2,
        f64::from(e[N - 2])
    );
    assert_eq!(err, want);
}

#[test]
fn the_norm_over_chunks_matches_a_sequential_sum() {
    let e = expected();
    let a: Vec<f32> = e
        .iter()
        .enumerate()
        .map(|(i, v)| v + if i % 3 == 0 { 1e-3 } else { -1e-3 })
        .collect();
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (e, a) in e.iter().zip(&a) {
        let (e, a) = (f64::from(*e), f64::from(*a));
        diff += (a - e) * (a - e);
        norm += e * e;
    }
    let rel = diff.sqrt() / norm.sqrt();
    assert_eq!(both(&Tolerance::Norm(rel * 1.001), &e, &a), Ok(()));
    let err = both(&Tolerance::Norm(rel * 0.999), &e, &a).unwrap_err();
    assert_eq!(
        err,
        format!("relative error norm {rel:.3e} exceeds {:.1e}", rel * 0.999)
    );
}

#[test]
fn other_types_and_wrong_lengths() {
    let e: Vec<i32> = (0..N as i32).collect();
    let mut a = e.clone();
    a[N - 1] = -1;
    let (he, ha) = (HostData::from(e), HostData::from(a));
    let err = Tolerance::Exact
        .check_bytes(&he, &ha.to_bytes())
        .unwrap_err();
    assert!(
        err.starts_with(&format!("1 of {N} elements differ; first at {}", N - 1)),
        "{err}"
    );
    assert_eq!(Tolerance::Exact.check(&he, &ha).unwrap_err(), err);
    assert_eq!(he.from_bytes_like(&he.to_bytes()), he);
    let short = &ha.to_bytes()[..4 * N - 4];
    let err = Tolerance::Exact.check_bytes(&he, short).unwrap_err();
    assert!(err.contains("bytes"), "{err}");
    // A buffer of one byte type against a reference of another is a mismatch, not a panic.
    let f = HostData::from(vec![0.0f32; N]);
    assert!(Tolerance::default().check(&f, &he).is_err());
}
