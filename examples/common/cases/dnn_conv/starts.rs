//! The starts of the search (`known_good`): the SGEMM case's shapes, and one start per
//! parameter that the layer's short search should measure.

use tune::{Config, Space};

use super::direct::{direct_config, with_direct_defaults};
use super::DnnConv;

impl DnnConv {
    /// The forward pass's starts.
    pub(super) fn forward_starts(&self, space: &Space) -> Vec<Config> {
        // The shapes of the SGEMM case's bests on an H100 and H200 (kernels/sgemm.cu: 64 x 128
        // tiles of 8 x 8 per work-item, float4 loads of both operands; 64 x 256 tiles of
        // 16 x 8), with 32-bit offsets; then the first with scalar loads and 64-bit
        // offsets, the kernel as it was before VA, VB and I32, for comparison within the
        // run; then the first with its reduction split in 2 and 3 (SPLITK), with
        // 96-channel tiles, with one gathered pixel per work-item in a row (VB=1) and, in the
        // filters' order, narrower load rows (LCOLS), so that a short search measures the
        // new parameters on every layer; then, where the channels are few (the filters'
        // order), output tiles of 8 x 8, 16 x 8 and 8 x 16 pixels whose input patch is staged
        // in local memory (PATCH), with 64 or 128 work-items, with the output tile written
        // from registers or by rows through local memory (OSTAGE); then the unstaged gather
        // with its bounds checked by tap masks (MASK), from session 5's best on AlexNet L1
        // (k steps of 8, pairs of pixels per read, rows of 16 gathering work-items), with
        // float4 reads (VS 4) and the output written by runs through local memory
        // (OSTAGE), which from registers is scalar where P*Q is odd. Each where it fits this layer:
        // channels innermost where they divide, else in the filters' order with the
        // precomputed offsets.
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
            ("PATCH", 0),
            ("OSTAGE", 0),
            ("MASK", 0),
            ("TILES", 1),
            ("KEXACT", 0),
            ("STCS", 0),
            ("MINB", 2),
        ];
        const L1_BEST: [(&str, i64); 8] = [
            ("MASK", 1),
            ("BK", 8),
            ("PADA", 0),
            ("PADB", 4),
            ("VB", 1),
            ("LCOLS", 16),
            ("MINB", 1),
            ("VS", 2),
        ];
        let masked = |more: &'static [(&'static str, i64)]| -> Vec<(&'static str, i64)> {
            // The later of two values of a name wins (below).
            L1_BEST.iter().chain(more).copied().collect()
        };
        let masks = [
            masked(&[]),
            masked(&[("VS", 4)]),
            masked(&[("VS", 4), ("OSTAGE", 1)]),
            masked(&[("OSTAGE", 1)]),
        ];
        let shapes: [&[(&str, i64)]; 20] = [
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
            // The staged patch: 64-pixel tiles (8 x 8: AlexNet L1's 55 x 55 in 7 x 7 tiles)
            // of 8 x 8 or 8 x 4 per work-item, and 128-pixel tiles (16 x 8, 8 x 16).
            &[("BN", 64), ("NDIM", 8), ("PATCH", 8)],
            &[("BN", 64), ("NDIM", 16), ("PATCH", 8)],
            &[("BN", 64), ("NDIM", 8), ("PATCH", 8), ("VB", 1)],
            &[("PATCH", 8)],
            &[("PATCH", 16)],
            // And with the output tile written by rows through local memory.
            &[("BN", 64), ("NDIM", 8), ("PATCH", 8), ("OSTAGE", 1)],
            &[("BN", 64), ("NDIM", 16), ("PATCH", 8), ("OSTAGE", 1)],
            // Runs of 128 pixels of one image (PATCH 1: under 2% of AlexNet L1's tiles past
            // an image's end, against 18% for 16 x 8), also with the k steps of 8, pairs
            // of pixels per read and gathered pixels apart of AlexNet L1's best in
            // session 5's first call (PATCH 0).
            &[("PATCH", 1)],
            &[("PATCH", 1), ("BK", 8), ("VS", 2), ("VB", 1)],
            &[("PATCH", 1), ("BK", 8), ("VS", 2), ("VB", 2)],
            &[("PATCH", 1), ("BK", 8), ("VS", 2), ("VB", 1), ("OSTAGE", 1)],
        ];
        // Where the reduction is short (VGG16 conv1_1's 27): the first shape (session 6's
        // best there) with 8 or 4 pixel tiles per work-group, its last k step unpadded,
        // streaming stores, the whole reduction in one k step (BK 32: the filter tile
        // loaded once per work-group), with the tap masks (also with the k loop rolled:
        // unrolled, session 6's best spent 12% of its time waiting for instructions on an
        // H200), or one gathered pixel per work-item in a row; and the first shape with only
        // the unpadded last step.
        let tiled: [&[(&str, i64)]; 7] = [
            &[("TILES", 8), ("KEXACT", 1)],
            &[("TILES", 8), ("KEXACT", 1), ("STCS", 1)],
            &[("TILES", 8), ("KEXACT", 1), ("STCS", 1), ("BK", 32)],
            &[
                ("TILES", 8),
                ("KEXACT", 1),
                ("STCS", 1),
                ("BK", 32),
                ("MASK", 1),
            ],
            &[
                ("TILES", 8),
                ("KEXACT", 1),
                ("STCS", 1),
                ("BK", 32),
                ("MASK", 1),
                ("UNR", 0),
            ],
            &[
                ("TILES", 4),
                ("KEXACT", 1),
                ("STCS", 1),
                ("BK", 32),
                ("VB", 1),
            ],
            &[("KEXACT", 1)],
        ];
        // Where the channels can go innermost (BK=16 divides them), the filters' order is
        // not the layer's start, nor are its load rows or a staged patch.
        let channels_inner = self.layer.c % 16 == 0;
        let names: Vec<&str> = space.params().iter().map(|p| p.name()).collect();
        let gemm = shapes
            .iter()
            .copied()
            .chain(masks.iter().map(|m| m.as_slice()))
            .chain(tiled)
            .filter(|shape| {
                !(channels_inner && shape.iter().any(|(n, _)| *n == "LCOLS" || *n == "PATCH"))
            })
            .filter_map(|shape| {
                [1, 0].into_iter().find_map(|order| {
                    let given = base
                        .iter()
                        .map(|&(n, v)| {
                            let v = shape.iter().rfind(|(m, _)| *m == n).map_or(v, |s| s.1);
                            match n {
                                // PRE is the filters' order's only.
                                "PRE" if order == 1 => (n, 0),
                                _ => (n, v),
                            }
                        })
                        .chain([("KORDER", order)])
                        .filter(|(n, _)| names.contains(n))
                        .map(|(n, v)| (n, tune::Value::Int(v)))
                        .collect::<Vec<_>>();
                    space
                        .config_from_values(with_direct_defaults(space, &given))
                        .ok()
                })
            });
        // The direct path first where it is offered (conv1_1: the path built for it).
        direct_starts(space).into_iter().chain(gemm).collect()
    }
}

/// Backward-filter's starts: the SGEMM's 64 x 128 tiles of 8 x 8 with the reduction split
/// in 16 (39 tiles x 16 on AlexNet L2 fill 132 compute units about 5 times), then in 8 and
/// 32, with pairs of taps per work-item instead of 4, and 64 x 64 tiles.
pub(super) fn backward_filter_starts(space: &Space) -> Vec<Config> {
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
        ("PATCH", 0),
        ("OSTAGE", 0),
        ("MASK", 0),
        ("TILES", 1),
        ("KEXACT", 0),
        ("STCS", 0),
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
                .map(|(n, v)| (n, tune::Value::Int(v)))
                .collect::<Vec<_>>();
            space
                .config_from_values(with_direct_defaults(space, &given))
                .ok()
        })
        .collect()
}

/// Session 10's direct winner on the H200 (call w), over the starts' base.
const W10: [(&str, i64); 6] = [
    ("DQK", 8),
    ("DWY", 1),
    ("DWK", 8),
    ("STCS", 1),
    ("MINB", 2),
    ("DROWS", 16),
];

/// The direct path's starts (where it is offered): 4 pixels x 16 out channels per
/// work-item in work-groups of 8 x 4 x 4 (32 x 4 pixels, 64 channels: conv1_1's 224
/// columns in 7 blocks), the weights and the input's halo tile in local memory (the best
/// direct configuration of session 8's first call on an H200, among the 10 measured); then
/// the input from global memory, 8 pixels (two quads), 8 and 32 channels per work-item,
/// 2 or 4 channel groups, 8 rows, 2 to 16 row blocks per work-group (since session 9 the
/// next block's halo tile is loaded while this one is multiplied), the channel loop rolled,
/// streaming stores, 2 resident work-groups asked of the compiler, the weights from
/// global memory, session 9's winner with and without the staged output (DOST), and
/// session 10's (W10) with 32 and 64 row blocks and the staged output.
fn direct_starts(space: &Space) -> Vec<Config> {
    let base: [(&str, i64); 11] = [
        ("DPX", 4),
        ("DQK", 16),
        ("DWX", 8),
        ("DWY", 4),
        ("DWK", 4),
        ("DWMEM", 0),
        ("DXMEM", 1),
        ("DROWS", 1),
        ("UNR", 1),
        ("STCS", 0),
        ("MINB", 1),
    ];
    let shapes: [&[(&str, i64)]; 30] = [
        &[],
        &[("DXMEM", 0)],
        &[("DPX", 8), ("DWX", 4), ("DWY", 8)],
        &[("DPX", 8), ("DQK", 8), ("DWX", 4), ("DWY", 8), ("DWK", 8)],
        &[("DQK", 8), ("DWK", 8)],
        &[("DQK", 8), ("DWY", 8), ("DWK", 2)],
        &[("DQK", 32), ("DWK", 2)],
        &[("DQK", 32), ("DWY", 8), ("DWK", 2)],
        &[("DWY", 8), ("DWK", 2)],
        &[("DROWS", 2)],
        &[("DROWS", 4)],
        &[("DROWS", 8)],
        &[("DROWS", 8), ("STCS", 1)],
        &[("DROWS", 16), ("DWY", 2)],
        &[("UNR", 0)],
        &[("STCS", 1)],
        &[("MINB", 2)],
        &[("DXMEM", 0), ("UNR", 0)],
        &[
            ("DPX", 8),
            ("DQK", 8),
            ("DWX", 4),
            ("DWY", 8),
            ("DWK", 8),
            ("UNR", 0),
        ],
        &[("DWMEM", 1)],
        // Session 9's winner on the H100 (8 channels, 4 row blocks), then the output staged
        // in local memory and written by bulk copies (DOST) with it and with the first.
        &[("DQK", 8), ("DROWS", 4)],
        &[("DQK", 8), ("DROWS", 4), ("DOST", 1)],
        &[("DQK", 8), ("DROWS", 4), ("DOST", 2)],
        &[("DROWS", 4), ("DOST", 1)],
        &[("DOST", 1)],
        // Session 10's winner on the H200 (call w: 8 x 1 x 8 work-items, 16 row blocks of
        // one row, streaming stores, MINB 2), with more row blocks and the staged output.
        &W10,
        &[W10[0], W10[1], W10[2], W10[3], W10[4], ("DROWS", 32)],
        &[W10[0], W10[1], W10[2], W10[3], W10[4], ("DROWS", 64)],
        &[W10[0], W10[1], W10[2], W10[3], W10[4], W10[5], ("DOST", 1)],
        &[W10[0], W10[1], W10[2], W10[3], W10[4], W10[5], ("DOST", 2)],
    ];
    shapes
        .iter()
        .filter_map(|shape| {
            let given: Vec<(&str, i64)> = base.iter().chain(shape.iter()).copied().collect();
            direct_config(space, &given)
        })
        .collect()
}
