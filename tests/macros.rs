//! The declaration macros against known space sizes and the runtime's builder API.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use tune::{Config, Value};

#[derive(Clone, Copy, Debug, PartialEq, tune::Enum)]
enum Kernel {
    Naive,
    Tiled,
    Vectorised,
}

fn saxpy_space(n: usize) -> tune::Result<tune::Space> {
    tune::space! {
        WPT: usize in 1..=n, divides(n);
        LS:  usize in 1..=n, divides(n / WPT);
    }
}

#[test]
fn atf_saxpy_counts() {
    assert_eq!(saxpy_space(1024).unwrap().len(), 66);
    assert_eq!(saxpy_space(1 << 20).unwrap().len(), 231);
    assert_eq!(saxpy_space(1_000_000).unwrap().len(), 784);
}

/// The same space through plain constraints: same count (checked, not pruned, so small).
#[test]
fn plain_expressions_match_aliases() {
    let n = 1024usize;
    let s = tune::space! {
        WPT: usize in 1..=n, n % WPT == 0;
        LS:  usize in 1..=n, (n / WPT) % LS == 0;
    }
    .unwrap();
    assert_eq!(s.len(), 66);
    // An alias inside a larger expression is desugared.
    let s = tune::space! {
        WPT: usize in 1..=n, divides(n) || WPT == 3;
        LS:  usize in 1..=n, !multiple_of(2) && divides(n / WPT) || LS == 0;
    }
    .unwrap();
    // LS odd and dividing n / WPT: only LS = 1 for powers of two; WPT = 3 gives 1024 / 3 = 341 = 11 * 31.
    assert_eq!(s.len(), 11 + 4);
}

/// CLTune's GEMM space (S5 in shared/bench/spaces.md): 241,600 valid configurations.
#[test]
fn cltune_gemm_count() {
    let s = tune::space! {
        MWG: usize in [16, 32, 64, 128];
        NWG: usize in [16, 32, 64, 128];
        KWG: usize in [16, 32];
        VWM: usize in [1, 2, 4, 8];
        VWN: usize in [1, 2, 4, 8];
        MDIMC: usize in [8, 16, 32], divides(MWG / VWM) && MWG % VWM == 0;
        NDIMC: usize in [8, 16, 32], divides(NWG / VWN) && NWG % VWN == 0;
        MDIMA: usize in [8, 16, 32], divides(MWG / VWM), KWG % ((MDIMC * NDIMC) / MDIMA) == 0;
        NDIMB: usize in [8, 16, 32], divides(NWG / VWN), KWG % ((MDIMC * NDIMC) / NDIMB) == 0;
        KWI: usize in [2, 8], divides(KWG);
        STRM: bool;
        STRN: bool;
        SA: bool;
        SB: bool;
        PRECISION: u32 in [32];
    }
    .unwrap();
    assert_eq!(s.len(), 241_600);
}

#[test]
fn every_kind_of_parameter() {
    let n = 64usize;
    let sizes = [3u32, 5, 7];
    let s = tune::space! {
        A: usize in 1..=n, divides(n), default = 8;
        B: u32 in [1, 2, 4, 8];
        C: bool, default = true;
        K: Kernel, default = Kernel::Tiled;
        G: usize in (0..=4).map(|i| 1 << i);
        ST: i32 in -16..=16 step 8;
        F: f32 in [0.5, 1.0, 2.0];
        M: u32 in sizes.iter().copied(), at_most(sizes[1]);
        X: usize in 1..=4, A * X <= 8 || C;
    }
    .unwrap();
    let names: Vec<&str> = s.params().iter().map(|p| p.name()).collect();
    assert_eq!(names, ["A", "B", "C", "K", "G", "ST", "F", "M", "X"]);
    let lens: Vec<u64> = s.params().iter().map(|p| p.domain_len()).collect();
    assert_eq!(lens, [64, 4, 2, 3, 5, 5, 3, 3, 4]);
    assert_eq!(s.params()[5].domain_value(1), Some(Value::Int(-8)));
    assert_eq!(
        s.params()[3].domain_value(2),
        Some(Value::Str("Vectorised".into()))
    );
    assert_eq!(s.params()[0].default_value(), Some(Value::Int(8)));
    assert_eq!(
        s.params()[3].default_value(),
        Some(Value::Str("Tiled".into()))
    );
    // Brute force over the Cartesian product of the valid-by-alias values.
    let mut expect = 0u128;
    for a in (1..=n).filter(|a| n % a == 0) {
        for c in [false, true] {
            for x in 1..=4 {
                if a * x <= 8 || c {
                    expect += 1;
                }
            }
        }
    }
    expect *= 4 * 3 * 5 * 5 * 3 * 2;
    assert_eq!(s.len(), expect);
    for cfg in s.iter().take(50) {
        let a: usize = cfg.get(0);
        let c: bool = cfg.get(2);
        let x: usize = cfg.get(8);
        assert!(a * x <= 8 || c);
        assert!(cfg.get::<u32>(7) <= 5);
    }
}

#[test]
fn enum_derive() {
    use tune::{EnumParam, Kind, ParamType};
    assert_eq!(Kernel::NAMES, ["Naive", "Tiled", "Vectorised"]);
    assert_eq!(Kernel::VARIANTS[2], Kernel::Vectorised);
    assert_eq!(Kernel::KIND, Kind::Enum);
    for (i, k) in Kernel::VARIANTS.iter().enumerate() {
        assert_eq!(k.to_raw(), i as u64);
        assert_eq!(Kernel::from_raw(i as u64), *k);
        assert_eq!(Kernel::from_value(&k.to_value()), Some(*k));
    }
    assert_eq!(Kernel::from_value(&Value::Str("Blocked".into())), None);
}

#[test]
fn runtime_values_make_errors_not_panics() {
    let n = 0usize;
    let r = tune::space! { A: usize in 1..=n; };
    // An empty run-time range is allowed by the macro; the runtime reports it.
    assert!(matches!(r, Err(tune::Error::EmptySpace { .. })), "{r:?}");
    let z = 0usize;
    let r = tune::space! {
        A: usize in 1..=4;
        B: usize in 1..=4, B % (A * z) == 0;
    };
    assert!(r.is_err());
}

#[tune::tunable(technique = annealing)]
#[allow(clippy::too_many_arguments)]
fn saxpy(
    a: f32,
    x: &[f32],
    y: &mut [f32],
    #[tp(1..=x.len(), divides(x.len()))] wpt: usize,
    #[tp(1..=x.len(), divides(x.len() / wpt))] ls: usize,
    #[tp] pad: bool,
    #[tp([1, 2, 4, 8], default = 4)] vw: u32,
    #[tp] kernel: Kernel,
) -> usize {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
    let _ = (pad, vw, kernel);
    x.len() / wpt / ls
}

#[test]
fn tunable_config_round_trips() {
    use tune::__private::Tunable;
    let x = vec![1.0f32; 1024];
    let mut y = vec![0.0f32; 1024];
    let space = SaxpyConfig::space(2.0, &x, &y).unwrap();
    assert_eq!(space.len(), 66 * 2 * 4 * 3);
    assert_eq!(space.params()[3].default_value(), Some(Value::Int(4)));
    for cfg in space.iter().step_by(7) {
        let typed = SaxpyConfig::try_from(&cfg).unwrap();
        assert_eq!(Config::from(typed), cfg);
        assert_eq!(typed.to_string(), space.describe(&cfg));
        assert_eq!(typed.call(1.0, &x, &mut y), 1024 / typed.wpt / typed.ls);
    }
    let cfg = SaxpyConfig {
        wpt: 4,
        ls: 16,
        pad: true,
        vw: 2,
        kernel: Kernel::Tiled,
    };
    assert_eq!(cfg.to_string(), "wpt=4 ls=16 pad=true vw=2 kernel=Tiled");
    assert!(space.contains(&Config::from(cfg)));
    assert_eq!(SaxpyConfig::try_from(Config::from(cfg)).unwrap(), cfg);
    assert!(SaxpyConfig::try_from(Config::from_raw(vec![1, 2])).is_err());
    assert!(SaxpyConfig::try_from(Config::from_raw(vec![1, 2, 7, 4, 0])).is_err());
    assert!(SaxpyConfig::try_from(Config::from_raw(vec![1, 2, 1, 4, 9])).is_err());
    assert_eq!(SaxpyConfig::PARAMS, ["wpt", "ls", "pad", "vw", "kernel"]);
    assert_eq!(SaxpyConfig::NAME, "macros::saxpy");
    assert_eq!(SaxpyConfig::TECHNIQUE, Some("annealing"));
    // The function itself is unchanged.
    assert_eq!(saxpy(1.0, &x, &mut y, 2, 8, false, 1, Kernel::Naive), 64);
}

/// Constraints that read only earlier parameters are checked as soon as those are bound.
#[test]
fn constraints_without_the_owner() {
    let s = tune::space! {
        A: usize in 1..=8;
        B: usize in 1..=8;
        C: bool, A < B;
    }
    .unwrap();
    assert_eq!(s.len(), 28 * 2);
}

#[tune::tunable]
#[cfg(any())]
fn configured_out(#[tp] flag: bool) -> bool {
    flag
}

#[tune::tunable]
#[cfg(not(any()))]
fn configured_in(#[tp] flag: bool, #[tp(-3..=3 step 3)] shift: i8) -> i8 {
    if flag {
        shift
    } else {
        -shift
    }
}

/// `cfg` attributes after `#[tunable]` apply to the generated items too.
#[test]
fn cfg_applies_to_generated_items() {
    let s = ConfiguredInConfig::space().unwrap();
    assert_eq!(s.len(), 6);
    let got: Vec<i8> = s
        .iter()
        .map(|c| ConfiguredInConfig::try_from(c).unwrap().call())
        .collect();
    assert_eq!(got, [3, 0, -3, -3, 0, 3]);
}

fn lsb(x: usize) -> usize {
    x & x.wrapping_neg()
}

/// Functions of the user's, macros and locals named like parameters are not mistaken for
/// misspelled parameters, and parameters inside macros count as dependencies.
#[test]
fn user_functions_macros_and_locals() {
    let wpt = 2usize;
    let s = tune::space! {
        WPT: usize in 1..=8, at_least(wpt);
        LS: usize in 1..=8, lsb(LS) == LS;
        K: Kernel, matches!(K, Kernel::Tiled) || WPT == 8;
    }
    .unwrap();
    assert_eq!(s.len(), (6 + 3) * 4);
}

/// The 2D stencil space of the construction bench, with its restrictions as stand-alone
/// `where` entries (in the order of a restriction list, before and after the parameters)
/// and written in place: the same space, configuration for configuration.
#[test]
fn where_constraints_equal_constraints_in_place() {
    let n = 256usize;
    let in_place = tune::space! {
        BX: usize in 1..=64;
        BY: usize in 1..=16, BX * BY >= 16 && BX * BY <= 256;
        TX: usize in 1..=8, n % (BX * TX) == 0;
        TY: usize in 1..=8, n % (BY * TY) == 0;
        VW: usize in [1, 2, 4], TX % VW == 0;
        PAD: usize in [0, 1], (BX * TX + 2 + PAD) * (BY * TY + 2) * 4 <= 16384;
    }
    .unwrap();
    let loose = tune::space! {
        where BX * BY >= 16 && BX * BY <= 256, n % (BX * TX) == 0;
        BX: usize in 1..=64;
        BY: usize in 1..=16;
        where (BX * TX + 2 + PAD) * (BY * TY + 2) * 4 <= 16384;
        TX: usize in 1..=8;
        TY: usize in 1..=8;
        VW: usize in [1, 2, 4];
        PAD: usize in [0, 1];
        where n % (BY * TY) == 0;
        where TX % VW == 0;
    }
    .unwrap();
    assert!(in_place.len() > 100);
    assert_eq!(in_place.len(), loose.len());
    assert_eq!(in_place.groups(), loose.groups());
    for i in 0..in_place.len() {
        assert_eq!(in_place.get(i), loose.get(i));
    }
}

/// An always-false constraint is reported when the space is built, with its text.
#[test]
fn an_empty_space_names_its_constraint() {
    let n = 64usize;
    let r = tune::space! {
        A: usize in 1..=n, divides(n);
        B: usize in 1..=n;
        where A * B > n * n;
    };
    let Err(e) = r else {
        panic!("built an empty space")
    };
    assert!(
        e.to_string()
            .contains("no value of `B` satisfies `A * B > n * n`"),
        "{e}"
    );
}

#[tune::tunable(where = wpt * ls <= x.len(), where = ls != 2)]
fn stand_alone(
    x: &[f32],
    #[tp(1..=x.len(), divides(x.len()))] wpt: usize,
    #[tp(1..=64)] ls: usize,
) -> usize {
    wpt * ls + x.len()
}

#[test]
fn tunable_where_constraints() {
    let x = vec![0f32; 64];
    let space = StandAloneConfig::space(&x).unwrap();
    let want = (1..=64usize)
        .filter(|w| 64 % w == 0)
        .flat_map(|w| (1..=64usize).map(move |l| (w, l)))
        .filter(|&(w, l)| w * l <= 64 && l != 2)
        .count();
    assert_eq!(space.len(), want as u128);
    let cfg = StandAloneConfig::try_from(space.get(0).unwrap()).unwrap();
    assert_eq!(cfg.call(&x), cfg.wpt * cfg.ls + 64);
}

/// A tile kernel's host function whose constraints read the device's properties (BEAST's
/// hardware level): the work-group within the device's limit, and at least two
/// work-groups resident per compute unit.
#[tune::tunable]
fn tiles_on(
    dev: &tune::backend::DeviceInfo,
    #[tp([8, 16, 32], ts * ts <= dev.max_work_group_size || dev.max_work_group_size == 0)]
    ts: usize,
    #[tp([1, 2, 4], dev.work_groups_per_cu(ts * ts, Some(32 * wpt), 8 * ts * ts * wpt)
        .is_none_or(|o| o.work_groups >= 2))]
    wpt: usize,
) -> usize {
    ts * wpt
}

#[test]
fn device_properties_in_constraints() {
    let dev = tune::backend::DeviceInfo {
        max_work_group_size: 1024,
        max_work_item_sizes: [1024, 1024, 64],
        local_mem_per_compute_unit: 64 * 1024,
        registers_per_compute_unit: 65536,
        max_threads_per_compute_unit: 2048,
        warp_width: 32,
        ..Default::default()
    };
    // space!: 32 x 32 work-items with 2 or 4 outputs (64 or 128 registers each) fill a
    // compute unit's registers with one work-group; everything else fits twice.
    let s = tune::space! {
        TS:  usize in [8, 16, 32], TS * TS <= dev.max_work_group_size;
        WPT: usize in [1, 2, 4],
            dev.work_groups_per_cu(TS * TS, Some(32 * WPT), 8 * TS * TS * WPT)
                .is_none_or(|o| o.work_groups >= 2);
    }
    .unwrap();
    let pairs: Vec<(usize, usize)> = s.iter().map(|c| (c.get(0), c.get(1))).collect();
    assert_eq!(
        pairs,
        [(8, 1), (8, 2), (8, 4), (16, 1), (16, 2), (16, 4), (32, 1)]
    );
    // #[tunable]: the same constraints over the function's argument.
    let t = TilesOnConfig::space(&dev).unwrap();
    assert_eq!(t.len(), 7);
    let last = TilesOnConfig::try_from(t.get(6).unwrap()).unwrap();
    assert_eq!((last.ts, last.wpt), (32, 1));
    assert_eq!(last.call(&dev), 32);
    // A device that reports nothing prunes nothing.
    let unknown = tune::backend::DeviceInfo::default();
    assert_eq!(TilesOnConfig::space(&unknown).unwrap().len(), 9);
}
