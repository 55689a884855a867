//! KTT's radix sort (thesis, section 6.2) as a composition of three kernels sharing their
//! tuning parameters: per pass of `RADIX_BITS` bits, `histogram`, `scan` and `scatter`,
//! with the key buffers swapped between passes.
//!
//! Parameters: `RADIX_BITS` (bits per pass: 32 / RADIX_BITS passes), `WG` (work-group
//! size), `ITEMS` (keys per work-item in a tile), `BLOCKS` (work-groups, each sorting a
//! contiguous chunk; KTT's "GLOBAL_SIZE"). The tile and its bookkeeping must fit the
//! device's local memory.

use tune::backend::composition::{BufferId, Composition, KernelId, KernelSource, Run};
use tune::backend::{Backend, BufferArg, DeviceInfo, HostData, Tolerance};
use tune::{Bound, Failure, Param, SpaceBuilder};

use super::{is_cuda, mix, Case};

/// The OpenCL kernels.
pub const CL: &str = include_str!("../../kernels/radix_sort.cl");
/// The CUDA kernels.
pub const CU: &str = include_str!("../../kernels/radix_sort.cu");

/// Parameter slots.
pub mod slots {
    /// Bits per pass.
    pub const RADIX_BITS: usize = 0;
    /// Work-group size.
    pub const WG: usize = 1;
    /// Keys per work-item in a tile.
    pub const ITEMS: usize = 2;
    /// Work-groups.
    pub const BLOCKS: usize = 3;
}

/// `n` pseudo-random 32-bit keys.
pub fn keys(n: usize) -> Vec<u32> {
    (0..n as u64).map(|i| mix(i, 11) as u32).collect()
}

/// Local memory of the scatter kernel in bytes: the tile, the scan, three digit tables.
pub fn local_bytes(bits: usize, wg: usize, items: usize) -> usize {
    4 * (wg * items + wg + 3 * (1 << bits))
}

/// The kernels and buffers the host code uses.
#[derive(Clone, Copy, Debug)]
pub struct Ids {
    /// Per-group digit counts.
    pub histogram: KernelId,
    /// Their exclusive scan.
    pub scan: KernelId,
    /// The local sort and the scatter.
    pub scatter: KernelId,
    /// The keys (sorted in place).
    pub keys: BufferId,
    /// The other key buffer of each pass.
    pub tmp: BufferId,
    /// The histograms.
    pub hist: BufferId,
}

/// The sort's host code: three launches per pass, the key buffers swapped after each.
///
/// # Errors
/// A launch's failure.
pub fn host<B: Backend>(run: &mut Run<'_, B>, ids: Ids, n: usize) -> Result<(), Failure> {
    let c = run.config();
    let (bits, wg, items, blocks) = (
        c.get::<usize>(slots::RADIX_BITS),
        c.get::<usize>(slots::WG),
        c.get::<usize>(slots::ITEMS),
        c.get::<usize>(slots::BLOCKS),
    );
    let tile = wg * items;
    let chunk = n.div_ceil(blocks).div_ceil(tile) * tile;
    let len = (1usize << bits) * blocks;
    for pass in 0..32 / bits {
        let shift = (pass * bits) as u32;
        run.launch(ids.histogram)
            .global([blocks * wg])
            .local([wg])
            .arg(ids.keys)
            .arg(ids.hist)
            .scalar(n as u32)
            .scalar(shift)
            .scalar(chunk as u32)
            .run()?;
        run.launch(ids.scan)
            .global([wg])
            .local([wg])
            .arg(ids.hist)
            .scalar(len as u32)
            .run()?;
        run.launch(ids.scatter)
            .global([blocks * wg])
            .local([wg])
            .arg(ids.keys)
            .arg(ids.tmp)
            .arg(ids.hist)
            .scalar(n as u32)
            .scalar(shift)
            .scalar(chunk as u32)
            .run()?;
        run.swap(ids.keys, ids.tmp)?;
    }
    Ok(())
}

/// The radix sort of `n` keys on `device`.
///
/// # Errors
/// An invalid space (a device with too little local memory for any tile).
pub fn case<B: Backend>(device: &DeviceInfo, n: usize) -> tune::Result<(Case<B>, Ids)> {
    let cuda = is_cuda(device);
    let max_wg = device.max_work_group_size.max(32);
    let local = if device.local_mem_bytes == 0 {
        48 * 1024
    } else if cuda {
        // Static shared memory is limited to 48 KiB per block.
        device.local_mem_bytes.min(48 * 1024)
    } else {
        device.local_mem_bytes
    };
    let space = SpaceBuilder::new()
        .param(Param::<usize>::values("RADIX_BITS", [2, 4, 8]))
        .param(Param::<usize>::values(
            "WG",
            [32, 64, 128, 256, 512]
                .into_iter()
                .filter(move |&w| w <= max_wg),
        ))
        .param(Param::<usize>::values("ITEMS", [1, 2, 4, 8]).constraint(
            &[slots::RADIX_BITS, slots::WG],
            move |b: &Bound| {
                local_bytes(
                    b.get::<usize>(slots::RADIX_BITS),
                    b.get::<usize>(slots::WG),
                    b.get::<usize>(slots::ITEMS),
                ) <= local
            },
        ))
        .param(Param::<usize>::values(
            "BLOCKS",
            [16, 32, 64, 128, 256, 512, 1024, 2048],
        ))
        .build()?;
    let mut c = Composition::<B>::new();
    let src = if cuda { CU } else { CL };
    let histogram = c.kernel(KernelSource::new(src, "histogram"));
    let scan = c.kernel(KernelSource::new(src, "scan"));
    let scatter = c.kernel(KernelSource::new(src, "scatter"));
    let data = keys(n);
    let mut sorted = data.clone();
    sorted.sort_unstable();
    let keys = c.buffer(BufferArg::from_vec(data).output());
    let tmp = c.scratch::<u32>(move |_| n);
    let hist = c.scratch::<u32>(|cfg| {
        (1usize << cfg.get::<usize>(slots::RADIX_BITS)) * cfg.get::<usize>(slots::BLOCKS)
    });
    let ids = Ids {
        histogram,
        scan,
        scatter,
        keys,
        tmp,
        hist,
    };
    c.host(move |run| host(run, ids, n));
    c.reference(move |_| Ok(vec![HostData::from(sorted.clone())]));
    c.tolerance(Tolerance::Exact);
    // KTT's example's middle values: 4-bit digits, 128 work-items, one key each, 256 groups.
    let default = space.config_from_values([
        ("RADIX_BITS", tune::Value::UInt(4)),
        ("WG", tune::Value::UInt(128.min(max_wg) as u64)),
        ("ITEMS", tune::Value::UInt(1)),
        ("BLOCKS", tune::Value::UInt(256)),
    ])?;
    Ok((
        Case {
            name: "ktt_radix_sort".into(),
            input: format!("n={n}"),
            space,
            composition: c,
            default,
            bytes: 8.0 * n as f64,
            elements: n as f64,
        },
        ids,
    ))
}
