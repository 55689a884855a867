//! BEAST's convolution kernel (kernels/dnn_conv/) at small layers, validated against the
//! host convolution: configurations chosen to cover every value of the load and offset
//! parameters (VA, VB, I32, PRE) together with both reduction orders, both filter layouts,
//! vector widths, staging and unrolling, a reduction that does not divide into k steps
//! (zeros past its end), split reductions (SPLITK: slices adding up through the
//! workspace), narrow load rows (LCOLS) and outputs whose pixels do not group by 4
//! (scalar stores).

use std::sync::Arc;

use tune::backend::{Backend, KernelEvaluator};
use tune::{Evaluator, Space, Value};

use super::NO_COMPILE_LIMIT;
use crate::common::beast::SMALL;
use crate::common::cases::dnn_conv::{with_direct_defaults, DnnConv, Layer, Pass};
use crate::common::{Study, Target};

/// 7 x 7 outputs (49 pixels per image: no group of 2 or 4 stays in one image) and a
/// reduction of 72 (BK=16 leaves a tail).
const ODD: Layer = Layer {
    name: "odd",
    nb: 32,
    c: 8,
    h: 7,
    w: 7,
    ko: 16,
    r: 3,
    s: 3,
    su: 1,
    sv: 1,
    ph: 1,
    pw: 1,
};

/// AlexNet L1's kind of layer, small: 11 x 11 filters at stride 4 over 3 channels, 7 x 5
/// outputs (a patch tile of 8 x 8 partly outside on both sides).
const STRIDE4: Layer = Layer {
    name: "stride4",
    nb: 2,
    c: 3,
    h: 31,
    w: 23,
    ko: 16,
    r: 11,
    s: 11,
    su: 4,
    sv: 4,
    ph: 2,
    pw: 2,
};

/// Wide outputs (6 x 40: patch tiles of 32 columns) under a 3 x 5 filter at stride 1.
const WIDE: Layer = Layer {
    name: "wide",
    nb: 1,
    c: 3,
    h: 6,
    w: 40,
    ko: 16,
    r: 3,
    s: 5,
    su: 1,
    sv: 1,
    ph: 1,
    pw: 2,
};

/// The values of combination `i`: each parameter cycles with its own period, so that a
/// few combinations pair every value of one with several of the others.
fn combination(i: usize, korder: i64) -> Vec<(&'static str, Value)> {
    let pick = |vals: &[i64], period: usize| vals[(i / period) % vals.len()];
    [
        ("BM", 16),
        ("BN", 32),
        ("BK", pick(&[8, 16], 5)),
        ("MDIM", 4),
        ("NDIM", 8),
        ("VS", pick(&[4, 1, 2], 1)),
        ("DB", pick(&[1, 0], 3)),
        ("PADA", pick(&[0, 4], 2)),
        ("PADB", pick(&[4, 0], 3)),
        ("UNR", pick(&[1, 0], 4)),
        ("FLAYOUT", pick(&[1, 0], 2)),
        ("KORDER", korder),
        ("VA", pick(&[4, 1], 1)),
        ("VB", pick(&[4, 2, 1], 2)),
        ("I32", pick(&[1, 0], 3)),
        ("PRE", if korder == 0 { pick(&[1, 0], 1) } else { 0 }),
        ("SPLITK", pick(&[2, 1, 3, 4], 2)),
        ("LCOLS", if korder == 0 { pick(&[8, 0, 16], 1) } else { 0 }),
        ("PATCH", 0),
        ("OSTAGE", 0),
        ("MASK", 0),
        ("TILES", 1),
        ("KEXACT", 0),
        ("STCS", 0),
        ("MINB", 1),
    ]
    .into_iter()
    .map(|(n, v)| (n, Value::Int(v)))
    .collect()
}

/// The study's space and an evaluator of it on `backend` (no compile time limit: the
/// sweeps compile one configuration at a time on a shared machine).
pub(super) fn evaluator<B: Backend>(
    backend: &Arc<B>,
    target: &Target,
    study: &DnnConv,
) -> (Space, KernelEvaluator<B>) {
    let (info, spec) = study.case(target).unwrap().split();
    let spec = spec.compile_time_limit(NO_COMPILE_LIMIT);
    let ev = KernelEvaluator::<B>::new(backend.clone(), &info.space, spec).unwrap();
    (info.space, ev)
}

/// Measures the configuration of `values` (those the space has) when it is in the space,
/// panicking on a wrong result, and notes the integer values it ran with in `seen`. False
/// when it is not in the space or over a device limit after compiling.
fn run<'a, E: Evaluator>(
    ev: &E,
    space: &Space,
    layer: &Layer,
    values: &[(&'a str, Value)],
    seen: &mut Vec<(&'a str, i64)>,
) -> bool {
    try_run(ev, space, layer, values, seen).unwrap_or_else(|e| panic!("{e}"))
}

/// [`run`], with a wrong result (or any failure but a device limit) returned as its text.
fn try_run<'a, E: Evaluator>(
    ev: &E,
    space: &Space,
    layer: &Layer,
    values: &[(&'a str, Value)],
    seen: &mut Vec<(&'a str, i64)>,
) -> Result<bool, String> {
    let names: Vec<&str> = space.params().iter().map(|p| p.name()).collect();
    // The implicit GEMM's configurations: the direct path's parameters at their first values.
    let values = with_direct_defaults(space, values);
    let given = values.iter().filter(|(n, _)| names.contains(n)).cloned();
    let Ok(c) = space.config_from_values(given) else {
        return Ok(false);
    };
    match ev.prepare(space, &c).and_then(|p| ev.measure(space, &c, p)) {
        Ok(_) => {}
        Err(f) if f.is_invalid() => return Ok(false),
        Err(f) => return Err(format!("{}: {}: {f}", layer.name, space.describe(&c))),
    }
    for (n, v) in &values {
        if let Value::Int(v) = v {
            if !seen.contains(&(*n, *v)) {
                seen.push((*n, *v));
            }
        }
    }
    Ok(true)
}

/// Every combination that is in a small layer's space computes the convolution.
pub fn dnn_conv_loads_and_offsets_are_right<B: Backend>(backend: Arc<B>) {
    let target = Target::of(backend.as_ref()).unwrap();
    let mut seen: Vec<(&str, i64)> = Vec::new();
    for layer in [SMALL[0], SMALL[1], ODD] {
        let study = DnnConv::new(layer);
        let (space, ev) = evaluator(&backend, &target, &study);
        let mut measured = 0;
        for korder in [0, 1] {
            for i in 0..8 {
                let values = combination(i, korder);
                if run(&ev, &space, &layer, &values, &mut seen) {
                    measured += 1;
                }
            }
        }
        assert!(measured >= 4, "{}: {measured} measured", layer.name);
    }
    for want in [
        ("VA", 1),
        ("VA", 4),
        ("VB", 1),
        ("VB", 2),
        ("VB", 4),
        ("I32", 0),
        ("I32", 1),
        ("PRE", 0),
        ("PRE", 1),
        ("KORDER", 0),
        ("KORDER", 1),
        ("FLAYOUT", 0),
        ("FLAYOUT", 1),
        ("VS", 1),
        ("VS", 2),
        ("VS", 4),
        ("DB", 0),
        ("BK", 16),
        ("SPLITK", 1),
        ("SPLITK", 2),
        ("SPLITK", 3),
        ("LCOLS", 8),
        ("LCOLS", 16),
    ] {
        assert!(seen.contains(&want), "never measured {want:?}: {seen:?}");
    }
}

/// `--validate best`: tuned without a reference, the tuned configuration is validated once
/// against the reference kernel and kept.
pub fn dnn_conv_validates_the_tuned_configuration_once<B: Backend>(backend: Arc<B>) {
    let args: Vec<String> = ["--net", "small", "--evals", "3", "--validate", "best"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let args = crate::common::beast::Args::parse(&args).unwrap();
    let t = crate::common::beast::tune_layer(backend, &args, SMALL[2], None).unwrap();
    assert!(t.valid >= 1 && t.seconds > 0.0, "{t:?}");
    assert!(t.best.0.iter().any(|(n, _)| n == "VB"), "{t:?}");
}

/// Backward-filter (the kernel's BWDF): configurations of the small layers' spaces, split
/// over 1 to 64 work-groups, with taps per work-item side by side or apart and column
/// tiles partly past C*R*S (75, 144 and 72 taps), compute the filters' gradient
/// (validated against the host's).
pub fn dnn_conv_backward_filter_is_right<B: Backend>(backend: Arc<B>) {
    let target = Target::of(backend.as_ref()).unwrap();
    let mut seen: Vec<(&str, i64)> = Vec::new();
    for layer in [SMALL[0], SMALL[1], ODD] {
        let study = DnnConv {
            pass: Pass::BackwardFilter,
            ..DnnConv::new(layer)
        };
        let (space, ev) = evaluator(&backend, &target, &study);
        let mut measured = 0;
        for i in 0..8 {
            let pick = |vals: &[i64], period: usize| vals[(i / period) % vals.len()];
            let values: Vec<(&str, Value)> = [
                ("BM", 16),
                ("BN", pick(&[32, 64], 2)),
                ("BK", pick(&[8, 16], 3)),
                ("MDIM", 4),
                ("NDIM", 8),
                ("VS", pick(&[2, 1, 4], 1)),
                ("DB", pick(&[1, 0], 1)),
                ("PADA", pick(&[0, 4], 2)),
                ("PADB", pick(&[4, 0], 3)),
                ("UNR", pick(&[1, 0], 4)),
                ("FLAYOUT", 0),
                ("KORDER", 0),
                ("VA", 1),
                ("VB", pick(&[4, 1, 2], 1)),
                ("I32", pick(&[1, 0], 2)),
                ("PRE", 0),
                ("SPLITK", pick(&[1, 64, 16, 4, 2, 8, 32], 1)),
                ("LCOLS", pick(&[0, 8, 16], 2)),
                ("PATCH", 0),
                ("OSTAGE", 0),
                ("MASK", 0),
                ("TILES", 1),
                ("KEXACT", 0),
                ("STCS", 0),
                ("MINB", 1),
            ]
            .into_iter()
            .map(|(n, v)| (n, Value::Int(v)))
            .collect();
            if run(&ev, &space, &layer, &values, &mut seen) {
                measured += 1;
            }
        }
        assert!(measured >= 3, "{}: {measured} measured", layer.name);
    }
    for want in [
        ("SPLITK", 1),
        ("SPLITK", 4),
        ("SPLITK", 16),
        ("SPLITK", 64),
        ("VB", 1),
        ("VB", 4),
        ("BN", 32),
        ("BN", 64),
        ("LCOLS", 8),
    ] {
        assert!(seen.contains(&want), "never measured {want:?}: {seen:?}");
    }
}

/// The staged patch (PATCH: tiles of BN / PATCH x PATCH output pixels of one image, their
/// input staged in local memory once and read through the offset table; PATCH 1: runs of
/// BN pixels of one image and the input rows under them; the output tile
/// from registers or by rows through local memory, OSTAGE) computes the
/// convolution at strides 4, 2 and 1, odd and non-square filters, and tiles partly outside
/// the image, with every load row width, vector width and staging (validated against the
/// host's).
pub fn dnn_conv_staged_patch_is_right<B: Backend>(backend: Arc<B>) {
    let target = Target::of(backend.as_ref()).unwrap();
    let mut seen: Vec<(&str, i64)> = Vec::new();
    // The patch is offered where no BK divides the channels: ODD with 5.
    let odd5 = Layer { c: 5, ..ODD };
    for layer in [STRIDE4, SMALL[0], odd5, WIDE] {
        let study = DnnConv::new(layer);
        let (space, ev) = evaluator(&backend, &target, &study);
        let mut measured = 0;
        for i in 0..12 {
            let pick = |vals: &[i64], period: usize| vals[(i / period) % vals.len()];
            let values: Vec<(&str, Value)> = [
                ("BM", 16),
                ("BN", pick(&[64, 32], 1)),
                ("BK", pick(&[8, 16], 2)),
                ("MDIM", 4),
                ("NDIM", 8),
                ("VS", pick(&[4, 1, 2], 1)),
                ("DB", pick(&[1, 0], 3)),
                ("PADA", pick(&[0, 4], 2)),
                ("PADB", pick(&[4, 0], 3)),
                ("UNR", pick(&[1, 0], 4)),
                ("FLAYOUT", pick(&[1, 0], 2)),
                ("KORDER", 0),
                ("VA", pick(&[4, 1], 1)),
                ("VB", pick(&[1, 4, 2], 1)),
                ("I32", pick(&[1, 0], 3)),
                ("PRE", 1),
                ("SPLITK", 1),
                ("LCOLS", pick(&[0, 8, 16], 3)),
                ("PATCH", pick(&[8, 32, 16, 1], 1)),
                ("OSTAGE", pick(&[1, 0], 2)),
                ("MASK", 0),
                ("TILES", 1),
                ("KEXACT", 0),
                ("STCS", 0),
                ("MINB", 1),
            ]
            .into_iter()
            .map(|(n, v)| (n, Value::Int(v)))
            .collect();
            if run(&ev, &space, &layer, &values, &mut seen) {
                measured += 1;
            }
        }
        assert!(measured >= 2, "{}: {measured} measured", layer.name);
    }
    for want in [
        ("PATCH", 8),
        ("PATCH", 16),
        ("PATCH", 32),
        ("PATCH", 1),
        ("OSTAGE", 0),
        ("OSTAGE", 1),
        ("VB", 1),
        ("VB", 4),
        ("VS", 1),
        ("VS", 4),
        ("DB", 0),
        ("DB", 1),
        ("LCOLS", 8),
        ("LCOLS", 16),
    ] {
        assert!(seen.contains(&want), "never measured {want:?}: {seen:?}");
    }
}

/// Layers of 3 channels whose pixels tile by 32 (the unstaged gather, PATCH 0): 11 x 11
/// filters at stride 4 with padding 2 (the last output row's window past the input's end),
/// 7 x 5 at stride 4 without padding, 5 x 3 at stride 1 with padding 2 and 1, and 5 x 3 at
/// stride 1 without padding.
const MASKED: [Layer; 4] = [
    Layer {
        name: "mask_s4p2",
        nb: 2,
        c: 3,
        h: 19,
        w: 35,
        ko: 16,
        r: 11,
        s: 11,
        su: 4,
        sv: 4,
        ph: 2,
        pw: 2,
    },
    Layer {
        name: "mask_s4p0",
        nb: 2,
        c: 3,
        h: 19,
        w: 33,
        ko: 16,
        r: 7,
        s: 5,
        su: 4,
        sv: 4,
        ph: 0,
        pw: 0,
    },
    Layer {
        name: "mask_s1p2",
        nb: 2,
        c: 3,
        h: 4,
        w: 8,
        ko: 16,
        r: 5,
        s: 3,
        su: 1,
        sv: 1,
        ph: 2,
        pw: 1,
    },
    Layer {
        name: "mask_s1p0",
        nb: 2,
        c: 3,
        h: 8,
        w: 10,
        ko: 16,
        r: 5,
        s: 3,
        su: 1,
        sv: 1,
        ph: 0,
        pw: 0,
    },
];

/// The gather's bounds checked by tap masks (MASK: a table of row addresses and tap bits,
/// a mask of the taps inside the image per gathered pixel) computes the convolution at
/// strides 4 and 1, with and without padding, odd and non-square filters, with every
/// vector width, load row width and staging, split reductions, and the output written
/// from registers or through local memory (OSTAGE with PATCH 0), validated against the
/// host's.
pub fn dnn_conv_tap_masks_are_right<B: Backend>(backend: Arc<B>) {
    let target = Target::of(backend.as_ref()).unwrap();
    let mut seen: Vec<(&str, i64)> = Vec::new();
    for layer in MASKED.iter().chain(&[SMALL[0]]) {
        assert_eq!(layer.npq() % 64, 0, "{}", layer.name);
        let study = DnnConv::new(*layer);
        let (space, ev) = evaluator(&backend, &target, &study);
        let mut measured = 0;
        for i in 0..6 {
            let pick = |vals: &[i64], period: usize| vals[(i / period) % vals.len()];
            let values: Vec<(&str, Value)> = [
                ("BM", 16),
                ("BN", pick(&[32, 64], 1)),
                ("BK", pick(&[8, 16], 2)),
                ("MDIM", 4),
                ("NDIM", 8),
                ("VS", pick(&[2, 4, 1], 1)),
                ("DB", pick(&[1, 0], 3)),
                ("PADA", pick(&[0, 4], 2)),
                ("PADB", pick(&[4, 0], 1)),
                ("UNR", pick(&[1, 0], 4)),
                ("FLAYOUT", pick(&[1, 0], 2)),
                ("KORDER", 0),
                ("VA", pick(&[4, 1], 1)),
                ("VB", pick(&[1, 2, 4], 1)),
                ("I32", 1),
                ("PRE", 1),
                ("SPLITK", pick(&[1, 2], 3)),
                ("LCOLS", pick(&[16, 8, 0], 1)),
                ("PATCH", 0),
                ("OSTAGE", pick(&[1, 0], 2)),
                ("MASK", 1),
                ("TILES", 1),
                ("KEXACT", 0),
                ("STCS", 0),
                ("MINB", 1),
            ]
            .into_iter()
            .map(|(n, v)| (n, Value::Int(v)))
            .collect();
            if run(&ev, &space, layer, &values, &mut seen) {
                measured += 1;
            }
        }
        assert!(measured >= 3, "{}: {measured} measured", layer.name);
    }
    for want in [
        ("MASK", 1),
        ("OSTAGE", 0),
        ("OSTAGE", 1),
        ("VS", 1),
        ("VS", 2),
        ("VS", 4),
        ("VB", 1),
        ("VB", 2),
        ("VB", 4),
        ("BK", 8),
        ("BK", 16),
        ("SPLITK", 1),
        ("SPLITK", 2),
        ("LCOLS", 8),
        ("LCOLS", 16),
        ("DB", 0),
    ] {
        assert!(seen.contains(&want), "never measured {want:?}: {seen:?}");
    }
}

/// Layers whose reductions are short (at most two k steps of 32, or 3 channels: where
/// TILES, KEXACT and STCS are offered), whose pixel tiles of 32 come in multiples of 2 to
/// 16: 3 and 4 channels, strides 1 and 4, odd and non-square filters, padding 0 and 1,
/// and 7 x 7 outputs (pixels that do not group by 2 or 4 in an image).
const SHORT: [Layer; 5] = [
    // VGG16 conv1_1's kind: 3 x 3 over 3 channels, stride 1, padding 1 (16 tiles of 32).
    Layer {
        name: "short_c3s1",
        nb: 2,
        c: 3,
        h: 16,
        w: 16,
        ko: 16,
        r: 3,
        s: 3,
        su: 1,
        sv: 1,
        ph: 1,
        pw: 1,
    },
    // 5 x 3 over 4 channels (a reduction of 60), stride 1, no padding: 8 x 16 outputs.
    Layer {
        name: "short_c4s1",
        nb: 2,
        c: 4,
        h: 12,
        w: 18,
        ko: 16,
        r: 5,
        s: 3,
        su: 1,
        sv: 1,
        ph: 0,
        pw: 0,
    },
    // 7 x 5 over 3 channels at stride 4, padding 1: 4 x 8 outputs.
    Layer {
        name: "short_c3s4",
        nb: 4,
        c: 3,
        h: 17,
        w: 31,
        ko: 16,
        r: 7,
        s: 5,
        su: 4,
        sv: 4,
        ph: 1,
        pw: 1,
    },
    // 3 x 3 over 4 channels at stride 4, padding 1: 4 x 8 outputs.
    Layer {
        name: "short_c4s4",
        nb: 4,
        c: 4,
        h: 14,
        w: 30,
        ko: 16,
        r: 3,
        s: 3,
        su: 4,
        sv: 4,
        ph: 1,
        pw: 1,
    },
    // 3 x 3 over 3 channels without padding: 7 x 7 outputs, 98 tiles of 32.
    Layer {
        name: "short_odd",
        nb: 64,
        c: 3,
        h: 9,
        w: 9,
        ko: 16,
        r: 3,
        s: 3,
        su: 1,
        sv: 1,
        ph: 0,
        pw: 0,
    },
];

/// Several pixel tiles per work-group (TILES: the next tile's gather in flight while this
/// one is multiplied, the filter tile kept where the reduction is one k step), the last k
/// step multiplying only up to C*R*S (KEXACT) and streaming stores (STCS, CUDA's) compute
/// the convolution with both reduction orders, the tap masks, every vector width, staging
/// and k step, validated against the host's.
pub fn dnn_conv_pixel_tiles_are_right<B: Backend>(backend: Arc<B>) {
    let target = Target::of(backend.as_ref()).unwrap();
    let cuda = target.language == crate::common::Language::Cuda;
    let mut seen: Vec<(&str, i64)> = Vec::new();
    let mut wrong: Vec<String> = Vec::new();
    let mut inner_tiled = 0;
    for layer in SHORT {
        let study = DnnConv::new(layer);
        let (space, ev) = evaluator(&backend, &target, &study);
        let three = layer.c == 3;
        // The largest of the picked TILES that divides the layer's tiles of 32 pixels.
        let tiles = |t: i64| {
            let mut t = t;
            while (layer.npq() / 32) as i64 % t != 0 {
                t /= 2;
            }
            t
        };
        let mut measured = 0;
        // Combinations 0-5; on the 4-channel layers 6-11 are combination 4 with one value
        // changed each. Through NVRTC on an H200 (commit 8cbad70) combination 4 and every
        // variant of it with TILES 2 gave wrong results (channels innermost, one gathered
        // pixel per work-item in a row; PoCL and NVIDIA's OpenCL ran them right), and were
        // left out of the space until session 9 traced them to the gather's read-only loads
        // (body.c's LDG_B): they are in the space again and must be measured and right.
        let variants: [(&str, i64); 6] = [
            ("STCS", 0),
            ("UNR", 1),
            ("VS", 4),
            ("TILES", 1),
            ("DB", 0),
            ("KEXACT", 0),
        ];
        let count = if three { 6 } else { 12 };
        for k in 0..count {
            let i = if k < 6 { k } else { 4 };
            let pick = |vals: &[i64], period: usize| vals[(i / period) % vals.len()];
            // 4 channels: channels innermost (k steps of 4) every other combination.
            let korder = if three { 0 } else { pick(&[1, 0], 1) };
            let mut values: Vec<(&str, Value)> = [
                ("BM", 16),
                ("BN", 32),
                (
                    "BK",
                    if korder == 1 {
                        4
                    } else {
                        pick(&[32, 16, 8], 1)
                    },
                ),
                ("MDIM", 4),
                ("NDIM", 8),
                ("VS", pick(&[4, 2, 1], 2)),
                ("DB", pick(&[1, 0], 1)),
                ("PADA", pick(&[0, 4], 2)),
                ("PADB", pick(&[4, 0], 3)),
                ("UNR", pick(&[1, 0], 4)),
                ("FLAYOUT", pick(&[1, 0], 2)),
                ("KORDER", korder),
                ("VA", if korder == 1 { 1 } else { pick(&[4, 1], 3) }),
                ("VB", pick(&[4, 1, 2], 1)),
                ("I32", 1),
                ("PRE", if korder == 0 { 1 } else { 0 }),
                ("SPLITK", 1),
                ("LCOLS", 0),
                ("PATCH", 0),
                ("OSTAGE", 0),
                ("MASK", if three { pick(&[0, 1], 1) } else { 0 }),
                ("TILES", tiles(pick(&[2, 16, 4, 8], 1))),
                ("KEXACT", pick(&[1, 0], 2)),
                ("STCS", if cuda { pick(&[1, 0], 1) } else { 0 }),
                ("MINB", 1),
            ]
            .into_iter()
            .map(|(n, v)| (n, Value::Int(v)))
            .collect();
            if k >= 6 {
                let (name, v) = variants[k - 6];
                values.retain(|(n, _)| *n != name);
                values.push((name, Value::Int(v)));
            }
            let channels_inner_tiled = korder == 1 && !(k >= 6 && variants[k - 6].0 == "TILES");
            match try_run(&ev, &space, &layer, &values, &mut seen) {
                Ok(true) => {
                    if channels_inner_tiled {
                        inner_tiled += 1;
                    }
                    measured += 1
                }
                Ok(false) => {}
                Err(e) => wrong.push(e),
            }
        }
        assert!(measured >= 3, "{}: {measured} measured", layer.name);
    }
    // Channels innermost with several pixel tiles: combination 4 and its variants on the
    // 4-channel layers (all but the TILES 1 one), where CUDA's results were wrong.
    assert!(
        inner_tiled >= 8,
        "{inner_tiled} with channels innermost and TILES over 1"
    );
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    for want in [
        ("TILES", 2),
        ("TILES", 4),
        ("TILES", 8),
        ("TILES", 16),
        ("KEXACT", 0),
        ("KEXACT", 1),
        ("MASK", 0),
        ("MASK", 1),
        ("KORDER", 1),
        ("BK", 8),
        ("BK", 16),
        ("BK", 32),
        ("DB", 0),
        ("DB", 1),
        ("VS", 1),
        ("VS", 2),
        ("VS", 4),
    ] {
        assert!(seen.contains(&want), "never measured {want:?}: {seen:?}");
    }
    if cuda {
        assert!(seen.contains(&("STCS", 1)), "{seen:?}");
    }
}
