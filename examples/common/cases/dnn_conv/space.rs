//! BEAST's space: the parameters' value sets and the constraints of its three levels
//! (algorithm, software, hardware), with the quantities they read.

use tune::backend::DeviceInfo;
use tune::{Bound, Config, Param, Result, Space, SpaceBuilder};

use super::direct::{
    algo_domain, direct_constraints, direct_domains, direct_hardware_ok, direct_offered,
};
use super::slot::*;
use super::{Language, Layer, Pass, Target};

/// How many of BEAST's constraint levels a space applies (each includes the ones before).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Levels {
    /// No constraint: the Cartesian product (only counted, never built).
    None,
    /// Algorithm: tiles are multiples of the thread dimensions and load evenly.
    Algorithm,
    /// Software: the tiles divide the layer.
    Software,
    /// Hardware: the device's work-group size, registers, local memory and occupancy.
    Hardware,
}

/// The largest `BK`: the filters' rows are padded to a multiple of it.
pub(super) const MAX_BK: usize = 32;

/// The values of `BK`.
const BKS: [usize; 4] = [4, 8, 16, MAX_BK];

/// The workspace of a split reduction (`SPLITK` partial tiles per output tile) stays within
/// this many bytes: the evaluator restores every buffer before each configuration.
pub const SPLIT_WORKSPACE_BYTES: usize = 128 << 20;

/// The value sets of the parameters (the Cartesian product's factors), in slot order.
/// Backward-filter has only the filters' order, FLAYOUT 0 (its A tile is the output
/// gradient, read along the reduction) and no offset table, and splits its long reduction
/// (batch x pixels) over up to 256 work-groups: its output has few tiles (AlexNet L2's
/// 192 x 1600 is 39 tiles of 64 x 128 for 132 compute units; L1's 64 x 363 is 12 of
/// 16 x 128, and 64, the largest split session 4 offered, won there).
///
/// The staged patch (PATCH, OSTAGE) is offered where no BK divides the channels: there the
/// filters' order is the only one and each gathered element costs the table read and the
/// bounds checks that the patch removes (AlexNet L1, VGG16 conv1_1: 3 channels), while
/// its local memory, every channel of the tile's input, stays small. Elsewhere the space
/// is session 4's (and so is its construction time: the two parameters multiply it 10x).
/// So are the output staged for unstaged tiles too (OSTAGE with PATCH 0) and the gather's
/// bounds checks by tap masks (MASK): that gather is the filters' order's alone; and, for
/// VGG16 conv1_1 (27 multiply-adds per output, 1.6 GB written), several pixel tiles per
/// work-group (TILES), the reduction's last step unpadded (KEXACT) and streaming output
/// stores (STCS, CUDA's), offered there and wherever the reduction is at most two of the
/// largest k steps: the other layers reduce over hundreds to thousands per output.
fn domains(language: Language, pass: Pass, layer: &Layer) -> Vec<(&'static str, Vec<usize>)> {
    let backward = pass == Pass::BackwardFilter;
    let pick = |forward: Vec<usize>, bwd: Vec<usize>| if backward { bwd } else { forward };
    let staged = !backward && BKS.iter().all(|bk| layer.c % bk != 0);
    let patch = |values: Vec<usize>| if staged { values } else { vec![0] };
    // A reduction of at most two of the largest k steps (VGG16 conv1_1's 27), or the
    // filters' order's (AlexNet L1's 363): few multiply-adds per output behind each gather.
    let short = staged || (!backward && layer.crs() <= 2 * MAX_BK);
    let short_only = |values: Vec<usize>, otherwise: usize| {
        if short {
            values
        } else {
            vec![otherwise]
        }
    };
    let offered = direct_offered(layer, pass);
    let mut d = vec![
        // The path: the implicit GEMM (0) or, for short reductions, the direct one (1).
        algo_domain(offered),
        // 48 and 96: out channels of 96, 192, 384 (AlexNet's) in 1, 2 or 4 tiles' worth
        // of work-groups where 64 or 128 leave few tiles.
        ("BM", vec![16, 32, 48, 64, 96, 128, 256]),
        ("BN", vec![16, 32, 64, 128, 256]),
        ("BK", BKS.to_vec()),
        ("MDIM", vec![2, 4, 8, 16, 32]),
        ("NDIM", vec![2, 4, 8, 16, 32]),
        ("VS", vec![1, 2, 4]),
        ("DB", vec![0, 1]),
        ("PADA", vec![0, 4]),
        ("PADB", vec![0, 4]),
        ("UNR", vec![0, 1]),
        ("FLAYOUT", pick(vec![0, 1], vec![0])),
        ("KORDER", pick(vec![0, 1], vec![0])),
        ("VA", vec![1, 4]),
        ("VB", vec![1, 2, 4]),
        ("I32", vec![0, 1]),
        ("PRE", pick(vec![0, 1], vec![0])),
        (
            "SPLITK",
            pick(vec![1, 2, 3, 4], vec![1, 2, 4, 8, 16, 32, 64, 128, 256]),
        ),
        ("LCOLS", vec![0, 8, 16]),
        // Output tiles of BN / PATCH x PATCH pixels of one image whose input patch is staged
        // in local memory once (0: BN consecutive pixels gathered from global memory).
        // 1: runs of BN pixels of one image, their patch the input rows under them.
        ("PATCH", patch(vec![0, 1, 8, 16, 32])),
        // The output tile written through local memory by runs of a channel's pixels.
        ("OSTAGE", patch(vec![0, 1])),
        // The unstaged gather's bounds checks by tap masks (PATCH 0, PRE 1).
        ("MASK", patch(vec![0, 1])),
        // Consecutive pixel tiles per work-group, pipelined (the next tile's gather in
        // flight while this one is multiplied): VGG16 conv1_1 multiplies 27 times per
        // output, too little for a single tile's compute to hide its gather's latency.
        ("TILES", short_only(vec![1, 2, 4, 8, 16], 1)),
        // The last k step multiplies only the rows up to C*R*S (27 of 32 on conv1_1).
        ("KEXACT", short_only(vec![0, 1], 0)),
        // The output stored with CUDA's streaming hint (OpenCL C has none).
        (
            "STCS",
            match language {
                Language::Cuda => short_only(vec![0, 1], 0),
                Language::OpenCl => vec![0],
            },
        ),
    ];
    // The direct path's (direct.rs), offered for short reductions.
    d.extend(direct_domains(offered, language));
    if language == Language::Cuda {
        d.push(("MINB", vec![1, 2]));
    }
    d
}

/// `doms` with each parameter of `pins` held at its value (a later pin of a parameter
/// replaces an earlier one). The first values of the others stay first, so a pinned path's
/// constraints still fix the other path's parameters at them (direct.rs).
fn pinned(
    mut doms: Vec<(&'static str, Vec<usize>)>,
    pins: &[(String, usize)],
) -> Result<Vec<(&'static str, Vec<usize>)>> {
    let all = doms.clone();
    for (name, v) in pins {
        let vals = all
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, vals)| vals)
            .ok_or_else(|| tune::Error::InvalidParam {
                name: name.clone(),
                reason: "pinned, but the space has no such parameter".into(),
            })?;
        if !vals.contains(v) {
            return Err(tune::Error::InvalidParam {
                name: name.clone(),
                reason: format!("pinned at {v}, which is not among its values {vals:?}"),
            });
        }
        if let Some((_, held)) = doms.iter_mut().find(|(n, _)| n == name) {
            *held = vec![*v];
        }
    }
    Ok(doms)
}

/// The size of `layer`'s unconstrained space: the product of the value sets.
pub fn cartesian(language: Language, layer: &Layer) -> u128 {
    domains(language, Pass::Forward, layer)
        .iter()
        .map(|(_, v)| v.len() as u128)
        .product()
}

/// A configuration's derived quantities, from its bound parameters.
#[derive(Clone, Copy, Debug)]
pub struct Derived {
    /// Work-items per work-group.
    pub nt: usize,
    /// Out channels per work-item.
    pub tm: usize,
    /// Pixels per work-item.
    pub tn: usize,
    /// Pixels a work-item gathers the input of (`VB` side by side, in `NPX / VB` groups).
    pub npx: usize,
    /// Local memory per work-group, bytes: the tiles, with `PRE` the table of gather
    /// offsets (one int per reduction index, rounded up to `BK`), and with `PATCH` the
    /// staged input patch.
    pub local_bytes: usize,
    /// Registers per work-item, estimated: accumulators, the operands of one k step, the
    /// next tile's loads, 3 per gathered pixel (window start, base) and 32 for loop
    /// counters, bases and addresses. NVRTC 13 for sm_90 used 213 for 64 x 128 tiles of
    /// 8 x 8 where this says 139, and the SGEMM case's 64 x 256 tiles of 16 x 8 compile
    /// without spills where this says 227: an estimate that prunes only the clearly
    /// hopeless (over 255), the compiled kernel is checked again.
    pub registers: usize,
}

/// The derived quantities of values `v` (slot order, up to `MASK`) on `layer`.
pub fn derived(v: &[usize], layer: &Layer) -> Derived {
    let crs = layer.crs();
    let (bm, bn, bk, mdim, ndim) = (v[BM], v[BN], v[BK], v[MDIM], v[NDIM]);
    let nt = mdim * ndim;
    let (tm, tn) = (bm / mdim.max(1), bn / ndim.max(1));
    let vb = v[VB].max(1);
    let bcols = load_columns(v).max(1);
    let npx = (bn / (bcols * vb)) * vb;
    let nbuf = v[DB] + 1;
    // MASK's table holds an offset and the tap's bits per entry (8 bytes).
    let table = match (v[KORDER], v[PRE], v[MASK]) {
        (0, 1, 1) => 8 * crs.div_ceil(bk.max(1)) * bk,
        (0, 1, _) => 4 * crs.div_ceil(bk.max(1)) * bk,
        _ => 0,
    };
    let staged = 4 * nbuf * bk * (bm + v[PADA] + bn + v[PADB]) + table + patch_bytes(v, layer);
    // The output tile staged through local memory reuses it: rows of BN + 1 floats with a
    // patch, BN + 4 without (the kernel's OLD: VS-wide stores stay aligned).
    let row = if v[PATCH] == 0 { bn + 4 } else { bn + 1 };
    let output = if v[OSTAGE] == 1 { 4 * bm * row } else { 0 };
    let local_bytes = staged.max(output);
    let loads = (bm * bk + bk * bn) / nt.max(1);
    let registers = tm * tn + tm + tn + loads + 3 * npx + 32;
    Derived {
        nt,
        tm,
        tn,
        npx,
        local_bytes,
        registers,
    }
}

/// The input patch of a `PATCH` tile in local memory, bytes (0 without): for each channel,
/// the `(TH - 1) * SU + R` input rows under `TH = BN / PATCH` output rows, each split by
/// the column's phase modulo `SV` into `SV` runs of `PATCH - 1 + ceil(S / SV)` (so that
/// neighbouring output pixels read neighbouring words at any stride), padded by up to 7
/// words so that the tile's next output row starts `PATCH` banks on (the kernel's PPAD).
///
/// `PATCH` 1: the full-width input rows under the `NR` output rows that `BN` consecutive
/// pixels of an image span at most, their next output row `Q` banks on (or within `SU`).
pub fn patch_bytes(v: &[usize], layer: &Layer) -> usize {
    let (tw, bn, q) = (v[PATCH], v[BN], layer.q());
    if tw == 0 || bn < tw || bn < 2 {
        return 0;
    }
    // Output rows spanned, and pixels per row of the tile.
    let (out_rows, row_len) = match tw {
        1 => ((bn + q - 2) / q + 1, q),
        _ => (bn / tw, tw),
    };
    let rows = (out_rows - 1) * layer.su + layer.r;
    let run = layer.sv * (row_len - 1 + layer.s.div_ceil(layer.sv));
    let pad = (0..8)
        .find(|t| ((layer.su * (run + t)) as i64 - row_len as i64).rem_euclid(32) < layer.su as i64)
        .unwrap_or(0);
    4 * layer.c * rows * (run + pad)
}

/// The forward pass's tiles of `bn` output pixels: runs of consecutive pixels (`patch` 0),
/// runs within one image (`patch` 1, the last partly past its end), or `bn / patch` rows
/// of `patch` pixels of one image, covering it with the last row and column of tiles
/// partly outside.
pub fn pixel_tiles(layer: &Layer, bn: usize, patch: usize) -> usize {
    match patch {
        0 => layer.npq() / bn.max(1),
        1 => layer.nb * (layer.p() * layer.q()).div_ceil(bn.max(1)),
        tw => {
            let th = (bn / tw).max(1);
            layer.nb * layer.p().div_ceil(th) * layer.q().div_ceil(tw)
        }
    }
}

/// The values of `slots` (the others 0), which the constraint must declare.
fn values(b: &Bound, slots: &[usize]) -> Vec<usize> {
    let mut v = vec![0; MINB + 1];
    for &s in slots {
        v[s] = b.get::<usize>(s);
    }
    v
}

/// The work-items loading one row of the B tile: `LCOLS`, or with 0 as many as fit (all
/// of the work-group or the row's BN / VB groups).
fn load_columns(v: &[usize]) -> usize {
    match v[LCOLS] {
        0 => (v[MDIM] * v[NDIM]).min(v[BN] / v[VB].max(1)),
        w => w,
    }
}

/// Algorithm: work-item tiles, vector groups and even loads of both tiles (reads `BM` to
/// `VS`, `FLAYOUT`, `VA` and `VB`).
fn algorithm_ok(v: &[usize]) -> bool {
    let (bm, bn, bk, va, vb) = (v[BM], v[BN], v[BK], v[VA], v[VB]);
    let nt = v[MDIM] * v[NDIM];
    let (tm, tn) = (bm / v[MDIM].max(1), bn / v[NDIM].max(1));
    // The B tile's BN / VB columns load in rows of `w` work-items, NT / w rows at a time.
    let cols = bn / vb;
    let w = load_columns(v);
    let b_loads = w > 0 && w <= cols && cols % w == 0 && nt % w == 0 && bk % (nt / w) == 0;
    // A vector of VA runs along the out channels (FLAYOUT 1) or the reduction (FLAYOUT 0).
    let a_vectors = match v[FLAYOUT] {
        1 => bm % va == 0,
        _ => bk % va == 0,
    };
    bm % v[MDIM] == 0
        && bn % v[NDIM] == 0
        && tm % v[VS] == 0
        && tn % v[VS] == 0
        && (bm * bk) % (nt * va) == 0
        && bm * bk >= nt * va
        && a_vectors
        && bn % vb == 0
        && b_loads
}

/// Hardware: the device's limits and BEAST's 2 work-groups per compute unit. Limits the
/// device does not report are typical GPU values: 1024 work-items, 48 KiB of local memory.
fn hardware_ok(
    v: &[usize],
    layer: &Layer,
    dev: &DeviceInfo,
    language: Language,
    minb: Option<usize>,
) -> bool {
    let d = derived(v, layer);
    fits_hardware(d.nt, d.registers, d.local_bytes, dev, language, minb)
}

/// Whether a work-group of `nt` work-items with `registers` each and `local_bytes` of
/// local memory fits the device, with at least 2 (or `minb`) per compute unit: the
/// hardware level of both paths.
pub(super) fn fits_hardware(
    nt: usize,
    registers: usize,
    local_bytes: usize,
    dev: &DeviceInfo,
    language: Language,
    minb: Option<usize>,
) -> bool {
    let max_wg = match dev.max_work_group_size {
        0 => 1024,
        n => n.min(1024),
    };
    // Tiles over 48 KiB do not pay off on CPUs (which report megabytes).
    let local = match dev.local_mem_bytes {
        0 => 48 * 1024,
        n if language == Language::OpenCl => n.min(64 * 1024),
        n => n,
    };
    let warp = (dev.warp_width as usize).max(1);
    let occupancy = dev
        .work_groups_per_cu(nt, Some(registers), local_bytes)
        .map_or(2, |o| o.work_groups as usize);
    nt <= max_wg
        && nt % warp == 0
        && registers <= 255
        && (dev.registers_per_work_group == 0
            || registers * nt <= dev.registers_per_work_group as usize)
        && local_bytes <= local
        && occupancy >= 2.max(minb.unwrap_or(1))
}

/// Whether `config` (of a space of this case on `target`, at any level) passes the
/// hardware level: what the post-compilation checks would see if the space did not prune.
pub fn hardware_allows(layer: &Layer, target: &Target, config: &Config) -> bool {
    let minb = (target.language == Language::Cuda).then(|| config.get::<usize>(MINB));
    if config.get::<usize>(ALGO) == 1 {
        let v = config_values(config);
        return direct_hardware_ok(&v, layer, &target.device, target.language, minb);
    }
    hardware_ok(
        &config_values(config),
        layer,
        &target.device,
        target.language,
        minb,
    )
}

/// The values of a configuration's slots (all but `MINB`).
pub(super) fn config_values(config: &Config) -> Vec<usize> {
    (0..MINB).map(|s| config.get::<usize>(s)).collect()
}

/// Whether every tensor of `layer` has fewer than 2^31 elements (32-bit offsets, `I32`).
pub fn fits_i32(layer: &Layer) -> bool {
    let limit = 1usize << 31;
    layer.nb * layer.c * layer.h * layer.w < limit
        && layer.ko * layer.npq() < limit
        && layer.ko * layer.crs() < limit
}

/// Whether a reduction split in `splitk` slices of whole k steps of `bk` leaves none empty.
pub fn split_fits(crs: usize, bk: usize, splitk: usize) -> bool {
    let steps = crs.div_ceil(bk.max(1));
    let per_slice = steps.div_ceil(splitk.max(1));
    (splitk.max(1) - 1) * per_slice < steps
}

/// The largest `SPLITK` of `pass` whose workspace (`SPLITK` partial outputs, in whole
/// tiles) fits [`SPLIT_WORKSPACE_BYTES`].
pub fn max_split(layer: &Layer, pass: Pass) -> usize {
    let largest = match pass {
        Pass::Forward => 4,
        Pass::BackwardFilter => 256,
    };
    let outputs = workspace_per_split(layer, pass);
    (1..=largest)
        .rev()
        .find(|&k| k * outputs * 4 <= SPLIT_WORKSPACE_BYTES)
        .unwrap_or(1)
}

/// The workspace of one slice: the outputs in whole tiles of up to 256 columns.
pub(super) fn workspace_per_split(layer: &Layer, pass: Pass) -> usize {
    layer.ko * pass.columns(layer, 256)
}

/// Whether `PRE`'s packed table entry (offset << 8 | r << 4 | s) holds `layer`'s offsets
/// and taps.
pub fn fits_packed_offsets(layer: &Layer) -> bool {
    layer.r <= 16
        && layer.s <= 16
        && layer.c * layer.h * layer.w + layer.r * layer.w + layer.s < 1 << 23
}

/// The space of `layer` on `target` with the constraints of `levels`.
///
/// # Errors
/// As [`SpaceBuilder::build`] (an empty space names the constraints that empty it).
pub fn space(layer: &Layer, target: &Target, levels: Levels) -> Result<Space> {
    space_for(layer, target, levels, Pass::Forward)
}

/// The space of `pass` on `layer` ([`space`] for the forward pass).
///
/// # Errors
/// As [`SpaceBuilder::build`].
pub fn space_for(layer: &Layer, target: &Target, levels: Levels, pass: Pass) -> Result<Space> {
    space_pinned(layer, target, levels, pass, &[])
}

/// [`space_for`] with the parameters of `pins` held at their one value each: the part of
/// the space that has them (`ALGO` 1: the direct path alone), built with the same levels.
///
/// # Errors
/// A pinned parameter that the space does not have, or a value outside its set; as
/// [`SpaceBuilder::build`].
pub fn space_pinned(
    layer: &Layer,
    target: &Target,
    levels: Levels,
    pass: Pass,
    pins: &[(String, usize)],
) -> Result<Space> {
    let language = target.language;
    let backward = pass == Pass::BackwardFilter;
    let (klen, pq) = (pass.reduction(layer), layer.p() * layer.q());
    let dev = target.device.clone();
    let direct_dev = target.device.clone();
    let l = *layer;
    let (ko, npq, channels, p, q) = (l.ko, l.npq(), l.c, l.p(), l.q());
    let alg = levels >= Levels::Algorithm;
    let soft = levels >= Levels::Software;
    let hw = levels >= Levels::Hardware;
    let mut b = SpaceBuilder::new();
    let doms = pinned(domains(language, pass, layer), pins)?;
    for (name, vals) in doms.clone() {
        b = b.param(Param::<usize>::values(name, vals));
    }
    let upto = |last: usize| (BM..=last).collect::<Vec<usize>>();
    // Where the direct path (ALGO 1) is offered, from the software level on every GEMM
    // constraint holds for it (its GEMM parameters are fixed at their first values
    // instead, by direct.rs): `gate` adds ALGO to what a constraint reads, `skip` passes
    // the direct configurations. Below the software level ALGO joins no GEMM constraint.
    let direct = soft && direct_offered(layer, pass);
    let gate = move |reads: &[usize]| {
        let mut r = reads.to_vec();
        if direct {
            r.push(ALGO);
        }
        r
    };
    let skip = move |b: &Bound| direct && b.get::<usize>(ALGO) == 1;
    // What the hardware level reads (the tiles, the gathered pixels and the offset
    // table): the fewer, the smaller the joint enumeration that builds the space.
    let mut hardware_reads = upto(PADB);
    hardware_reads.extend([KORDER, VB, PRE, LCOLS, PATCH, OSTAGE, MASK]);
    let mut tiles = upto(VS);
    tiles.extend([FLAYOUT, VA, VB, LCOLS]);
    b = b
        .constraint(&gate(&upto(NDIM)), move |b| {
            skip(b) || {
                !alg || {
                    let v = values(b, &upto(NDIM));
                    v[BM] % v[MDIM] == 0 && (v[BM] * v[BK]) % (v[MDIM] * v[NDIM]) == 0
                }
            }
        })
        .label("algorithm: MDIM divides BM, the filter tile loads evenly")
        .constraint(&gate(&tiles.clone()), move |b| {
            skip(b) || { !alg || algorithm_ok(&values(b, &tiles)) }
        })
        .label(
            "algorithm: NDIM divides BN, VS divides TM and TN, both tiles load evenly in \
             vectors of VA and VB",
        )
        .constraint(&gate(&[KORDER, LCOLS]), move |b| {
            skip(b) || {
                !alg || backward || b.get::<usize>(LCOLS) == 0 || b.get::<usize>(KORDER) == 0
            }
        })
        .label(
            "algorithm: narrower load rows (LCOLS) only where consecutive rows are neighbouring \
             taps (the filters' order) or pixels (backward-filter)",
        )
        .constraint(&gate(&[KORDER, PRE]), move |b| {
            skip(b) || { !alg || b.get::<usize>(PRE) == 0 || b.get::<usize>(KORDER) == 0 }
        })
        .label("algorithm: precomputed offsets (PRE=1) only in the filters' order (KORDER=0)")
        .constraint(&gate(&[BN, KORDER, PRE, PATCH]), move |b| {
            skip(b) || {
                let tw = b.get::<usize>(PATCH);
                !alg || tw == 0
                    || (b.get::<usize>(BN) % tw == 0
                        && b.get::<usize>(KORDER) == 0
                        && b.get::<usize>(PRE) == 1)
            }
        })
        .label(
            "algorithm: a staged patch (PATCH) tiles BN pixels as BN / PATCH rows of PATCH and \
             reads it through the offset table (the filters' order, PRE=1)",
        )
        .constraint(&gate(&[KORDER, PRE, PATCH, MASK]), move |b| {
            skip(b) || {
                !alg || b.get::<usize>(MASK) == 0
                    || (b.get::<usize>(KORDER) == 0
                        && b.get::<usize>(PRE) == 1
                        && b.get::<usize>(PATCH) == 0)
            }
        })
        .label(
            "algorithm: tap masks (MASK=1) check the unstaged gather (PATCH=0) through the \
             offset table (the filters' order, PRE=1)",
        )
        .constraint(&gate(&[BM]), move |b| {
            skip(b) || !soft || ko % b.get::<usize>(BM) == 0
        })
        .label("software: BM divides the out channels")
        .constraint(&gate(&[BN, PATCH]), move |b| {
            skip(b) || {
                let (bn, tw) = (b.get::<usize>(BN), b.get::<usize>(PATCH));
                !soft
                    || backward
                    || match tw {
                        0 => npq % bn == 0,
                        1 => bn <= (p * q).next_power_of_two(),
                        _ => tw <= q.next_power_of_two() && bn / tw <= p.next_power_of_two(),
                    }
            }
        })
        .label(
            "software: BN divides batch x output pixels (forward), or a patch tile is no larger \
             than the image rounded up to powers of 2",
        )
        .constraint(&gate(&[SPLITK, PATCH]), move |b| {
            skip(b) || { !soft || b.get::<usize>(PATCH) == 0 || b.get::<usize>(SPLITK) == 1 }
        })
        .label("software: a staged patch (PATCH) only unsplit (its tiles fill the device)")
        .constraint(&gate(&[BK]), move |b| {
            skip(b) || { !soft || !backward || klen % b.get::<usize>(BK) == 0 }
        })
        .label("software: BK divides batch x output pixels (backward-filter's reduction)")
        .constraint(&gate(&[BK, KORDER]), move |b| {
            skip(b) || {
                !soft || b.get::<usize>(KORDER) == 0 || channels % b.get::<usize>(BK) == 0
            }
        })
        .label("software: channels innermost (KORDER=1) only where BK divides the channels")
        .constraint(&gate(&[FLAYOUT, VA]), move |b| {
            skip(b) || {
                let wide = b.get::<usize>(VA);
                // 16-byte aligned vectors: rows of KO (FLAYOUT 1) or of the padded reduction
                // (FLAYOUT 0) floats; backward, an image's output pixels.
                let row = if backward {
                    pq
                } else if b.get::<usize>(FLAYOUT) == 1 {
                    ko
                } else {
                    l.crs_padded()
                };
                !soft || row % wide == 0
            }
        })
        .label("software: filter vectors (VA) aligned: VA divides the filter rows")
        .constraint(&gate(&[BK, SPLITK]), move |b| {
            skip(b) || {
                let k = b.get::<usize>(SPLITK);
                !soft || k == 1 || (k <= max_split(&l, pass) && split_fits(klen, b.get(BK), k))
            }
        })
        .label("software: a split reduction (SPLITK) leaves no slice empty and its workspace fits")
        .constraint(&gate(&[I32]), move |b| {
            skip(b) || { !soft || b.get::<usize>(I32) == 0 || fits_i32(&l) }
        })
        .label("software: 32-bit offsets (I32=1) only where every tensor has under 2^31 elements")
        .constraint(&gate(&[PRE]), move |b| {
            skip(b) || { !soft || b.get::<usize>(PRE) == 0 || fits_packed_offsets(&l) }
        })
        .label(
            "software: precomputed offsets (PRE=1) only where they pack in 23 bits and taps in 4",
        )
        .constraint(&gate(&[I32, MASK]), move |b| {
            skip(b) || { !soft || b.get::<usize>(MASK) == 0 || b.get::<usize>(I32) == 1 }
        })
        .label("software: tap masks (MASK=1) with 32-bit pixel offsets (I32=1)")
        .constraint(&gate(&hardware_reads), {
            let dev = dev.clone();
            let reads = hardware_reads.clone();
            move |b| skip(b) || !hw || hardware_ok(&values(b, &reads), &l, &dev, language, None)
        })
        .label("hardware: work-group size, registers, local memory, 2 work-groups per unit");
    if soft {
        // At the software level only: a constraint reading TILES joins it to the tiles'
        // group of parameters, and the algorithm level's group (s1's 347 million
        // configurations) then grew past the builder's memory.
        // Channels innermost too since session 9 (sessions 7-8 left them out: wrong results
        // through NVRTC, now traced to the gather's read-only loads; body.c's LDG_B).
        b = b
            .constraint(&gate(&[BN, SPLITK, PATCH, OSTAGE, TILES]), move |b| {
                skip(b) || {
                    let tiles = b.get::<usize>(TILES);
                    tiles == 1
                        || (b.get::<usize>(PATCH) == 0
                            && b.get::<usize>(OSTAGE) == 0
                            && b.get::<usize>(SPLITK) == 1
                            && (npq / b.get::<usize>(BN)) % tiles == 0)
                }
            })
            .label(
                "software: several pixel tiles per work-group (TILES) only unstaged (PATCH=0), \
                 unsplit (SPLITK=1), with the output from registers (OSTAGE=0: its staging \
                 overwrites the offset table) and dividing the pixel tiles",
            );
    }
    if language == Language::Cuda {
        let mut reads = hardware_reads.clone();
        reads.push(MINB);
        b = b
            .constraint(&gate(&reads), move |b| {
                skip(b) || {
                    !hw || hardware_ok(
                        &values(b, &hardware_reads),
                        &l,
                        &dev,
                        language,
                        Some(b.get(MINB)),
                    )
                }
            })
            .label("hardware: MINB blocks fit on a multiprocessor");
    }
    if direct_offered(layer, pass) {
        // The GEMM's parameters but UNR (the direct path's channel loop) and STCS (its
        // stores), and the direct path's, each with its first value.
        let first = |slot: usize| doms[slot].1[0];
        let gemm_first: Vec<(usize, usize)> = (BM..=KEXACT)
            .filter(|&s| s != UNR)
            .map(|s| (s, first(s)))
            .collect();
        let direct_first: Vec<(usize, usize)> = (DPX..=DOST).map(|s| (s, first(s))).collect();
        b = direct_constraints(
            b,
            layer,
            &direct_dev,
            language,
            &gemm_first,
            &direct_first,
            soft,
            hw,
        );
    }
    b.build()
}
