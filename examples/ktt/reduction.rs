//! KTT's reduction (thesis, section 6.1) as a composition: the sum of `n` floats by one
//! kernel launched until one value remains, or once with atomics.
//!
//! Parameters: work-group size `WG`, floats per load `VW` (vector loads), loads in flight
//! `UNROLL`, work-groups per compute unit `GPC` (0: as many as the data needs, one loop step
//! per work-item; else a fixed number with a grid-stride loop), and `ATOMICS` (one launch
//! adding every group's sum to the result; with a fixed number of groups only, as in KTT).
//! Without atomics, the host launches pass after pass over the partial sums: the number of
//! launches depends on the configuration and on `n`.

use std::sync::Arc;

use tune::backend::composition::{BufferId, Composition, KernelId, KernelSource, Run};
use tune::backend::{Backend, BufferArg, DeviceInfo, HostData, Tolerance};
use tune::{Bound, Failure, Param, SpaceBuilder};

use super::{is_cuda, mix, Case};

/// The OpenCL kernels.
pub const CL: &str = include_str!("../../kernels/reduction.cl");
/// The CUDA kernels.
pub const CU: &str = include_str!("../../kernels/reduction.cu");

/// Parameter slots.
pub mod slots {
    /// Work-group size.
    pub const WG: usize = 0;
    /// Floats per load.
    pub const VW: usize = 1;
    /// Loads in flight.
    pub const UNROLL: usize = 2;
    /// Work-groups per compute unit (0: unbounded).
    pub const GPC: usize = 3;
    /// One launch with atomics.
    pub const ATOMICS: usize = 4;
}

/// `n` small non-negative whole numbers (0 to 3) as floats: partial sums are exact while they
/// stay below 2^24, so a small reduction validates exactly, and the data suits cuBLAS's
/// `sasum` (a sum of absolute values) as the vendor's reduction.
pub fn data(n: usize) -> Vec<f32> {
    (0..n as u64).map(|i| (mix(i, 7) % 4) as f32).collect()
}

/// The work-groups of one pass over `len` floats.
pub fn groups(len: usize, wg: usize, vw: usize, unroll: usize, gpc: usize, cus: usize) -> usize {
    let need = len.div_ceil(wg * vw * unroll).max(1);
    if gpc == 0 {
        need
    } else {
        need.min(cus * gpc).max(1)
    }
}

/// The kernel, buffers and sizes the host code uses (also for hand-written host code).
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    /// The `reduce` kernel.
    pub reduce: KernelId,
    /// The input.
    pub x: BufferId,
    /// Partial sums of alternate passes.
    pub parts: [BufferId; 2],
    /// The result (one float).
    pub sum: BufferId,
}

/// The reduction's host code: one launch with atomics, else passes until one value remains.
/// Returns the number of launches.
///
/// # Errors
/// A launch's failure.
pub fn host<B: Backend>(
    run: &mut Run<'_, B>,
    ids: Ids,
    n: usize,
    cus: usize,
) -> Result<usize, Failure> {
    let c = run.config();
    let (wg, vw, unroll, gpc) = (
        c.get::<usize>(slots::WG),
        c.get::<usize>(slots::VW),
        c.get::<usize>(slots::UNROLL),
        c.get::<usize>(slots::GPC),
    );
    if c.get::<bool>(slots::ATOMICS) {
        // The groups add to the result: it starts at zero.
        run.write(ids.sum, &[0.0f32])?;
        let g = groups(n, wg, vw, unroll, gpc, cus);
        run.launch(ids.reduce)
            .global([g * wg])
            .local([wg])
            .arg(ids.x)
            .arg(ids.sum)
            .scalar(n as u32)
            .run()?;
        return Ok(1);
    }
    let (mut len, mut from, mut pass) = (n, ids.x, 0);
    loop {
        let g = groups(len, wg, vw, unroll, gpc, cus);
        let to = if g == 1 { ids.sum } else { ids.parts[pass % 2] };
        run.launch(ids.reduce)
            .global([g * wg])
            .local([wg])
            .arg(from)
            .arg(to)
            .scalar(len as u32)
            .run()?;
        pass += 1;
        if g == 1 {
            return Ok(pass);
        }
        (len, from) = (g, to);
    }
}

/// The reduction of `n` floats on `device` (its compute units size the persistent grid,
/// its work-group limit the space).
///
/// # Errors
/// An invalid space (cannot happen for n >= 1).
pub fn case<B: Backend>(device: &DeviceInfo, n: usize) -> tune::Result<(Case<B>, Ids)> {
    let cuda = is_cuda(device);
    let max_wg = device.max_work_group_size.max(32);
    let widths: &[usize] = if cuda { &[1, 2, 4] } else { &[1, 2, 4, 8, 16] };
    let space = SpaceBuilder::new()
        .param(Param::<usize>::values(
            "WG",
            [32, 64, 128, 256, 512, 1024]
                .into_iter()
                .filter(move |&w| w <= max_wg),
        ))
        .param(Param::<usize>::values("VW", widths.iter().copied()))
        .param(Param::<usize>::values("UNROLL", [1, 2, 4, 8]))
        .param(Param::<usize>::values("GPC", [0, 1, 2, 4, 8, 16, 32]))
        .param(
            Param::bool("ATOMICS").constraint(&[slots::GPC], |b: &Bound| {
                // Atomics with a fixed number of groups only (KTT's constraint): one atomic per
                // group of an unbounded grid would serialise millions of them.
                !b.get::<bool>(slots::ATOMICS) || b.get::<usize>(slots::GPC) > 0
            }),
        )
        .build()?;
    let cus = (device.compute_units as usize).max(1);
    let mut c = Composition::<B>::new();
    let src = KernelSource::new(if cuda { CU } else { CL }, "reduce");
    let reduce = c.kernel(src);
    let x = c.input(BufferArg::from_vec(data(n)));
    let most = move |cfg: &tune::Config| {
        groups(
            n,
            cfg.get::<usize>(slots::WG),
            cfg.get::<usize>(slots::VW),
            cfg.get::<usize>(slots::UNROLL),
            cfg.get::<usize>(slots::GPC),
            cus,
        )
    };
    let parts = [c.scratch::<f32>(most), c.scratch::<f32>(most)];
    // Written by the last pass (or zeroed by the host code before the atomics).
    let sum = c.output(BufferArg::zeros::<f32>(1));
    let ids = Ids {
        reduce,
        x,
        parts,
        sum,
    };
    c.host(move |run| host(run, ids, n, cus).map(|_| ()));
    let expected = Arc::new(data(n).iter().map(|&v| f64::from(v)).sum::<f64>());
    c.reference(move |_| Ok(vec![HostData::from(vec![*expected as f32])]));
    // Exact for sums below 2^24; beyond, float rounding of the partial sums.
    c.tolerance(Tolerance::Relative(1e-6));
    // KTT's starting point: 256 work-items, scalar loads, passes over the whole grid.
    let default = space.config_from_values([
        ("WG", tune::Value::UInt(256.min(max_wg) as u64)),
        ("VW", tune::Value::UInt(1)),
        ("UNROLL", tune::Value::UInt(1)),
        ("GPC", tune::Value::UInt(0)),
        ("ATOMICS", tune::Value::Bool(false)),
    ])?;
    Ok((
        Case {
            name: "ktt_reduction".into(),
            input: format!("n={n}"),
            space,
            composition: c,
            default,
            bytes: 4.0 * n as f64,
            elements: n as f64,
        },
        ids,
    ))
}
