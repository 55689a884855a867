//! The direct path of BEAST's convolution (`ALGO` 1, kernels/dnn_conv/direct.c) at small
//! layers with short reductions, validated against the host convolution.

use std::sync::Arc;

use tune::backend::Backend;
use tune::{Evaluator, Value};

use super::dnn_conv::evaluator;
use crate::common::cases::dnn_conv::{direct_config, DnnConv, Layer, DIRECT_MAX_CRS};
use crate::common::Target;

/// Short reductions: 3 and 4 channels, strides 1 and 4, odd and non-square filters (1 x 5,
/// 5 x 3, 3 x 3), padding 0, 1 and 2; output rows of 16 and 8 pixels (whole float4
/// strips), of 20 (a strip of 8 partly past the row) and of 7 and 9 (scalar stores).
const LAYERS: [Layer; 5] = [
    // VGG16 conv1_1's kind: 3 x 3 over 3 channels, stride 1, padding 1: 16 x 20 outputs.
    Layer {
        name: "direct_c3s1",
        nb: 2,
        c: 3,
        h: 16,
        w: 20,
        ko: 32,
        r: 3,
        s: 3,
        su: 1,
        sv: 1,
        ph: 1,
        pw: 1,
    },
    // 5 x 3 over 4 channels (a reduction of 60), stride 1, no padding: 8 x 16 outputs.
    Layer {
        name: "direct_c4s1",
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
    // 3 x 3 over 3 channels at stride 4, padding 1: 5 x 8 outputs.
    Layer {
        name: "direct_c3s4",
        nb: 2,
        c: 3,
        h: 17,
        w: 31,
        ko: 16,
        r: 3,
        s: 3,
        su: 4,
        sv: 4,
        ph: 1,
        pw: 1,
    },
    // 3 x 3 over 4 channels at stride 4, no padding: 3 x 7 outputs.
    Layer {
        name: "direct_c4s4",
        nb: 2,
        c: 4,
        h: 14,
        w: 29,
        ko: 16,
        r: 3,
        s: 3,
        su: 4,
        sv: 4,
        ph: 0,
        pw: 0,
    },
    // 1 x 5 over 3 channels, padding 0 x 2: 9 x 9 outputs, 8 out channels.
    Layer {
        name: "direct_odd",
        nb: 3,
        c: 3,
        h: 9,
        w: 9,
        ko: 8,
        r: 1,
        s: 5,
        su: 1,
        sv: 1,
        ph: 0,
        pw: 2,
    },
];

/// Work-group shapes (DWX, DWY, DWK) of 32 work-items, the first of which fits the layer.
const SHAPES: [(i64, i64, i64); 6] = [
    (4, 8, 1),
    (8, 4, 1),
    (2, 8, 2),
    (4, 4, 2),
    (1, 8, 4),
    (2, 4, 4),
];

/// Every combination of the direct path's parameters picked below that is in a layer's
/// space computes the convolution: pixels and channels per work-item, the weights and the
/// input from local or global memory, row blocks, the channel loop rolled or not, the
/// output staged in local memory (DOST; on sm_90 written by bulk copies), and on CUDA
/// streaming stores.
pub fn dnn_conv_direct_is_right<B: Backend>(backend: Arc<B>) {
    let target = Target::of(backend.as_ref()).unwrap();
    let cuda = target.language == crate::common::Language::Cuda;
    let mut seen: Vec<(&str, i64)> = Vec::new();
    let mut wrong: Vec<String> = Vec::new();
    let mut measured = 0;
    for layer in LAYERS {
        assert!(layer.crs() <= DIRECT_MAX_CRS, "{}", layer.name);
        let study = DnnConv::new(layer);
        let (space, ev) = evaluator(&backend, &target, &study);
        for i in 0..12usize {
            let pick = |vals: &[i64], period: usize| vals[(i / period) % vals.len()];
            let base = [
                ("DPX", pick(&[4, 8, 16], 1)),
                // 16 pixels with 4 channels: through NVRTC on the H100 (call t), with the
                // next row block's halo tile in registers, no 16 x 8 or 16 x 16 work-item
                // was valid (each rejected after compiling), so 16 pixels went unmeasured.
                (
                    "DQK",
                    if pick(&[4, 8, 16], 1) == 16 {
                        4
                    } else {
                        pick(&[4, 8, 16], 2)
                    },
                ),
                ("DWMEM", pick(&[0, 1], 1)),
                ("DXMEM", pick(&[1, 0], 2)),
                ("DROWS", pick(&[1, 2, 4], 3)),
                ("UNR", pick(&[1, 0], 4)),
                ("STCS", if cuda { pick(&[0, 1], 1) } else { 0 }),
                // The output staged and written by the work-group (bulk copies on sm_90).
                (
                    "DOST",
                    if cuda {
                        pick(&[0, 1, 2], 5)
                    } else {
                        pick(&[0, 1], 5)
                    },
                ),
                ("MINB", 1),
            ];
            // The first work-group shape in the space, with fewer pixels or channels per
            // work-item where none fits, and the output from registers where the layer's
            // rows are not whole float4s (no staged output there).
            let config = [false, true]
                .into_iter()
                .flat_map(|plain| {
                    [(0, 0), (1, 0), (0, 1), (1, 1), (2, 2)]
                        .into_iter()
                        .map(move |(px, qk)| (plain, px, qk))
                })
                .flat_map(|(plain, px, qk)| SHAPES.iter().map(move |s| (plain, px, qk, *s)))
                .find_map(|(plain, px, qk, (dwx, dwy, dwk))| {
                    let mut given: Vec<(&str, i64)> = base.to_vec();
                    given[0].1 = (given[0].1 >> px).max(4);
                    given[1].1 = (given[1].1 >> qk).max(4);
                    if plain {
                        given.retain(|(n, _)| *n != "DOST");
                        given.push(("DOST", 0));
                    }
                    given.extend([("DWX", dwx), ("DWY", dwy), ("DWK", dwk)]);
                    direct_config(&space, &given).map(|c| (c, given))
                });
            let Some((c, given)) = config else { continue };
            match ev
                .prepare(&space, &c)
                .and_then(|p| ev.measure(&space, &c, p))
            {
                Ok(_) => {}
                Err(f) if f.is_invalid() => continue,
                Err(f) => {
                    wrong.push(format!("{}: {}: {f}", layer.name, space.describe(&c)));
                    continue;
                }
            }
            measured += 1;
            for (n, v) in given {
                if !seen.contains(&(n, v)) {
                    seen.push((n, v));
                }
            }
            assert_eq!(
                space.values(&c)[space.slot("ALGO").unwrap()].1,
                Value::Int(1)
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "{} wrong:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(measured >= 30, "measured {measured}");
    for want in [
        ("DPX", 4),
        ("DPX", 8),
        ("DPX", 16),
        ("DQK", 4),
        ("DQK", 8),
        ("DQK", 16),
        ("DWMEM", 0),
        ("DWMEM", 1),
        ("DXMEM", 0),
        ("DXMEM", 1),
        ("DROWS", 1),
        ("DROWS", 2),
        ("DROWS", 4),
        ("UNR", 0),
        ("UNR", 1),
        ("DWK", 1),
        ("DWK", 2),
        ("DOST", 0),
        ("DOST", 1),
    ] {
        assert!(seen.contains(&want), "never measured {want:?}: {seen:?}");
    }
    if cuda {
        assert!(seen.contains(&("STCS", 1)), "{seen:?}");
        assert!(seen.contains(&("DOST", 2)), "{seen:?}");
    }
}
