//! The direct, register-blocked path for short reductions (`ALGO` 1; kernels/dnn_conv/
//! direct.c): its parameters, derived quantities and constraints, beside the implicit
//! GEMM's (space.rs). Offered on the forward pass where `C*R*S` is at most
//! [`DIRECT_MAX_CRS`] (VGG16 conv1_1's 27); elsewhere each of its parameters has one value
//! and the layer's space is the GEMM's alone.

use tune::backend::DeviceInfo;
use tune::{Bound, Config, Space, SpaceBuilder, Value};

use super::slot::*;
use super::{Language, Layer, Pass};

/// The longest reduction (`C*R*S`) the direct path is offered for: each work-item keeps its
/// out channels' weights for one input row in registers and multiplies every input value
/// `S` times, so the whole reduction runs without a k loop; longer ones are the GEMM's.
pub const DIRECT_MAX_CRS: usize = 64;

/// `ALGO` (0: the implicit GEMM, 1: the direct path) where the direct path is offered.
pub(super) fn algo_domain(offered: bool) -> (&'static str, Vec<usize>) {
    ("ALGO", if offered { vec![0, 1] } else { vec![0] })
}

/// The direct path's parameters (in slot order, after the GEMM's) and their values where it
/// is offered; the first value of each is the only one elsewhere, and the one every
/// configuration of the other path has.
pub(super) fn direct_domains(offered: bool, language: Language) -> Vec<(&'static str, Vec<usize>)> {
    let d = vec![
        // Output pixels per work-item along W, in quads of 4 (float4 stores) DWX quads apart.
        ("DPX", vec![4, 8, 16]),
        // Out channels per work-item (float4 weight reads).
        ("DQK", vec![4, 8, 16, 32]),
        // Work-items along W, along H and over out-channel groups.
        ("DWX", vec![1, 2, 4, 8, 16, 32]),
        ("DWY", vec![1, 2, 4, 8, 16, 32]),
        ("DWK", vec![1, 2, 4, 8]),
        // Weights in local memory (0) or read from global memory (1).
        ("DWMEM", vec![0, 1]),
        // Input from global memory (0) or a halo tile in local memory (1).
        ("DXMEM", vec![0, 1]),
        // Row blocks per work-group (with the halo tile, the next block's input is loaded
        // while this one is multiplied). 32 and 64 since session 10: its H200 call tuned
        // conv1_1 to 16 rows of one row each, the largest value then.
        ("DROWS", vec![1, 2, 4, 8, 16, 32, 64]),
        // The output stored from registers (0) or staged per row block in local memory and
        // written from there (1): on sm_90 by asynchronous bulk copies that drain while the
        // next row block is multiplied, elsewhere by the work-group's stores; 2 (CUDA) the
        // latter on every device (staging without the copy engine, for comparison).
        (
            "DOST",
            match language {
                Language::Cuda => vec![0, 1, 2],
                Language::OpenCl => vec![0, 1],
            },
        ),
    ];
    if offered {
        d
    } else {
        d.into_iter().map(|(n, v)| (n, vec![v[0]])).collect()
    }
}

/// Whether the direct path is offered for `pass` on `layer`.
pub fn direct_offered(layer: &Layer, pass: Pass) -> bool {
    pass == Pass::Forward && layer.crs() <= DIRECT_MAX_CRS
}

/// A direct configuration's derived quantities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirectDerived {
    /// Work-items per work-group.
    pub nt: usize,
    /// Out channels per work-group.
    pub channels: usize,
    /// Work-groups of the launch.
    pub groups: usize,
    /// Local memory per work-group, bytes (the weights, the halo tile and the staged
    /// output's two buffers; at least 16).
    pub local_bytes: usize,
    /// Registers per work-item, estimated: the accumulators, one input row under each quad
    /// of pixels, one tap's weights, the next row block's share of the halo tile (in flight
    /// while this one is multiplied) and 24 for addresses and counters (the compiled kernel
    /// is checked again).
    pub registers: usize,
}

/// The direct path's derived quantities of values `v` (slot order) on `layer`.
pub fn direct_derived(v: &[usize], layer: &Layer) -> DirectDerived {
    let (dpx, dqk) = (v[DPX].max(1), v[DQK].max(1));
    let (dwx, dwy, dwk) = (v[DWX].max(1), v[DWY].max(1), v[DWK].max(1));
    let nt = dwx * dwy * dwk;
    let channels = dwk * dqk;
    let cols = dwx * dpx;
    // The input values under a quad of 4 pixels, in float4s.
    let nq4 = (3 * layer.sv + layer.s).next_multiple_of(4);
    let row_blocks = layer.p().div_ceil(dwy * v[DROWS].max(1));
    let groups = layer.nb * row_blocks * layer.q().div_ceil(cols) * (layer.ko / channels).max(1);
    // The kernel's XLD: the halo tile's rows, 16-byte aligned, 4 banks on where a row
    // would start in the bank of the one before.
    let xw = (cols.max(4) - 4) * layer.sv + nq4;
    let xld = match xw.next_multiple_of(4) {
        l if l % 32 == 0 => l + 4,
        l => l,
    };
    let xrows = (dwy - 1) * layer.su + layer.r;
    let weights = if v[DWMEM] == 0 {
        layer.crs() * channels
    } else {
        0
    };
    let (tile, prefetch) = if v[DXMEM] == 1 {
        (layer.c * xrows * xld, (layer.c * xrows * xw).div_ceil(nt))
    } else {
        (0, 0)
    };
    let staged = if v[DOST] >= 1 {
        2 * channels * dwy * cols
    } else {
        0
    };
    DirectDerived {
        nt,
        channels,
        groups,
        local_bytes: (4 * (weights + tile + staged)).max(16),
        registers: dpx * dqk + (dpx / 4).max(1) * nq4 + dqk + prefetch + 24,
    }
}

/// The slots the direct path reads (with `ALGO`).
const DIRECT_SLOTS: [usize; 10] = [ALGO, DPX, DQK, DWX, DWY, DWK, DWMEM, DXMEM, DROWS, DOST];

/// Hardware: the device's work-group size and warp, the registers, the local memory and
/// 2 work-groups (or `minb`) per compute unit, as the GEMM's level.
pub(super) fn direct_hardware_ok(
    v: &[usize],
    layer: &Layer,
    dev: &DeviceInfo,
    language: Language,
    minb: Option<usize>,
) -> bool {
    let d = direct_derived(v, layer);
    super::space::fits_hardware(d.nt, d.registers, d.local_bytes, dev, language, minb)
}

/// The values of `slots` (the others 0).
fn read(b: &Bound, slots: &[usize]) -> Vec<usize> {
    let mut v = vec![0; MINB + 1];
    for &s in slots {
        v[s] = b.get::<usize>(s);
    }
    v
}

/// Adds the direct path's constraints to `b` (where it is offered): each path fixes the
/// other's parameters at their first values (`gemm_first`: the GEMM's slots that the direct
/// path does not read, with their first values), so that no configuration repeats another;
/// the direct path's block divides the out channels and is no larger than the image
/// (rounded up to powers of 2); the device's limits at the hardware level. The GEMM's
/// parameters are fixed from the software level on (as the GEMM's constraints are gated
/// from there, in space.rs): at the algorithm level a constraint reading `ALGO` and them
/// would join every group into one, past the builder's memory on 3-channel layers.
#[allow(clippy::too_many_arguments)]
pub(super) fn direct_constraints<'a>(
    mut b: SpaceBuilder<'a>,
    layer: &Layer,
    dev: &DeviceInfo,
    language: Language,
    gemm_first: &[(usize, usize)],
    direct_first: &[(usize, usize)],
    soft: bool,
    hw: bool,
) -> SpaceBuilder<'a> {
    for &(slot, first) in direct_first {
        b = b
            .constraint(&[ALGO, slot], move |b| {
                b.get::<usize>(ALGO) == 1 || b.get::<usize>(slot) == first
            })
            .label("algorithm: the direct path's parameters only with ALGO=1");
    }
    if soft {
        for &(slot, first) in gemm_first {
            b = b
                .constraint(&[ALGO, slot], move |b| {
                    b.get::<usize>(ALGO) == 0 || b.get::<usize>(slot) == first
                })
                .label("software: the implicit GEMM's parameters only with ALGO=0");
        }
        let l = *layer;
        b = b
            .constraint(&[ALGO, DQK, DWK], move |b| {
                b.get::<usize>(ALGO) == 0 || l.ko % (b.get::<usize>(DQK) * b.get::<usize>(DWK)) == 0
            })
            .label("software: the direct path's DQK x DWK out channels divide the layer's")
            .constraint(&[ALGO, DPX, DWX, DWY, DROWS], move |b| {
                let (q, p) = (l.q().next_power_of_two(), l.p().next_power_of_two());
                b.get::<usize>(ALGO) == 0
                    || (b.get::<usize>(DPX) * b.get::<usize>(DWX) <= q.max(4)
                        && b.get::<usize>(DWY) * b.get::<usize>(DROWS) <= p)
            })
            .label(
                "software: the direct path's block no wider and its row blocks no taller than \
                 the output rounded up to powers of 2",
            )
            .constraint(&[ALGO, DOST], move |b| {
                b.get::<usize>(ALGO) == 0 || b.get::<usize>(DOST) == 0 || l.q() % 4 == 0
            })
            .label(
                "software: the direct path's staged output only where output rows are whole \
                 float4s (16-byte aligned copies)",
            );
    }
    if hw {
        let l = *layer;
        let reads = DIRECT_SLOTS.to_vec();
        let with_minb = {
            let mut r = reads.clone();
            if language == Language::Cuda {
                r.push(MINB);
            }
            r
        };
        let dev = dev.clone();
        b = b
            .constraint(&with_minb, move |b| {
                let minb = (language == Language::Cuda).then(|| b.get::<usize>(MINB));
                b.get::<usize>(ALGO) == 0
                    || direct_hardware_ok(&read(b, &reads), &l, &dev, language, minb)
            })
            .label("hardware: the direct path's work-group, registers, local memory, occupancy");
    }
    b
}

/// A direct configuration of `space`: every parameter at its first value but `ALGO` (1)
/// and `given`; `None` where that is not in the space.
pub fn direct_config(space: &Space, given: &[(&str, i64)]) -> Option<Config> {
    let values: Vec<(&str, Value)> = space
        .params()
        .iter()
        .map(|p| {
            let name = p.name();
            let v = match given.iter().rfind(|(n, _)| *n == name) {
                Some(&(_, v)) => Value::Int(v),
                None if name == "ALGO" => Value::Int(1),
                None => p.domain_value(0).unwrap_or(Value::Int(0)),
            };
            (name, v)
        })
        .collect();
    space.config_from_values(values).ok()
}

/// The names of the direct path's parameters: a configuration given without them (a
/// GEMM configuration from before they existed) takes their first values.
pub const DIRECT_PARAMS: [&str; 10] = [
    "ALGO", "DPX", "DQK", "DWX", "DWY", "DWK", "DWMEM", "DXMEM", "DROWS", "DOST",
];

/// `values` with the direct path's parameters it lacks at their first values (`ALGO` 0).
pub fn with_direct_defaults<'a>(
    space: &Space,
    values: &[(&'a str, Value)],
) -> Vec<(&'a str, Value)> {
    let mut out = values.to_vec();
    for p in space.params() {
        if let Some(&name) = DIRECT_PARAMS.iter().find(|n| **n == p.name()) {
            if !out.iter().any(|(n, _)| *n == name) {
                out.push((name, p.domain_value(0).unwrap_or(Value::Int(0))));
            }
        }
    }
    out
}
