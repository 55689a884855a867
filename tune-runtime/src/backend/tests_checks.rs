//! Kernel-property constraints on the fake backend: each rejects with its cause right after
//! compilation, before anything runs, and a tuning run counts rejections by cause.

use super::*;
use std::sync::atomic::Ordering::SeqCst;

/// Prepares `x, ls` with `spec` and returns the failure, checking that it compiled once
/// and launched nothing.
fn rejected(spec: KernelSpec, x: usize, ls: usize) -> Failure {
    let s = space();
    let fake = Arc::new(Fake::new());
    let ev = KernelEvaluator::<Fake>::new(fake.clone(), &s, spec).unwrap();
    let (compiles, launches) = (fake.compiles.load(SeqCst), fake.launches.load(SeqCst));
    let f = match ev.prepare(&s, &find(&s, x, ls)) {
        Err(f) => f,
        Ok(p) => panic!("prepared: {p:?}"),
    };
    assert_eq!(
        fake.compiles.load(SeqCst),
        compiles + 1,
        "not compiled: {f}"
    );
    assert_eq!(fake.launches.load(SeqCst), launches, "it ran: {f}");
    f
}

fn passes(spec: KernelSpec, x: usize, ls: usize) {
    let s = space();
    let ev = KernelEvaluator::<Fake>::new(Fake::new(), &s, spec).unwrap();
    eval(&ev, &s, &find(&s, x, ls)).unwrap();
}

#[test]
fn registers_over_the_bound_or_the_device_are_rejected_after_compiling() {
    let f = rejected(spec().define("FAKE_REGS", 48).max_registers(40), 1, 16);
    assert_eq!(f.cause(), Some(&Cause::Registers), "{f}");
    assert!(f.to_string().contains("48 registers"), "{f}");
    let Failure::Rejected { detail, .. } = &f else {
        panic!("{f:?}")
    };
    assert!(detail.starts_with(AFTER_COMPILING), "{detail}");
    passes(spec().define("FAKE_REGS", 40).max_registers(40), 1, 16);
    // 64 work-items x 40 registers = 2560, over the device's 2048 per work-group, whatever
    // the spec asks.
    let f = rejected(spec().define("FAKE_REGS", 40), 1, 64);
    assert_eq!(f.cause(), Some(&Cause::Registers), "{f}");
    assert!(f.to_string().contains("2048"), "{f}");
    assert!(f.is_invalid());
    assert_eq!(f.status(), "invalid: registers");
}

#[test]
fn spills_and_the_preferred_multiple_are_rejected_after_compiling() {
    let f = rejected(spec().define("FAKE_PRIVATE", 64).max_spill_bytes(0), 1, 16);
    assert_eq!(f.cause(), Some(&Cause::Spills), "{f}");
    passes(spec().define("FAKE_PRIVATE", 0).max_spill_bytes(0), 1, 16);
    let f = rejected(spec().define("FAKE_MULTIPLE", 32).whole_warps(true), 1, 16);
    assert_eq!(f.cause(), Some(&Cause::PreferredMultiple), "{f}");
    passes(spec().define("FAKE_MULTIPLE", 32).whole_warps(true), 1, 32);
    // Without asking, the preferred multiple is advice only.
    passes(spec().define("FAKE_MULTIPLE", 32), 1, 16);
}

#[test]
fn occupancy_is_estimated_from_the_limiting_resource() {
    // The fake compute unit: 128 work-items, 4096 registers, 1536 bytes of local memory.
    // 64 work-items x 32 registers and 700 bytes of local memory: exactly 2 fit.
    let two = || spec().define("FAKE_REGS", 32).define("FAKE_LOCAL", 700);
    passes(two().min_occupancy(2), 1, 64);
    let f = rejected(two().min_occupancy(3), 1, 64);
    assert_eq!(f.cause(), Some(&Cause::Occupancy), "{f}");
    // More local memory per work-group and only one fits.
    let f = rejected(
        spec()
            .define("FAKE_LOCAL", 800)
            .min_occupancy(2)
            .kernel_check("sees_the_occupancy", |_, k| {
                let o = k.occupancy.ok_or("no occupancy")?;
                assert_eq!(
                    (o.work_groups, o.limited_by),
                    (1, OccupancyLimit::LocalMemory)
                );
                Ok(())
            }),
        1,
        16,
    );
    assert_eq!(f.cause(), Some(&Cause::Occupancy), "{f}");
    assert!(f.to_string().contains("LocalMemory"), "{f}");
    let dev = Fake::new().info;
    let o = dev.work_groups_per_cu(32, Some(33), 0).unwrap();
    // 33 registers round up to 40: 32 x 40 = 1280 per group, 3 in 4096; threads allow 4.
    assert_eq!(
        (o.work_groups, o.limited_by),
        (3, OccupancyLimit::Registers)
    );
    assert_eq!(
        DeviceInfo::default().work_groups_per_cu(32, Some(33), 64),
        None
    );
}

#[test]
fn custom_checks_see_the_configuration_and_name_the_cause() {
    let spec = || {
        spec()
            .define("FAKE_REGS", 20)
            .kernel_check("odd_x", |c, k| {
                assert_eq!(k.limits.registers, Some(20));
                assert_eq!(k.work_group_size, c.get::<usize>(1));
                match c.get::<usize>(0) % 2 {
                    1 => Ok(()),
                    _ => Err(format!("X = {} is even", c.get::<usize>(0))),
                }
            })
    };
    let f = rejected(spec(), 2, 16);
    assert_eq!(f.cause(), Some(&Cause::Custom("odd_x".into())), "{f}");
    assert_eq!(f.status(), "invalid: odd_x");
    passes(spec(), 3, 16);
}

#[test]
fn a_tuning_run_counts_rejections_by_cause() {
    let s = space();
    // Registers 24 x X: X = 2, 3, 4 are over 40; LS = 128 is over the device's 64.
    let ev = KernelEvaluator::<Fake>::new(
        Fake::new(),
        &s,
        spec().define("FAKE_REGS_PER_X", 24).max_registers(40),
    )
    .unwrap();
    let r = crate::Tuner::new(s, &ev)
        .technique(crate::search::Exhaustive::new())
        .progress(false)
        .run()
        .unwrap();
    assert_eq!(
        r.failures.get("invalid: registers"),
        Some(&9),
        "{:?}",
        r.failures
    );
    assert_eq!(
        r.failures.get("invalid: work_group_size"),
        Some(&4),
        "{:?}",
        r.failures
    );
    assert_eq!(r.valid, 3, "{:?}", r.failures);
    let back: Vec<Failure> = r.records.iter().filter_map(|x| x.failure()).collect();
    assert!(back
        .iter()
        .all(|f| matches!(f.cause(), Some(Cause::Registers | Cause::WorkGroupSize))));
    let text = r.report(1).to_string();
    assert!(text.contains("invalid: registers: 9"), "{text}");
}
