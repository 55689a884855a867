//! Property tests of the search space against brute-force enumeration of the Cartesian
//! product: counts, index <-> configuration bijection, membership, neighbours and uniform
//! sampling, on small random spaces with random constraints.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;
use rand::SeedableRng;
use tune_runtime::param::{Bound, Param};
use tune_runtime::space::{Config, Neighbourhood, Space, SpaceBuilder};

/// An integer expression over earlier parameters and constants.
#[derive(Clone, Debug)]
enum Expr {
    Const(i64),
    P(usize),
    Mul(usize, usize),
    Div(usize, i64),
    Add(usize, i64),
}

impl Expr {
    fn eval(&self, v: &[i64]) -> i64 {
        match *self {
            Expr::Const(c) => c,
            Expr::P(i) => v[i],
            Expr::Mul(a, b) => v[a] * v[b],
            Expr::Div(a, c) => v[a] / c,
            Expr::Add(a, c) => v[a] + c,
        }
    }
    fn deps(&self) -> Vec<usize> {
        match *self {
            Expr::Const(_) => vec![],
            Expr::P(i) | Expr::Div(i, _) | Expr::Add(i, _) => vec![i],
            Expr::Mul(a, b) => vec![a, b],
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Divides,
    MultipleOf,
    LessThan,
    GreaterThan,
    AtMost,
    AtLeast,
    Equal,
    Unequal,
}

impl Op {
    fn holds(self, x: i64, r: i64) -> bool {
        match self {
            Op::Divides => x != 0 && r % x == 0,
            Op::MultipleOf => r != 0 && x % r == 0,
            Op::LessThan => x < r,
            Op::GreaterThan => x > r,
            Op::AtMost => x <= r,
            Op::AtLeast => x >= r,
            Op::Equal => x == r,
            Op::Unequal => x != r,
        }
    }
}

#[derive(Clone, Debug)]
enum Rule {
    Alias(Op, Expr),
    /// `(self + P) % m == k` over the owner and one earlier parameter: a plain predicate.
    SumMod(usize, i64, i64),
    /// `self * P <= c`.
    ProdLe(usize, i64),
}

#[derive(Clone, Debug)]
enum Dom {
    Range(i64, i64, i64),
    Set(Vec<i64>),
}

impl Dom {
    fn values(&self) -> Vec<i64> {
        match self {
            Dom::Range(lo, hi, st) => (*lo..=*hi).step_by(*st as usize).collect(),
            Dom::Set(v) => v.clone(),
        }
    }
}

#[derive(Clone, Debug)]
struct ParamDesc {
    dom: Dom,
    rules: Vec<Rule>,
}

fn expr(i: usize) -> BoxedStrategy<Expr> {
    if i == 0 {
        return (1i64..=12).prop_map(Expr::Const).boxed();
    }
    prop_oneof![
        (1i64..=12).prop_map(Expr::Const),
        (0..i).prop_map(Expr::P),
        (0..i, 0..i).prop_map(|(a, b)| Expr::Mul(a, b)),
        (0..i, 1i64..4).prop_map(|(a, c)| Expr::Div(a, c)),
        (0..i, -2i64..3).prop_map(|(a, c)| Expr::Add(a, c)),
    ]
    .boxed()
}

fn rule(i: usize) -> BoxedStrategy<Rule> {
    let op = prop_oneof![
        Just(Op::Divides),
        Just(Op::MultipleOf),
        Just(Op::LessThan),
        Just(Op::GreaterThan),
        Just(Op::AtMost),
        Just(Op::AtLeast),
        Just(Op::Equal),
        Just(Op::Unequal),
    ];
    let alias = (op, expr(i)).prop_map(|(o, e)| Rule::Alias(o, e));
    if i == 0 {
        return alias.boxed();
    }
    prop_oneof![
        3 => alias,
        1 => (0..i, 2i64..5, 0i64..2).prop_map(|(p, m, k)| Rule::SumMod(p, m, k)),
        1 => (0..i, 4i64..40).prop_map(|(p, c)| Rule::ProdLe(p, c)),
    ]
    .boxed()
}

fn dom() -> impl Strategy<Value = Dom> {
    prop_oneof![
        (-3i64..4, 0i64..10, 1i64..4).prop_map(|(lo, span, st)| Dom::Range(lo, lo + span, st)),
        proptest::collection::btree_set(-4i64..16, 0..6)
            .prop_map(|s| Dom::Set(s.into_iter().collect())),
    ]
}

fn space_desc() -> impl Strategy<Value = Vec<ParamDesc>> {
    (1usize..=6).prop_flat_map(|n| {
        (0..n)
            .map(|i| {
                (dom(), proptest::collection::vec(rule(i), 0..3))
                    .prop_map(|(dom, rules)| ParamDesc { dom, rules })
                    .boxed()
            })
            .collect::<Vec<_>>()
    })
}

fn holds(r: &Rule, me: usize, v: &[i64]) -> bool {
    match r {
        Rule::Alias(op, e) => op.holds(v[me], e.eval(v)),
        Rule::SumMod(p, m, k) => (v[me] + v[*p]).rem_euclid(*m) == *k,
        Rule::ProdLe(p, c) => v[me] * v[*p] <= *c,
    }
}

/// The values of slots `0..n`, reading only `slots` (a constraint may read only what it
/// declares); the others are 0 and unused by the rule.
fn read(b: &Bound<'_>, n: usize, slots: &[usize]) -> Vec<i64> {
    let mut v = vec![0; n];
    for &s in slots {
        v[s] = b.get::<i64>(s);
    }
    v
}

/// Where the plain (non-alias) constraints go.
#[derive(Clone, Copy, Debug)]
enum Placement {
    /// On their parameter, with `Param::constraint`.
    InPlace,
    /// As stand-alone `SpaceBuilder::constraint`s, given before any parameter.
    First,
    /// As stand-alone constraints, after every parameter.
    Last,
}

fn build(desc: &[ParamDesc], split: usize) -> tune_runtime::Result<Space> {
    build_placed(desc, split, Placement::InPlace)
}

fn build_placed(
    desc: &[ParamDesc],
    split: usize,
    placement: Placement,
) -> tune_runtime::Result<Space> {
    let mut b = SpaceBuilder::new()
        .__split_nodes(split)
        .__parallel_work(split as u64 * 3 - 3);
    let mut loose: Vec<(Vec<usize>, Rule, usize)> = Vec::new();
    let mut params = Vec::new();
    for (i, p) in desc.iter().enumerate() {
        let name = format!("P{i}");
        let mut param = match &p.dom {
            Dom::Range(lo, hi, st) => Param::<i64>::range(name, *lo..=*hi).step(*st),
            Dom::Set(v) => Param::<i64>::values(name, v.clone()),
        };
        for r in &p.rules {
            param = match r.clone() {
                Rule::Alias(op, e) => {
                    let deps = e.deps();
                    let d = deps.clone();
                    let rhs = move |b: &Bound<'_>| e.eval(&read(b, i, &d));
                    match op {
                        Op::Divides => param.divides(&deps, rhs),
                        Op::MultipleOf => param.multiple_of(&deps, rhs),
                        Op::LessThan => param.less_than(&deps, rhs),
                        Op::GreaterThan => param.greater_than(&deps, rhs),
                        Op::AtMost => param.at_most(&deps, rhs),
                        Op::AtLeast => param.at_least(&deps, rhs),
                        Op::Equal => param.equal(&deps, rhs),
                        Op::Unequal => param.unequal(&deps, rhs),
                    }
                }
                r @ (Rule::SumMod(p, ..) | Rule::ProdLe(p, _)) => match placement {
                    Placement::InPlace => {
                        param.constraint(&[p], move |b| holds(&r, i, &read(b, i + 1, &[p, i])))
                    }
                    _ => {
                        loose.push((vec![p, i], r, i));
                        param
                    }
                },
            };
        }
        params.push(param);
    }
    let add_loose = |mut b: SpaceBuilder<'static>, loose: &[(Vec<usize>, Rule, usize)]| {
        for (reads, r, i) in loose.iter().cloned() {
            let rd = reads.clone();
            b = b.constraint(&reads, move |b| holds(&r, i, &read(b, i + 1, &rd)));
        }
        b
    };
    if matches!(placement, Placement::First) {
        b = add_loose(b, &loose);
    }
    for p in params {
        b = b.param(p);
    }
    if matches!(placement, Placement::Last) {
        b = add_loose(b, &loose);
    }
    b.build()
}

/// Whether the error says only that the space is empty.
fn only_empty(e: &tune_runtime::Error) -> bool {
    match e {
        tune_runtime::Error::EmptySpace { .. } => true,
        tune_runtime::Error::Several(v) => v.iter().all(only_empty),
        _ => false,
    }
}

/// Every valid configuration, by brute force over the Cartesian product.
fn brute(desc: &[ParamDesc]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for (i, p) in desc.iter().enumerate() {
        let mut next = Vec::new();
        for prefix in &out {
            for v in p.dom.values() {
                let mut c = prefix.clone();
                c.push(v);
                if p.rules.iter().all(|r| holds(r, i, &c)) {
                    next.push(c);
                }
            }
        }
        out = next;
    }
    out
}

fn vals(c: &Config) -> Vec<i64> {
    (0..c.raw().len()).map(|i| c.get::<i64>(i)).collect()
}

fn cfg(v: &[i64]) -> Config {
    Config::from_raw(v.iter().map(|&x| x as u64).collect::<Vec<_>>())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn matches_brute_force(desc in space_desc(), split in 1usize..6) {
        let all = brute(&desc);
        let space = match build(&desc, split) {
            Err(e) if all.is_empty() && only_empty(&e) => return Ok(()),
            r => r.unwrap(),
        };
        prop_assert_eq!(space.len(), all.len() as u128);
        let from_space: BTreeSet<Vec<i64>> = space.iter().map(|c| vals(&c)).collect();
        let expected: BTreeSet<Vec<i64>> = all.iter().cloned().collect();
        prop_assert_eq!(&from_space, &expected);
        // Bijection: get and index_of are inverse.
        for i in 0..space.len() {
            let c = space.get(i).unwrap();
            prop_assert_eq!(space.index_of(&c), Some(i));
        }
        prop_assert!(space.get(space.len()).is_none());
        // Membership of every Cartesian point.
        let mut cart = vec![vec![]];
        for p in &desc {
            cart = cart.iter().flat_map(|pre: &Vec<i64>| p.dom.values().into_iter().map(move |v| {
                let mut c = pre.clone(); c.push(v); c
            })).collect();
        }
        for c in &cart {
            prop_assert_eq!(space.contains(&cfg(c)), expected.contains(c));
        }
        // Neighbours: valid, one parameter changed; `Any` is complete; `Adjacent` is the
        // nearest valid value on each side.
        for c in all.iter().take(40) {
            let any: BTreeSet<Vec<i64>> = space.neighbours(&cfg(c), Neighbourhood::Any).iter().map(vals).collect();
            let want: BTreeSet<Vec<i64>> = all.iter().filter(|o| {
                o.iter().zip(c).filter(|(a, b)| a != b).count() == 1
            }).cloned().collect();
            prop_assert_eq!(&any, &want);
            for n in space.neighbours(&cfg(c), Neighbourhood::Adjacent) {
                let n = vals(&n);
                prop_assert!(want.contains(&n));
                let p = (0..c.len()).find(|&k| n[k] != c[k]).unwrap();
                // No valid value of parameter p lies strictly between (in domain order).
                let dom = desc[p].dom.values();
                let (ic, inn) = (dom.iter().position(|&x| x == c[p]).unwrap(), dom.iter().position(|&x| x == n[p]).unwrap());
                let (lo, hi) = (ic.min(inn), ic.max(inn));
                for &between in &dom[lo + 1..hi] {
                    let mut o = c.clone();
                    o[p] = between;
                    prop_assert!(!expected.contains(&o));
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// A constraint given on its own, before or after the parameters, is the same
    /// constraint as one given on its last parameter: same configurations at the same
    /// indices, same groups and build order.
    #[test]
    fn stand_alone_constraints_are_placed_like_in_place_ones(desc in space_desc(), split in 1usize..6) {
        let in_place = build(&desc, split);
        for placement in [Placement::First, Placement::Last] {
            let loose = build_placed(&desc, split, placement);
            match (&in_place, &loose) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(a.len(), b.len());
                    prop_assert_eq!(a.__build_order(), b.__build_order());
                    prop_assert_eq!(a.groups(), b.groups());
                    for i in 0..a.len() {
                        prop_assert_eq!(a.get(i), b.get(i));
                    }
                }
                // Unlabelled constraints are numbered in the order given: compare the kind.
                (Err(a), Err(b)) => prop_assert!(only_empty(a) && only_empty(b), "{a} vs {b}"),
                (a, b) => prop_assert!(false, "{:?} vs {:?}", a.as_ref().map(Space::len), b.as_ref().map(Space::len)),
            }
        }
    }
}

#[test]
fn sampling_is_uniform() {
    // Uneven tree: x in 1..=12, y divides x. 35 configurations, leaves spread unevenly.
    let space = SpaceBuilder::new()
        .param(Param::<u32>::range("x", 1..=12))
        .param(Param::<u32>::range("y", 1..=12).divides(&[0], |b| b.get::<u32>(0)))
        .build()
        .unwrap();
    let k = space.len() as usize;
    assert_eq!(k, 35);
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    let draws = 70_000;
    let mut counts: HashMap<Config, usize> = HashMap::new();
    for _ in 0..draws {
        *counts.entry(space.sample(&mut rng).unwrap()).or_default() += 1;
    }
    assert_eq!(counts.len(), k);
    let e = draws as f64 / k as f64;
    let chi2: f64 = counts.values().map(|&o| (o as f64 - e).powi(2) / e).sum();
    // 34 degrees of freedom: the 99.9th percentile is about 65.2.
    assert!(
        chi2 < 65.2,
        "chi-square {chi2} too large for a uniform sample"
    );
}

#[test]
fn independent_groups_and_exact_counts() {
    let n = 1usize << 20;
    let space = SpaceBuilder::new()
        .param(Param::<usize>::range("WPT", 1..=n).divides(&[], move |_| n))
        .param(Param::<usize>::range("LS", 1..=n).divides(&[0], move |b| n / b.get::<usize>(0)))
        .param(Param::<u32>::values("VW", [1, 2, 4, 8]))
        .param(Param::bool("PAD"))
        .build()
        .unwrap();
    assert_eq!(space.len(), 231 * 8);
    let groups = space.groups();
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[0].1, 231);
}

#[test]
fn errors_are_reported_not_panicked() {
    let dup = SpaceBuilder::new()
        .param(Param::<u8>::range("A", 1..=3))
        .param(Param::<u8>::range("A", 1..=3))
        .build();
    assert!(dup.unwrap_err().to_string().contains("declared twice"));
    let step0 = SpaceBuilder::new()
        .param(Param::<u8>::range("A", 1..=3).step(0))
        .build();
    assert!(step0
        .unwrap_err()
        .to_string()
        .contains("step must be positive"));
    let dupv = SpaceBuilder::new()
        .param(Param::<u8>::values("A", [1, 2, 1]))
        .build();
    assert!(dupv.unwrap_err().to_string().contains("listed twice"));
    let panicky = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 0..=3))
        .param(Param::<u32>::range("B", 0..=3).constraint(&[0], |b| 12 / b.get::<u32>(0) > 1))
        .build();
    assert!(panicky.unwrap_err().to_string().contains("panicked"));
    let big = SpaceBuilder::new()
        .param(Param::<u64>::range("A", 0..=u64::MAX))
        .build();
    assert!(big.is_err());
}

#[test]
fn values_round_trip() {
    let space = SpaceBuilder::new()
        .param(Param::<i32>::range("A", -4..=4).step(2))
        .param(Param::<f32>::values("F", [0.5, 1.0]))
        .param(Param::bool("B").default_value(true))
        .build()
        .unwrap();
    assert_eq!(space.len(), 5 * 2 * 2);
    for c in space.iter() {
        let named: Vec<(String, tune_runtime::Value)> = space
            .values(&c)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v))
            .collect();
        let back = space
            .config_from_values(named.iter().map(|(n, v)| (n.as_str(), v.clone())))
            .unwrap();
        assert_eq!(back, c);
    }
    let err = space
        .config_from_values([
            ("A", tune_runtime::Value::Int(3)),
            ("F", tune_runtime::Value::Float(0.5)),
            ("B", tune_runtime::Value::Bool(true)),
        ])
        .unwrap_err();
    assert!(err.to_string().contains("not in the search space"));
}

/// A constraint that reads a slot it did not declare used to read 0 there: `A < B` with
/// no declared reads gave all 16 pairs instead of the 6 with `A < B`.
#[test]
fn undeclared_reads_are_errors() {
    let built = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 1..=4))
        .param(
            Param::<u32>::range("B", 1..=4).constraint(&[], |b| b.get::<u32>(0) < b.get::<u32>(1)),
        )
        .build();
    match built {
        Err(tune_runtime::Error::UndeclaredRead { read, declared, .. }) => {
            assert_eq!(read, "A");
            assert_eq!(declared, ["B"]);
        }
        other => panic!("expected an undeclared read, got {other:?}"),
    }
    // Declared, it gives the 6 pairs.
    let space = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 1..=4))
        .param(
            Param::<u32>::range("B", 1..=4).constraint(&[0], |b| b.get::<u32>(0) < b.get::<u32>(1)),
        )
        .build()
        .unwrap();
    assert_eq!(space.len(), 6);
    // An alias's right-hand side may not read its own parameter's slot either.
    let built = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 1..=4))
        .param(Param::<u32>::range("B", 1..=4).at_most(&[], |b| b.get::<u32>(0)))
        .build();
    assert!(
        matches!(built, Err(tune_runtime::Error::UndeclaredRead { .. })),
        "{built:?}"
    );
}

/// Errors about one parameter name it in a field, not only in the message.
#[test]
fn errors_name_the_parameter_in_a_field() {
    use tune_runtime::{Error, Value};
    let built = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 1..=4))
        .param(Param::<u32>::range("B", 1..=4).at_most(&[1], |b| b.get::<u32>(1)))
        .build();
    assert!(
        matches!(&built, Err(Error::AliasReadsItself { param }) if param == "B"),
        "{built:?}"
    );
    let space = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 1..=4))
        .param(Param::<u32>::range("B", 1..=4))
        .build()
        .unwrap();
    let missing = space.config_from_values([("A", Value::Int(1))]);
    assert!(
        matches!(&missing, Err(Error::MissingValue { param }) if param == "B"),
        "{missing:?}"
    );
    assert!(missing
        .unwrap_err()
        .to_string()
        .contains("no value for `B`"));
}

/// `build()` reports every problem, not the first.
#[test]
fn every_error_is_reported() {
    let built = SpaceBuilder::new()
        .param(Param::<u8>::range("A", 1..=3))
        .param(Param::<u8>::range("A", 1..=3))
        .param(Param::<u8>::range("S", 1..=3).step(0))
        .constraint(&[], |_| true)
        .constraint(&[7], |_| true)
        .build();
    let Err(tune_runtime::Error::Several(errors)) = built else {
        panic!("expected several errors, got {built:?}")
    };
    let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    assert_eq!(errors.len(), 4, "{text:?}");
    assert!(text.iter().any(|t| t.contains("declared twice")));
    assert!(text.iter().any(|t| t.contains("step must be positive")));
    assert!(text.iter().any(|t| t.contains("reads no parameter")));
    assert!(text.iter().any(|t| t.contains("reads slot 7")));
    // Each names its parameter or constraint in fields a caller can match on.
    use tune_runtime::Error;
    assert!(errors
        .iter()
        .any(|e| matches!(e, Error::DuplicateParam { name } if name == "A")));
    assert!(errors
        .iter()
        .any(|e| matches!(e, Error::InvalidParam { name, .. } if name == "S")));
    assert!(errors.iter().any(|e| matches!(
        e,
        Error::ReadsNoParam { constraint } if constraint == "stand-alone constraint #1"
    )));
    assert!(errors.iter().any(|e| matches!(
        e,
        Error::UnknownSlot { slot: 7, declared: 3, constraint } if constraint == "stand-alone constraint #2"
    )));
}

/// An always-false constraint, or a range that is empty at run time, is reported when the
/// space is built, naming what emptied it.
#[test]
fn empty_spaces_are_errors_that_name_the_cause() {
    let built = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 1..=8))
        .param(
            Param::<u32>::range("B", 1..=8)
                .divides(&[], |_| 64)
                .constraint(&[0], |b| b.get::<u32>(0) + b.get::<u32>(1) > 100)
                .label("A + B > 100"),
        )
        .param(Param::bool("C"))
        .build();
    match built {
        Err(tune_runtime::Error::EmptySpace {
            params,
            at,
            constraints,
        }) => {
            assert_eq!(at, "B");
            assert_eq!(constraints, ["`A + B > 100`"]);
            assert_eq!(params, ["A", "B"]);
        }
        other => panic!("expected an empty space, got {other:?}"),
    }
    let n = 0usize;
    let built = SpaceBuilder::new()
        .param(Param::<usize>::range("WPT", 1..=n))
        .param(Param::bool("C"))
        .build();
    match built {
        Err(e @ tune_runtime::Error::EmptySpace { .. }) => {
            assert!(e.to_string().contains("`WPT` has no values"), "{e}")
        }
        other => panic!("expected an empty space, got {other:?}"),
    }
    // A stand-alone constraint, labelled, that contradicts an alias.
    let built = SpaceBuilder::new()
        .constraint(&[0, 1], |b| b.get::<u32>(0) == b.get::<u32>(1))
        .label("X == Y")
        .param(Param::<u32>::values("X", [1, 2]))
        .param(Param::<u32>::values("Y", [3, 4]))
        .build();
    let e = built.unwrap_err();
    assert!(
        e.to_string().contains("no value of `Y` satisfies `X == Y`"),
        "{e}"
    );
}

/// A space whose trees would exhaust memory (30 chained parameters of 100 values) stops at
/// the builder's memory limit with `SpaceTooLarge`, instead of being killed.
#[test]
fn huge_spaces_stop_at_the_memory_limit() {
    let mut b = SpaceBuilder::new().memory_limit(8 << 20);
    for i in 0..30usize {
        let p = Param::<u32>::range(format!("P{i}"), 1..=100);
        b = b.param(if i == 0 {
            p
        } else {
            p.at_most(&[i - 1], move |b| b.get::<u32>(i - 1))
        });
    }
    match b.build() {
        Err(tune_runtime::Error::SpaceTooLarge {
            params,
            limit_bytes,
        }) => {
            assert_eq!(params.len(), 30);
            assert_eq!(limit_bytes, 8 << 20);
        }
        other => panic!("expected SpaceTooLarge, got {other:?}"),
    }
}

/// `allow_empty` returns the empty space instead of the error.
#[test]
fn empty_spaces_can_be_allowed() {
    let space = SpaceBuilder::new()
        .param(Param::<u8>::range("A", 1..=4).constraint(&[], |b| b.get::<u8>(0) > 9))
        .param(Param::bool("B"))
        .allow_empty()
        .build()
        .unwrap();
    assert!(space.is_empty());
    assert_eq!(space.get(0), None);
}

/// A level whose two checks read different parameters is memoised check by check: the
/// same configurations as brute force.
#[test]
fn checks_memoised_one_by_one_match_brute_force() {
    let space = SpaceBuilder::new()
        .param(Param::<u32>::range("A", 1..=6))
        .param(Param::<u32>::range("B", 1..=6))
        .param(
            Param::<u32>::range("C", 1..=12)
                .constraint(&[0], |b| (b.get::<u32>(0) + b.get::<u32>(2)) % 3 == 0)
                .constraint(&[1], |b| b.get::<u32>(1) * b.get::<u32>(2) <= 24),
        )
        .build()
        .unwrap();
    let mut want = BTreeSet::new();
    for a in 1..=6u32 {
        for b in 1..=6u32 {
            for c in (1..=12u32).filter(|c| (a + c) % 3 == 0 && b * c <= 24) {
                want.insert(vec![a as i64, b as i64, c as i64]);
            }
        }
    }
    let got: BTreeSet<Vec<i64>> = space
        .iter()
        .map(|c| (0..3).map(|i| c.get::<u32>(i) as i64).collect())
        .collect();
    assert_eq!(got, want);
}

/// A two-parameter space whose leaves alone outgrow the limit stops soon after reaching it
/// (it used to notice only after each parallel task's thousands of subtrees: about 600
/// million evaluations and gigabytes here, for a limit of 4 MiB, one million leaves).
#[test]
fn wide_two_level_spaces_stop_at_the_memory_limit() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let evaluations = AtomicU64::new(0);
    let built = SpaceBuilder::new()
        .memory_limit(4 << 20)
        .param(Param::<u32>::range("A", 1..=100_000))
        .param(Param::<u32>::range("B", 1..=100_000).constraint(&[0], |b| {
            evaluations.fetch_add(1, Ordering::Relaxed);
            b.get::<u32>(0) != b.get::<u32>(1)
        }))
        .build();
    assert!(
        matches!(built, Err(tune_runtime::Error::SpaceTooLarge { .. })),
        "{built:?}"
    );
    let n = evaluations.load(Ordering::Relaxed);
    assert!(n < 32_000_000, "{n} evaluations before stopping");
}
