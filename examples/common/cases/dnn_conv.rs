//! BEAST's DNN convolution layers (kernels/dnn_conv/: one kernel body for OpenCL C and
//! CUDA C, prefixed by a dialect prelude): the forward pass of a convolutional layer in
//! NCHW as an implicit GEMM through local memory, over BEAST's parameter families, in a
//! space pruned at BEAST's three levels:
//! - algorithm: block sizes are multiples of the thread dimensions, vector groups tile a
//!   work-item's share, the tiles load in whole rounds of the work-group;
//! - software: the tiles divide the layer (out channels, batch x output pixels);
//! - hardware: work-group size, registers (estimated from the tiles) and local memory
//!   within the device's, and at least 2 work-groups resident per compute unit (read from
//!   the device's properties, [`tune::backend::DeviceInfo`]).
//!
//! What the compiler produced is checked again right after compilation (registers,
//! spills, occupancy from the driver), and rejected with its cause before it runs.
//!
//! The kernel is the same on both backends; the CUDA space adds `MINB` (the minimum
//! resident blocks of `__launch_bounds__`), which OpenCL has no way to say.

use std::fmt;
use std::time::Duration;

use tune::backend::{BufferArg, DeviceInfo, KernelSpec, ReferenceKernel, Tolerance};
use tune::{Bound, Config, Param, Result, Space, SpaceBuilder};

use super::{Language, Sources, Study, Target, Work};

/// Slots of the parameters.
pub mod slot {
    #![allow(missing_docs)]
    pub const BM: usize = 0;
    pub const BN: usize = 1;
    pub const BK: usize = 2;
    pub const MDIM: usize = 3;
    pub const NDIM: usize = 4;
    pub const VS: usize = 5;
    pub const DB: usize = 6;
    pub const PADA: usize = 7;
    pub const PADB: usize = 8;
    pub const UNR: usize = 9;
    pub const FLAYOUT: usize = 10;
    pub const KORDER: usize = 11;
    pub const VA: usize = 12;
    pub const VB: usize = 13;
    pub const I32: usize = 14;
    pub const PRE: usize = 15;
    pub const SPLITK: usize = 16;
    pub const LCOLS: usize = 17;
    /// CUDA only.
    pub const MINB: usize = 18;
}
use slot::*;

/// One convolutional layer: batch `nb` of `c x h x w` images, `ko` filters of `c x r x s`,
/// stride `su x sv`, zero padding `ph x pw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Its name in its network (`L1`, `conv1_2`).
    pub name: &'static str,
    /// Batch size.
    pub nb: usize,
    /// Input channels.
    pub c: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels (filters).
    pub ko: usize,
    /// Filter height.
    pub r: usize,
    /// Filter width.
    pub s: usize,
    /// Vertical stride.
    pub su: usize,
    /// Horizontal stride.
    pub sv: usize,
    /// Vertical zero padding.
    pub ph: usize,
    /// Horizontal zero padding.
    pub pw: usize,
}

impl Layer {
    /// Output height.
    pub fn p(&self) -> usize {
        (self.h + 2 * self.ph - self.r) / self.su + 1
    }
    /// Output width.
    pub fn q(&self) -> usize {
        (self.w + 2 * self.pw - self.s) / self.sv + 1
    }
    /// Batch x output pixels: the GEMM's N.
    pub fn npq(&self) -> usize {
        self.nb * self.p() * self.q()
    }
    /// The reduction: the GEMM's K.
    pub fn crs(&self) -> usize {
        self.c * self.r * self.s
    }
    /// Floating-point operations of the forward pass (a multiply-add counts two).
    pub fn flops(&self) -> f64 {
        2.0 * self.ko as f64 * self.npq() as f64 * self.crs() as f64
    }
    /// The same layer at another batch size.
    pub fn batch(self, nb: usize) -> Layer {
        Layer { nb, ..self }
    }
    /// Backward-data (the gradient of the input) as a forward convolution, where the same
    /// kernel serves it: at stride 1 it is the forward pass over the output gradient (`ko`
    /// channels of `p x q`) with the filters flipped and their channels swapped
    /// ([`flip_filters`]), padded by `r - 1 - ph`. `None` at larger strides (a transposed
    /// convolution, which this kernel does not compute) or padding of a filter's size.
    pub fn backward_data(&self) -> Option<Layer> {
        if self.su != 1 || self.sv != 1 || self.ph >= self.r || self.pw >= self.s {
            return None;
        }
        Some(Layer {
            c: self.ko,
            h: self.p(),
            w: self.q(),
            ko: self.c,
            ph: self.r - 1 - self.ph,
            pw: self.s - 1 - self.pw,
            ..*self
        })
    }
    /// The reduction padded to a multiple of every `BK` (the filters' prepared rows).
    pub fn crs_padded(&self) -> usize {
        self.crs().next_multiple_of(MAX_BK)
    }
    /// The defines of the layer.
    fn defines(&self) -> [(&'static str, usize); 14] {
        [
            ("NB", self.nb),
            ("C", self.c),
            ("H", self.h),
            ("W", self.w),
            ("KO", self.ko),
            ("R", self.r),
            ("S", self.s),
            ("SU", self.su),
            ("SV", self.sv),
            ("PH", self.ph),
            ("PW", self.pw),
            ("P", self.p()),
            ("Q", self.q()),
            ("CRSP", self.crs_padded()),
        ]
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "n={},c={},h={},w={},k={},r={},s={},u={},v={},ph={},pw={}",
            self.nb,
            self.c,
            self.h,
            self.w,
            self.ko,
            self.r,
            self.s,
            self.su,
            self.sv,
            self.ph,
            self.pw
        )
    }
}

#[allow(clippy::too_many_arguments)]
const fn layer(
    name: &'static str,
    c: usize,
    hw: usize,
    ko: usize,
    rs: usize,
    stride: usize,
    pad: usize,
) -> Layer {
    Layer {
        name,
        nb: 128,
        c,
        h: hw,
        w: hw,
        ko,
        r: rs,
        s: rs,
        su: stride,
        sv: stride,
        ph: pad,
        pw: pad,
    }
}

/// AlexNet's convolutional layers as BEAST tuned them (convnet-benchmarks' one-tower
/// AlexNet, batch 128): Table 2's times give these sizes' flops.
pub const ALEXNET: [Layer; 5] = [
    layer("L1", 3, 224, 64, 11, 4, 2),
    layer("L2", 64, 27, 192, 5, 1, 2),
    layer("L3", 192, 13, 384, 3, 1, 1),
    layer("L4", 384, 13, 256, 3, 1, 1),
    layer("L5", 256, 13, 256, 3, 1, 1),
];

/// VGG16's distinct convolutional layers (3x3, stride 1, padding 1; batch 128):
/// `conv3_3`, `conv4_3` and `conv5_2`/`conv5_3` repeat shapes listed here once.
pub const VGG16: [Layer; 9] = [
    layer("conv1_1", 3, 224, 64, 3, 1, 1),
    layer("conv1_2", 64, 224, 64, 3, 1, 1),
    layer("conv2_1", 64, 112, 128, 3, 1, 1),
    layer("conv2_2", 128, 112, 128, 3, 1, 1),
    layer("conv3_1", 128, 56, 256, 3, 1, 1),
    layer("conv3_2", 256, 56, 256, 3, 1, 1),
    layer("conv4_1", 256, 28, 512, 3, 1, 1),
    layer("conv4_2", 512, 28, 512, 3, 1, 1),
    layer("conv5_1", 512, 14, 512, 3, 1, 1),
];

/// The pass a [`DnnConv`] computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pass {
    /// The forward convolution (and backward-data, as the forward pass of
    /// [`Layer::backward_data`]).
    #[default]
    Forward,
    /// Backward-filter: the filters' gradient `dW[KO x C*R*S]` from the input and the
    /// output gradient, a reduction over batch x output pixels (`BWDF` in the kernel).
    BackwardFilter,
}

impl Pass {
    /// The GEMM's reduction length: `C*R*S` forward, batch x output pixels backward.
    pub fn reduction(self, l: &Layer) -> usize {
        match self {
            Pass::Forward => l.crs(),
            Pass::BackwardFilter => l.npq(),
        }
    }
    /// The number of outputs: the output tensor, or the filters' gradient.
    pub fn outputs(self, l: &Layer) -> usize {
        match self {
            Pass::Forward => l.ko * l.npq(),
            Pass::BackwardFilter => l.ko * l.crs(),
        }
    }
    /// The GEMM's columns, rounded up to whole tiles of `bn`: output pixels forward (which
    /// `BN` divides), taps backward (the last tile partly past `C*R*S`).
    pub fn columns(self, l: &Layer, bn: usize) -> usize {
        match self {
            Pass::Forward => l.npq(),
            Pass::BackwardFilter => l.crs().next_multiple_of(bn.max(1)),
        }
    }
}

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

/// How the outputs are validated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Check {
    /// A direct convolution on the host (f64 accumulation), for small layers.
    #[default]
    Host,
    /// The reference kernel (one work-item per output, the definition read literally) on
    /// the device, for layers too large for the host.
    Kernel,
    /// No reference while tuning: the caller validates the tuned configuration once with
    /// [`Check::Kernel`] (examples/dnn_conv.rs `--validate best`), where validating every
    /// evaluation would move gigabytes (VGG16's early layers: 1.6 GB of output each).
    Deferred,
}

/// A layer, tuned with BEAST's space.
#[derive(Clone, Debug)]
pub struct DnnConv {
    /// The layer.
    pub layer: Layer,
    /// How its outputs are validated.
    pub check: Check,
    /// Which constraint levels the space applies (all by default).
    pub levels: Levels,
    /// Whether the compiled kernel is checked before it runs (no spills, 2 work-groups per
    /// compute unit); off only to measure what those checks reject.
    pub post_checks: bool,
    /// The pass computed.
    pub pass: Pass,
}

impl DnnConv {
    /// `layer`, validated on the host, with every constraint level.
    pub fn new(layer: Layer) -> Self {
        DnnConv {
            layer,
            check: Check::Host,
            levels: Levels::Hardware,
            post_checks: true,
            pass: Pass::Forward,
        }
    }
}

/// The kernel source in `language`: the dialect prelude and the shared body.
pub fn source(language: Language) -> &'static str {
    match language {
        Language::OpenCl => concat!(
            include_str!("../../../kernels/dnn_conv/prelude.cl"),
            include_str!("../../../kernels/dnn_conv/body.c")
        ),
        Language::Cuda => concat!(
            include_str!("../../../kernels/dnn_conv/prelude.cu"),
            include_str!("../../../kernels/dnn_conv/body.c")
        ),
    }
}

/// The largest `BK`: the filters' rows are padded to a multiple of it.
const MAX_BK: usize = 32;

/// The workspace of a split reduction (`SPLITK` partial tiles per output tile) stays within
/// this many bytes: the evaluator restores every buffer before each configuration.
pub const SPLIT_WORKSPACE_BYTES: usize = 128 << 20;

/// The value sets of the parameters (the Cartesian product's factors), in slot order.
/// Backward-filter has only the filters' order, FLAYOUT 0 (its A tile is the output
/// gradient, read along the reduction) and no offset table, and splits its long reduction
/// (batch x pixels) over up to 64 work-groups: its output has few tiles (AlexNet L2's
/// 192 x 1600 is 39 tiles of 64 x 128 for 132 compute units).
fn domains(language: Language, pass: Pass) -> Vec<(&'static str, Vec<usize>)> {
    let backward = pass == Pass::BackwardFilter;
    let pick = |forward: Vec<usize>, bwd: Vec<usize>| if backward { bwd } else { forward };
    let mut d = vec![
        // 48 and 96: out channels of 96, 192, 384 (AlexNet's) in 1, 2 or 4 tiles' worth
        // of work-groups where 64 or 128 leave few tiles.
        ("BM", vec![16, 32, 48, 64, 96, 128, 256]),
        ("BN", vec![16, 32, 64, 128, 256]),
        ("BK", vec![4, 8, 16, MAX_BK]),
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
            pick(vec![1, 2, 3, 4], vec![1, 2, 4, 8, 16, 32, 64]),
        ),
        ("LCOLS", vec![0, 8, 16]),
    ];
    if language == Language::Cuda {
        d.push(("MINB", vec![1, 2]));
    }
    d
}

/// The size of the unconstrained space: the product of the value sets.
pub fn cartesian(language: Language) -> u128 {
    domains(language, Pass::Forward)
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
    /// Local memory per work-group, bytes: the tiles, and with `PRE` the table of gather
    /// offsets (one int per reduction index, rounded up to `BK`).
    pub local_bytes: usize,
    /// Registers per work-item, estimated: accumulators, the operands of one k step, the
    /// next tile's loads, 3 per gathered pixel (window start, base) and 32 for loop
    /// counters, bases and addresses. NVRTC 13 for sm_90 used 213 for 64 x 128 tiles of
    /// 8 x 8 where this says 139, and the SGEMM case's 64 x 256 tiles of 16 x 8 compile
    /// without spills where this says 227: an estimate that prunes only the clearly
    /// hopeless (over 255), the compiled kernel is checked again.
    pub registers: usize,
}

/// The derived quantities of values `v` (slot order, up to `PRE`) on a layer whose
/// reduction is `crs` long.
pub fn derived(v: &[usize], crs: usize) -> Derived {
    let (bm, bn, bk, mdim, ndim) = (v[BM], v[BN], v[BK], v[MDIM], v[NDIM]);
    let nt = mdim * ndim;
    let (tm, tn) = (bm / mdim.max(1), bn / ndim.max(1));
    let vb = v[VB].max(1);
    let bcols = load_columns(v).max(1);
    let npx = (bn / (bcols * vb)) * vb;
    let nbuf = v[DB] + 1;
    let table = match (v[KORDER], v[PRE]) {
        (0, 1) => 4 * crs.div_ceil(bk.max(1)) * bk,
        _ => 0,
    };
    let local_bytes = 4 * nbuf * bk * (bm + v[PADA] + bn + v[PADB]) + table;
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
    let d = derived(v, 0);
    let (bm, bn, bk, va, vb) = (v[BM], v[BN], v[BK], v[VA], v[VB]);
    // The B tile's BN / VB columns load in rows of `w` work-items, NT / w rows at a time.
    let cols = bn / vb;
    let w = load_columns(v);
    let b_loads = w > 0 && w <= cols && cols % w == 0 && d.nt % w == 0 && bk % (d.nt / w) == 0;
    // A vector of VA runs along the out channels (FLAYOUT 1) or the reduction (FLAYOUT 0).
    let a_vectors = match v[FLAYOUT] {
        1 => bm % va == 0,
        _ => bk % va == 0,
    };
    bm % v[MDIM] == 0
        && bn % v[NDIM] == 0
        && d.tm % v[VS] == 0
        && d.tn % v[VS] == 0
        && (bm * bk) % (d.nt * va) == 0
        && bm * bk >= d.nt * va
        && a_vectors
        && bn % vb == 0
        && b_loads
}

/// Hardware: the device's limits and BEAST's 2 work-groups per compute unit. Limits the
/// device does not report are typical GPU values: 1024 work-items, 48 KiB of local memory.
fn hardware_ok(
    v: &[usize],
    crs: usize,
    dev: &DeviceInfo,
    language: Language,
    minb: Option<usize>,
) -> bool {
    let d = derived(v, crs);
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
        .work_groups_per_cu(d.nt, Some(d.registers), d.local_bytes)
        .map_or(2, |o| o.work_groups as usize);
    d.nt <= max_wg
        && d.nt % warp == 0
        && d.registers <= 255
        && (dev.registers_per_work_group == 0
            || d.registers * d.nt <= dev.registers_per_work_group as usize)
        && d.local_bytes <= local
        && occupancy >= 2.max(minb.unwrap_or(1))
}

/// Whether `config` (of a space of this case on `target`, at any level) passes the
/// hardware level: what the post-compilation checks would see if the space did not prune.
pub fn hardware_allows(layer: &Layer, target: &Target, config: &Config) -> bool {
    let minb = (target.language == Language::Cuda).then(|| config.get::<usize>(MINB));
    hardware_ok(
        &config_values(config),
        layer.crs(),
        &target.device,
        target.language,
        minb,
    )
}

/// The values of a configuration's slots (all but `MINB`).
fn config_values(config: &Config) -> Vec<usize> {
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
        Pass::BackwardFilter => 64,
    };
    let outputs = workspace_per_split(layer, pass);
    (1..=largest)
        .rev()
        .find(|&k| k * outputs * 4 <= SPLIT_WORKSPACE_BYTES)
        .unwrap_or(1)
}

/// The workspace of one slice: the outputs in whole tiles of up to 256 columns.
fn workspace_per_split(layer: &Layer, pass: Pass) -> usize {
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
    let language = target.language;
    let backward = pass == Pass::BackwardFilter;
    let (klen, pq) = (pass.reduction(layer), layer.p() * layer.q());
    let dev = target.device.clone();
    let l = *layer;
    let (ko, npq, channels, crs) = (l.ko, l.npq(), l.c, l.crs());
    let alg = levels >= Levels::Algorithm;
    let soft = levels >= Levels::Software;
    let hw = levels >= Levels::Hardware;
    let mut b = SpaceBuilder::new();
    for (name, vals) in domains(language, pass) {
        b = b.param(Param::<usize>::values(name, vals));
    }
    let upto = |last: usize| (0..=last).collect::<Vec<usize>>();
    // What the hardware level reads (the tiles, the gathered pixels and the offset
    // table): the fewer, the smaller the joint enumeration that builds the space.
    let mut hardware_reads = upto(PADB);
    hardware_reads.extend([KORDER, VB, PRE, LCOLS]);
    let mut tiles = upto(VS);
    tiles.extend([FLAYOUT, VA, VB, LCOLS]);
    b = b
        .constraint(&upto(NDIM), move |b| {
            !alg || {
                let v = values(b, &upto(NDIM));
                v[BM] % v[MDIM] == 0 && (v[BM] * v[BK]) % (v[MDIM] * v[NDIM]) == 0
            }
        })
        .label("algorithm: MDIM divides BM, the filter tile loads evenly")
        .constraint(&tiles.clone(), move |b| {
            !alg || algorithm_ok(&values(b, &tiles))
        })
        .label(
            "algorithm: NDIM divides BN, VS divides TM and TN, both tiles load evenly in \
             vectors of VA and VB",
        )
        .constraint(&[KORDER, LCOLS], move |b| {
            !alg || backward || b.get::<usize>(LCOLS) == 0 || b.get::<usize>(KORDER) == 0
        })
        .label(
            "algorithm: narrower load rows (LCOLS) only where consecutive rows are neighbouring \
             taps (the filters' order) or pixels (backward-filter)",
        )
        .constraint(&[KORDER, PRE], move |b| {
            !alg || b.get::<usize>(PRE) == 0 || b.get::<usize>(KORDER) == 0
        })
        .label("algorithm: precomputed offsets (PRE=1) only in the filters' order (KORDER=0)")
        .constraint(&[BM], move |b| !soft || ko % b.get::<usize>(BM) == 0)
        .label("software: BM divides the out channels")
        .constraint(&[BN], move |b| {
            !soft || backward || npq % b.get::<usize>(BN) == 0
        })
        .label("software: BN divides batch x output pixels (forward)")
        .constraint(&[BK], move |b| {
            !soft || !backward || klen % b.get::<usize>(BK) == 0
        })
        .label("software: BK divides batch x output pixels (backward-filter's reduction)")
        .constraint(&[BK, KORDER], move |b| {
            !soft || b.get::<usize>(KORDER) == 0 || channels % b.get::<usize>(BK) == 0
        })
        .label("software: channels innermost (KORDER=1) only where BK divides the channels")
        .constraint(&[FLAYOUT, VA], move |b| {
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
        })
        .label("software: filter vectors (VA) aligned: VA divides the filter rows")
        .constraint(&[BK, SPLITK], move |b| {
            let k = b.get::<usize>(SPLITK);
            !soft || k == 1 || (k <= max_split(&l, pass) && split_fits(klen, b.get(BK), k))
        })
        .label("software: a split reduction (SPLITK) leaves no slice empty and its workspace fits")
        .constraint(&[I32], move |b| {
            !soft || b.get::<usize>(I32) == 0 || fits_i32(&l)
        })
        .label("software: 32-bit offsets (I32=1) only where every tensor has under 2^31 elements")
        .constraint(&[PRE], move |b| {
            !soft || b.get::<usize>(PRE) == 0 || fits_packed_offsets(&l)
        })
        .label(
            "software: precomputed offsets (PRE=1) only where they pack in 23 bits and taps in 4",
        )
        .constraint(&hardware_reads.clone(), {
            let dev = dev.clone();
            let reads = hardware_reads.clone();
            move |b| !hw || hardware_ok(&values(b, &reads), crs, &dev, language, None)
        })
        .label("hardware: work-group size, registers, local memory, 2 work-groups per unit");
    if language == Language::Cuda {
        let mut reads = hardware_reads.clone();
        reads.push(MINB);
        b = b
            .constraint(&reads, move |b| {
                !hw || hardware_ok(
                    &values(b, &hardware_reads),
                    crs,
                    &dev,
                    language,
                    Some(b.get(MINB)),
                )
            })
            .label("hardware: MINB blocks fit on a multiprocessor");
    }
    b.build()
}

impl Study for DnnConv {
    fn name(&self) -> &'static str {
        "dnn_conv"
    }

    fn input(&self) -> String {
        // Backward-filter's records and best apart from the forward pass's of the layer.
        match self.pass {
            Pass::Forward => self.layer.to_string(),
            Pass::BackwardFilter => format!("bwd-filter,{}", self.layer),
        }
    }

    fn work(&self) -> Work {
        Work {
            flops: self.layer.flops(),
            bytes: 0.0,
        }
    }

    fn sources(&self) -> Sources {
        Sources {
            opencl: Some(source(Language::OpenCl)),
            cuda: Some(source(Language::Cuda)),
        }
    }

    fn space(&self, target: &Target) -> Result<Space> {
        space_for(&self.layer, target, self.levels, self.pass)
    }

    fn spec(&self, target: &Target, source: &str) -> Result<KernelSpec> {
        if self.pass == Pass::BackwardFilter {
            return self.backward_filter_spec(target, source);
        }
        let l = self.layer;
        let (input, filter) = (l.nb * l.c * l.h * l.w, l.ko * l.crs());
        let outputs = l.ko * l.npq();
        let kcrs = BufferArg::random::<f32>(filter, 2);
        // The tuned kernel's four layouts, the reduction padded with zeros to CRSP: made
        // once per layer (on the host here; a copy of the small filter tensor either way).
        let crsp = l.crs_padded();
        let kcrs_p = pad_rows(super::floats(&kcrs), l.ko, l.crs(), crsp);
        let crsk = transpose(&kcrs_p, l.ko, crsp);
        let krsc = pad_rows(
            &channels_innermost(&l, super::floats(&kcrs)),
            l.ko,
            l.crs(),
            crsp,
        );
        let rsck = transpose(&krsc, l.ko, crsp);
        // The split reduction's partial tiles and per-tile arrival counters.
        let split = max_split(&l, Pass::Forward);
        let workspace = if split > 1 { split * outputs } else { 1 };
        let tiles = l.ko.div_ceil(16) * l.npq().div_ceil(16);
        let groups = move |c: &Config| {
            c.get::<usize>(SPLITK) * (l.ko / c.get::<usize>(BM)) * (l.npq() / c.get::<usize>(BN))
        };
        let mut spec = KernelSpec::new(source, "dnn_conv");
        for (name, value) in l.defines() {
            spec = spec.define(name, value);
        }
        if target.language == Language::OpenCl {
            // `__launch_bounds__`'s MINB is CUDA's; the body reads it only there.
            spec = spec.define("MINB", 1);
        }
        let nt = |c: &Config| c.get::<usize>(MDIM) * c.get::<usize>(NDIM);
        let spec = spec
            .global(move |c| [groups(c) * nt(c)])
            .local(move |c| [nt(c)])
            .buffer(BufferArg::zeros::<f32>(outputs).output())
            .buffer(BufferArg::random::<f32>(input, 1))
            .buffer(kcrs)
            .buffer(BufferArg::from_vec(kcrs_p))
            .buffer(BufferArg::from_vec(crsk))
            .buffer(BufferArg::from_vec(krsc))
            .buffer(BufferArg::from_vec(rsck))
            .buffer(BufferArg::zeros::<f32>(workspace))
            .buffer(BufferArg::zeros::<u32>(tiles))
            .local_buffer::<f32>(move |c| derived(&config_values(c), l.crs()).local_bytes / 4)
            .warmups(1)
            .repetitions(5)
            .compile_time_limit(Duration::from_secs(60))
            .tolerance(Tolerance::Norm(1e-5));
        let spec = self.after_compiling(spec, target);
        Ok(match self.check {
            Check::Deferred => spec,
            Check::Host => spec.reference(move |host| {
                let x = host.buffer::<f32>(1)?;
                let f = host.buffer::<f32>(2)?;
                Ok(vec![host_conv(&l, x, f).into()])
            }),
            Check::Kernel => {
                let mut r = ReferenceKernel::new(source, "dnn_conv_reference")
                    .global([outputs.div_ceil(256) * 256])
                    .local([256]);
                for (name, value) in l.defines() {
                    r = r.define(name, value);
                }
                if target.language == Language::OpenCl {
                    r = r.define("MINB", 1);
                }
                let space = self.space(target)?;
                let first = space.get(0).ok_or_else(|| {
                    tune::Error::InvalidSpace("the layer's space is empty".into())
                })?;
                spec.reference_kernel(r.config(first))
            }
        })
    }

    fn known_good(&self, _target: &Target, space: &Space) -> Vec<Config> {
        if self.pass == Pass::BackwardFilter {
            return backward_filter_starts(space);
        }
        // The shapes of the SGEMM case's bests on an H100 and H200 (kernels/sgemm.cu: 64 x 128
        // tiles of 8 x 8 per work-item, float4 loads of both operands; 64 x 256 tiles of
        // 16 x 8), with 32-bit offsets; then the first with scalar loads and 64-bit
        // offsets, the kernel as it was before VA, VB and I32, for comparison within the
        // run; then the first with its reduction split in 2 and 3 (SPLITK), with
        // 96-channel tiles, with one gathered pixel per work-item in a row (VB=1) and, in the
        // filters' order, narrower load rows (LCOLS), so that a short search measures the
        // new parameters on every layer. Each where it fits this layer: channels innermost where they divide, else
        // in the filters' order with the precomputed offsets.
        let base = [
            ("BM", 64),
            ("BN", 128),
            ("BK", 16),
            ("MDIM", 8),
            ("NDIM", 16),
            ("VS", 4),
            ("DB", 1),
            ("PADA", 4),
            ("PADB", 0),
            ("UNR", 1),
            ("FLAYOUT", 1),
            ("VA", 4),
            ("VB", 4),
            ("I32", 1),
            ("PRE", 1),
            ("SPLITK", 1),
            ("LCOLS", 0),
            ("MINB", 2),
        ];
        let shapes: [&[(&str, i64)]; 9] = [
            &[],
            &[("BN", 256), ("MDIM", 4), ("NDIM", 32)],
            &[("VA", 1), ("VB", 1), ("I32", 0), ("PRE", 0)],
            &[("SPLITK", 2)],
            &[("SPLITK", 3)],
            &[("BM", 96)],
            // Pixels gathered one per work-item in a row: at stride 4 (AlexNet L1) four
            // side by side put a warp's loads 64 bytes apart, one apart puts them 16.
            &[("VB", 1)],
            // In the filters' order, rows of 8 or 16 work-items: a warp's loads cover 4 or 2
            // neighbouring taps of 8 or 16 pixels, sharing their sectors.
            &[("VB", 1), ("LCOLS", 8)],
            &[("VB", 1), ("LCOLS", 16)],
        ];
        // Where the channels can go innermost (BK=16 divides them), the filters' order is
        // not the layer's start, nor are its load rows.
        let channels_inner = self.layer.c % 16 == 0;
        let names: Vec<&str> = space.params().iter().map(|p| p.name()).collect();
        shapes
            .iter()
            .filter(|shape| !(channels_inner && shape.iter().any(|(n, _)| *n == "LCOLS")))
            .filter_map(|shape| {
                [1, 0].into_iter().find_map(|order| {
                    let given = base
                        .iter()
                        .map(|&(n, v)| {
                            let v = shape.iter().find(|(m, _)| *m == n).map_or(v, |s| s.1);
                            match n {
                                // PRE is the filters' order's only.
                                "PRE" if order == 1 => (n, 0),
                                _ => (n, v),
                            }
                        })
                        .chain([("KORDER", order)])
                        .filter(|(n, _)| names.contains(n))
                        .map(|(n, v)| (n, tune::Value::Int(v)));
                    space.config_from_values(given).ok()
                })
            })
            .collect()
    }
}

impl DnnConv {
    /// BEAST's hardware level once more, on what the compiler produced. Spills are CUDA's
    /// local memory; an OpenCL CPU device reports its whole stack as private memory, so
    /// OpenCL checks only the occupancy.
    fn after_compiling(&self, spec: KernelSpec, target: &Target) -> KernelSpec {
        match (self.post_checks, target.language) {
            (false, _) => spec,
            (true, Language::Cuda) => spec.max_spill_bytes(0).min_occupancy(2),
            (true, Language::OpenCl) => spec.min_occupancy(2),
        }
    }

    /// Backward-filter's spec: dW (output) from the input and the output gradient dY (in
    /// the filters' argument); the four prepared filter layouts are unused (one float each).
    fn backward_filter_spec(&self, target: &Target, source: &str) -> Result<KernelSpec> {
        let l = self.layer;
        let pass = Pass::BackwardFilter;
        let input = l.nb * l.c * l.h * l.w;
        let outputs = pass.outputs(&l);
        let split = max_split(&l, pass);
        let per_split = workspace_per_split(&l, pass);
        let tiles = l.ko.div_ceil(16) * pass.columns(&l, 256).div_ceil(16);
        let groups = move |c: &Config| {
            let bn = c.get::<usize>(BN);
            c.get::<usize>(SPLITK) * (l.ko / c.get::<usize>(BM)) * pass.columns(&l, bn) / bn
        };
        let nt = |c: &Config| c.get::<usize>(MDIM) * c.get::<usize>(NDIM);
        let mut spec = KernelSpec::new(source, "dnn_conv").define("BWDF", 1);
        for (name, value) in l.defines() {
            spec = spec.define(name, value);
        }
        if target.language == Language::OpenCl {
            spec = spec.define("MINB", 1);
        }
        let spec = spec
            .global(move |c| [groups(c) * nt(c)])
            .local(move |c| [nt(c)])
            .buffer(BufferArg::zeros::<f32>(outputs).output())
            .buffer(BufferArg::random::<f32>(input, 1))
            .buffer(BufferArg::random::<f32>(l.ko * l.npq(), 2))
            .buffer(BufferArg::zeros::<f32>(1))
            .buffer(BufferArg::zeros::<f32>(1))
            .buffer(BufferArg::zeros::<f32>(1))
            .buffer(BufferArg::zeros::<f32>(1))
            .buffer(BufferArg::zeros::<f32>(split * per_split))
            .buffer(BufferArg::zeros::<u32>(tiles))
            .local_buffer::<f32>(move |c| derived(&config_values(c), l.crs()).local_bytes / 4)
            .warmups(1)
            .repetitions(5)
            .compile_time_limit(Duration::from_secs(60))
            // Each output sums batch x pixels products in f32 (AlexNet L1: 387200); its
            // rounding grows with the square root of that, past the forward pass's 1e-5.
            .tolerance(Tolerance::Norm(1e-4));
        let spec = self.after_compiling(spec, target);
        Ok(match self.check {
            Check::Deferred => spec,
            Check::Host => spec.reference(move |host| {
                let x = host.buffer::<f32>(1)?;
                let dy = host.buffer::<f32>(2)?;
                Ok(vec![host_conv_backward_filter(&l, x, dy).into()])
            }),
            Check::Kernel => {
                let mut r = ReferenceKernel::new(source, "dnn_conv_reference_bwd_filter")
                    .global([outputs.div_ceil(256) * 256])
                    .local([256])
                    .define("BWDF", 1);
                for (name, value) in l.defines() {
                    r = r.define(name, value);
                }
                if target.language == Language::OpenCl {
                    r = r.define("MINB", 1);
                }
                let space = self.space(target)?;
                let first = space.get(0).ok_or_else(|| {
                    tune::Error::InvalidSpace("the layer's space is empty".into())
                })?;
                spec.reference_kernel(r.config(first))
            }
        })
    }
}

/// Backward-filter's starts: the SGEMM's 64 x 128 tiles of 8 x 8 with the reduction split
/// in 16 (39 tiles x 16 on AlexNet L2 fill 132 compute units about 5 times), then in 8 and
/// 32, with pairs of taps per work-item instead of 4, and 64 x 64 tiles.
fn backward_filter_starts(space: &Space) -> Vec<Config> {
    let base = [
        ("BM", 64),
        ("BN", 128),
        ("BK", 16),
        ("MDIM", 8),
        ("NDIM", 16),
        ("VS", 4),
        ("DB", 1),
        ("PADA", 4),
        ("PADB", 0),
        ("UNR", 1),
        ("FLAYOUT", 0),
        ("KORDER", 0),
        ("VA", 1),
        ("VB", 4),
        ("I32", 1),
        ("PRE", 0),
        ("SPLITK", 16),
        ("LCOLS", 0),
        ("MINB", 2),
    ];
    let shapes: [&[(&str, i64)]; 5] = [
        &[],
        &[("SPLITK", 8)],
        &[("SPLITK", 32)],
        &[("VB", 2)],
        &[("BN", 64), ("MDIM", 8), ("NDIM", 16), ("VS", 2), ("VB", 2)],
    ];
    let names: Vec<&str> = space.params().iter().map(|p| p.name()).collect();
    shapes
        .iter()
        .filter_map(|shape| {
            let given = base
                .iter()
                .map(|&(n, v)| (n, shape.iter().find(|(m, _)| *m == n).map_or(v, |s| s.1)))
                .filter(|(n, _)| names.contains(n))
                .map(|(n, v)| (n, tune::Value::Int(v)));
            space.config_from_values(given).ok()
        })
        .collect()
}

/// `m` rows of `n` transposed: the filters from KCRS to CRSK.
fn transpose(a: &[f32], m: usize, n: usize) -> Vec<f32> {
    let mut t = vec![0.0; a.len()];
    for i in 0..m {
        for j in 0..n {
            t[j * m + i] = a[i * n + j];
        }
    }
    t
}

/// `m` rows of `n`, each padded with zeros to `np`.
fn pad_rows(a: &[f32], m: usize, n: usize, np: usize) -> Vec<f32> {
    let mut out = vec![0.0; m * np];
    for (row, src) in out.chunks_mut(np).zip(a.chunks(n)) {
        row[..n].copy_from_slice(src);
    }
    out
}

/// The filters `w[k][c][r][s]` of `l` with the channels innermost: `w[k][r][s][c]`, the
/// order of the reduction when `KORDER` is 1.
fn channels_innermost(l: &Layer, w: &[f32]) -> Vec<f32> {
    let rs = l.r * l.s;
    let mut out = vec![0.0; w.len()];
    for k in 0..l.ko {
        for c in 0..l.c {
            for t in 0..rs {
                out[(k * rs + t) * l.c + c] = w[(k * l.c + c) * rs + t];
            }
        }
    }
    out
}

/// The filters of [`Layer::backward_data`]: `w[k][c][r][s]` of `l` as
/// `w'[c][k][R-1-r][S-1-s]`.
pub fn flip_filters(l: &Layer, w: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; w.len()];
    for k in 0..l.ko {
        for c in 0..l.c {
            for r in 0..l.r {
                for s in 0..l.s {
                    let (fr, fs) = (l.r - 1 - r, l.s - 1 - s);
                    out[((c * l.ko + k) * l.r + fr) * l.s + fs] =
                        w[((k * l.c + c) * l.r + r) * l.s + s];
                }
            }
        }
    }
    out
}

/// The gradient of the input from the gradient of the output `dy[n][k][p][q]`, by the
/// definition (each output's gradient sent back over its window), accumulated in f64:
/// `dx[n][c][h][w]`.
pub fn host_conv_backward_data(l: &Layer, dy: &[f32], w: &[f32]) -> Vec<f32> {
    let (p, q) = (l.p(), l.q());
    let mut dx = vec![0.0f64; l.nb * l.c * l.h * l.w];
    for n in 0..l.nb {
        for k in 0..l.ko {
            for y in 0..p {
                for x in 0..q {
                    let g = f64::from(dy[((n * l.ko + k) * p + y) * q + x]);
                    for c in 0..l.c {
                        for r in 0..l.r {
                            let Some(h) = (y * l.su + r).checked_sub(l.ph).filter(|&h| h < l.h)
                            else {
                                continue;
                            };
                            for s in 0..l.s {
                                let Some(v) = (x * l.sv + s).checked_sub(l.pw).filter(|&v| v < l.w)
                                else {
                                    continue;
                                };
                                let f = f64::from(w[((k * l.c + c) * l.r + r) * l.s + s]);
                                dx[((n * l.c + c) * l.h + h) * l.w + v] += g * f;
                            }
                        }
                    }
                }
            }
        }
    }
    dx.into_iter().map(|v| v as f32).collect()
}

/// The gradient of the filters from the input `x[n][c][h][w]` and the gradient of the
/// output `dy[n][k][p][q]`, by the definition, accumulated in f64: `dw[k][c][r][s]`.
pub fn host_conv_backward_filter(l: &Layer, x: &[f32], dy: &[f32]) -> Vec<f32> {
    let (p, q) = (l.p(), l.q());
    let mut dw = vec![0.0f64; l.ko * l.crs()];
    for n in 0..l.nb {
        for k in 0..l.ko {
            for y in 0..p {
                for v in 0..q {
                    let g = f64::from(dy[((n * l.ko + k) * p + y) * q + v]);
                    for c in 0..l.c {
                        for r in 0..l.r {
                            let Some(h) = (y * l.su + r).checked_sub(l.ph).filter(|&h| h < l.h)
                            else {
                                continue;
                            };
                            for s in 0..l.s {
                                let Some(w) = (v * l.sv + s).checked_sub(l.pw).filter(|&w| w < l.w)
                                else {
                                    continue;
                                };
                                let i = ((n * l.c + c) * l.h + h) * l.w + w;
                                dw[((k * l.c + c) * l.r + r) * l.s + s] += g * f64::from(x[i]);
                            }
                        }
                    }
                }
            }
        }
    }
    dw.into_iter().map(|v| v as f32).collect()
}

/// The forward convolution on the host, accumulated in f64: `out[n][k][p][q]`.
pub fn host_conv(l: &Layer, input: &[f32], filter: &[f32]) -> Vec<f32> {
    let (p, q) = (l.p(), l.q());
    let mut out = vec![0.0f32; l.nb * l.ko * p * q];
    for n in 0..l.nb {
        for k in 0..l.ko {
            for y in 0..p {
                for x in 0..q {
                    let mut sum = 0.0f64;
                    for c in 0..l.c {
                        for r in 0..l.r {
                            let h = (y * l.su + r) as isize - l.ph as isize;
                            if h < 0 || h >= l.h as isize {
                                continue;
                            }
                            for s in 0..l.s {
                                let w = (x * l.sv + s) as isize - l.pw as isize;
                                if w < 0 || w >= l.w as isize {
                                    continue;
                                }
                                let i = ((n * l.c + c) * l.h + h as usize) * l.w + w as usize;
                                let f = ((k * l.c + c) * l.r + r) * l.s + s;
                                sum += f64::from(input[i]) * f64::from(filter[f]);
                            }
                        }
                    }
                    out[((n * l.ko + k) * p + y) * q + x] = sum as f32;
                }
            }
        }
    }
    out
}
