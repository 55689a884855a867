//! The DNN convolution case (examples/common/cases/dnn_conv/) without a device: layers, host
//! references, the constraint levels of its space and the parameters of each layer.

use super::*;

/// An H100 SXM's properties as the CUDA backend reads them.
fn h100() -> Target {
    Target {
        language: Language::Cuda,
        device: DeviceInfo {
            backend: "cuda".into(),
            max_work_group_size: 1024,
            max_work_item_sizes: [1024, 1024, 64],
            local_mem_bytes: 227 * 1024,
            compute_units: 132,
            warp_width: 32,
            registers_per_compute_unit: 65536,
            registers_per_work_group: 65536,
            local_mem_per_compute_unit: 228 * 1024,
            max_threads_per_compute_unit: 2048,
            max_work_groups_per_compute_unit: 32,
            clock_mhz: 1980,
            fp32_lanes_per_compute_unit: 128,
            ..DeviceInfo::default()
        },
    }
}

#[test]
fn dnn_conv_levels_prune_in_order_and_three_channel_layers_have_a_space() {
    use common::beast::{level_sizes, SMALL};
    use common::cases::dnn_conv::{space, Levels, ALEXNET, VGG16};
    let t = h100();
    assert_eq!(
        t.device.fp32_peak_flops(),
        Some(132.0 * 128.0 * 2.0 * 1980e6)
    );
    // The levels prune in order, on the small network's 3-channel layer (the largest spaces
    // are those of 3-channel layers): building every level of every real layer took most
    // of this suite's time in debug builds (AlexNet L1's algorithm level alone holds 484
    // million configurations; each layer's takes tens of seconds to count).
    for layer in &SMALL[..1] {
        let sizes = level_sizes(layer, &t).unwrap();
        let n: Vec<u128> = sizes.iter().map(|s| s.1).collect();
        assert!(
            n[0] > n[1] && n[1] >= n[2] && n[2] > n[3] && n[3] > 0,
            "{}: {n:?}",
            layer.name
        );
    }
    // The 3-channel layers, which have parameters of their own, keep configurations once
    // all three levels prune (the GPU runs tune every layer of both networks).
    for layer in [&ALEXNET[0], &VGG16[0]] {
        let space = space(layer, &t, Levels::Hardware).unwrap();
        assert!(!space.is_empty(), "{}", layer.name);
    }
    // Without a device, the OpenCL space assumes typical limits and is not empty either.
    let l2 = space(&ALEXNET[1], &on(Language::OpenCl), Levels::Hardware).unwrap();
    assert!(!l2.is_empty());
}

/// `n` configurations of `space`, evenly spread over its indices (the spaces have millions).
fn spread(space: &tune::Space, n: u128) -> impl Iterator<Item = tune::Config> + '_ {
    let len = space.len();
    (0..n.min(len)).filter_map(move |k| space.get(k * len / n.min(len)))
}

/// The pruning report's fill-up draws what the hardware level removed: the predicate it
/// uses accepts exactly the hardware-level space within the software-level one.
#[test]
fn dnn_conv_hardware_predicate_is_the_hardware_level() {
    use common::beast::SMALL;
    use common::cases::dnn_conv::{hardware_allows, space, Levels, ALEXNET};
    for (layer, t) in [(SMALL[1], h100()), (ALEXNET[1], on(Language::OpenCl))] {
        let wide = space(&layer, &t, Levels::Software).unwrap();
        let hw = space(&layer, &t, Levels::Hardware).unwrap();
        let (mut kept, mut pruned) = (0, 0);
        for c in spread(&wide, 20_000) {
            let allowed = hardware_allows(&layer, &t, &c);
            assert_eq!(
                allowed,
                hw.contains(&c),
                "{}: {}",
                layer.name,
                wide.describe(&c)
            );
            kept += usize::from(allowed);
            pruned += usize::from(!allowed);
        }
        assert!(kept > 0 && pruned > 0, "{}: {kept} {pruned}", layer.name);
        assert!(hw.len() < wide.len(), "{}", layer.name);
    }
}

/// The layers start from the SGEMM shapes with float4 loads and 32-bit offsets, from
/// the kernel as it was before them, and from the first shape with a split reduction or
/// 96-channel tiles where those fit; and the new parameters are pruned where they cannot
/// apply: 32-bit offsets past 2^31 elements, precomputed offsets in the channels-innermost
/// order or past what their packing holds, filter vectors that would be misaligned.
#[test]
fn dnn_conv_starts_and_prunes_the_load_and_offset_parameters() {
    use common::cases::dnn_conv::{
        fits_i32, fits_packed_offsets, max_split, slot, space, DnnConv, Layer, Levels, Pass,
        ALEXNET, VGG16,
    };
    let t = h100();
    // Both reduction orders, with and without the 64 x 256 tiles, split reductions and
    // 96-channel tiles (building the spaces of all 14 layers takes minutes in a debug
    // build; the GPU run starts every layer).
    for layer in [ALEXNET[0], ALEXNET[1], ALEXNET[3], VGG16[0], VGG16[4]].iter() {
        let study = DnnConv::new(*layer);
        let s = study.space(&t).unwrap();
        let starts = study.known_good(&t, &s);
        // The direct path's starts come first, on conv1_1 only (C*R*S 27); the GEMM's follow.
        let algo = |c: &tune::Config| c.get::<usize>(slot::ALGO);
        let direct = starts.iter().take_while(|c| algo(c) == 1).count();
        assert_eq!(direct > 0, layer.name == "conv1_1", "{}", layer.name);
        assert!(starts[direct..].iter().all(|c| algo(c) == 0));
        let starts = starts[direct..].to_vec();
        // The 64 x 256 tiles where 256 divides batch x pixels (not AlexNet L1's 387200);
        // SPLITK 2 and 3 where their workspace fits (AlexNet L4's 5.5 M outputs, not the
        // others'); 96-channel tiles where they divide the out channels (L2's 192).
        let wide_fits = layer.npq() % 256 == 0;
        let splits = [2, 3]
            .iter()
            .filter(|&&k| k <= max_split(layer, Pass::Forward))
            .count();
        let ninety_six = layer.ko % 96 == 0;
        // Narrow load rows (LCOLS 8, 16) and the staged patch (PATCH, OSTAGE) in the
        // filters' order: 3 channels (L1, conv1_1); runs of pixels (PATCH 1) among them.
        let narrow = layer.c % 16 != 0;
        let patch = |c: &tune::Config| c.get::<usize>(slot::PATCH);
        let patches = starts.iter().filter(|c| patch(c) > 0).count();
        assert_eq!(patches > 0, narrow, "{}", layer.name);
        // The short reductions' starts (TILES, KEXACT, STCS), each with the last k step
        // unpadded: all 7 on VGG16 conv1_1, on AlexNet L1 (3025 tiles of 128 pixels: no
        // TILES of 4 or 8 divides them) the one with a single tile.
        let exact = |c: &&tune::Config| c.get::<usize>(slot::KEXACT) == 1;
        let tiled = starts.iter().filter(exact).count();
        let expected = match layer.name {
            "conv1_1" => 7,
            "L1" => 1,
            _ => 0,
        };
        assert_eq!(tiled, expected, "{}", layer.name);
        if layer.name == "conv1_1" {
            assert!(starts.iter().any(|c| c.get::<usize>(slot::TILES) == 8
                && c.get::<usize>(slot::BK) == 32
                && c.get::<usize>(slot::STCS) == 1));
        }
        // And the gather checked by tap masks (MASK), 4 starts, 2 with the output staged.
        let masks = starts
            .iter()
            .filter(|c| c.get::<usize>(slot::MASK) == 1 && !exact(c))
            .count();
        if narrow {
            assert!(starts.iter().any(|c| patch(c) == 1), "{}", layer.name);
            assert!(starts.iter().any(|c| c.get::<usize>(slot::OSTAGE) == 1));
            assert!(starts
                .iter()
                .any(|c| c.get::<usize>(slot::OSTAGE) == 1 && patch(c) == 0));
        }
        assert_eq!(masks, if narrow { 4 } else { 0 }, "{}", layer.name);
        assert_eq!(
            starts.len(),
            3 + usize::from(wide_fits)
                + splits
                + usize::from(ninety_six)
                + 2 * usize::from(narrow)
                + patches
                + masks
                + tiled,
            "{}",
            layer.name
        );
        assert_eq!(splits, if layer.name == "L4" { 2 } else { 0 });
        assert_eq!(ninety_six, layer.name == "L2");
        let (va, vb, i32_) = (
            starts[0].get::<usize>(slot::VA),
            starts[0].get::<usize>(slot::VB),
            starts[0].get::<usize>(slot::I32),
        );
        assert_eq!((va, vb, i32_), (4, 4, 1), "{}", layer.name);
        let before = &starts[1 + usize::from(wide_fits)];
        assert_eq!(
            [slot::VA, slot::VB, slot::I32, slot::PRE].map(|x| before.get::<usize>(x)),
            [1, 1, 0, 0],
            "{}",
            layer.name
        );
        let split: Vec<usize> = starts
            .iter()
            .map(|c| c.get::<usize>(slot::SPLITK))
            .filter(|&k| k > 1)
            .collect();
        assert_eq!(split.len(), splits, "{}", layer.name);
        let unmasked = &starts[..starts.len() - masks - tiled];
        if ninety_six {
            assert_eq!(unmasked[unmasked.len() - 2].get::<usize>(slot::BM), 96);
        }
        assert_eq!(unmasked.last().unwrap().get::<usize>(slot::VB), 1);
        // The filters' order (AlexNet L1, VGG16 conv1_1) starts with the offset table.
        let korder = starts[0].get::<usize>(slot::KORDER);
        assert_eq!(starts[0].get::<usize>(slot::PRE), usize::from(korder == 0));
    }
    for layer in ALEXNET.iter().chain(&VGG16) {
        assert!(
            fits_i32(layer) && fits_packed_offsets(layer),
            "{}",
            layer.name
        );
    }
    // A batch whose input passes 2^31 elements keeps only 64-bit offsets; 17 x 17 filters
    // have no packed taps.
    let big = VGG16[1].batch(1024);
    assert!(!fits_i32(&big));
    let tall = Layer {
        r: 17,
        ph: 8,
        ..ALEXNET[0]
    };
    assert!(!fits_packed_offsets(&tall));
    let small = common::beast::SMALL[0];
    let sw = space(&small, &t, Levels::Software).unwrap();
    for c in spread(&sw, 5000) {
        if c.get::<usize>(slot::PRE) == 1 {
            assert_eq!(c.get::<usize>(slot::KORDER), 0);
        }
    }
    // C*R*S = 75: vectors of 4 along the reduction stay aligned in the filters' rows
    // padded to 96 (kept by the software level, so by the algorithm level above it too,
    // whose space takes a minute to build in a debug build).
    assert!(spread(&sw, 5000)
        .any(|c| c.get::<usize>(slot::FLAYOUT) == 0 && c.get::<usize>(slot::VA) == 4));
}

#[test]
fn dnn_conv_layers_have_beasts_shapes() {
    use common::cases::dnn_conv::ALEXNET;
    let [l1, l2, l3, l4, l5] = ALEXNET;
    assert_eq!((l1.p(), l1.q(), l2.p(), l3.p()), (55, 55, 27, 13));
    // BEAST's Table 2, forward: GFLOP/s x ms gives each layer's work.
    for (l, gflops, ms) in [
        (l2, 5511.2, 10.4),
        (l3, 5493.5, 5.2),
        (l4, 5018.7, 7.6),
        (l5, 4983.2, 5.1),
    ] {
        let published = gflops * ms * 1e6;
        assert!(
            (l.flops() / published - 1.0).abs() < 0.02,
            "{}: {} vs {published}",
            l.name,
            l.flops()
        );
    }
}

/// Backward-data at stride 1 is the forward pass of the derived layer with the filters
/// flipped: what lets the forward kernel be tuned for it.
#[test]
fn backward_data_is_the_forward_pass_of_the_derived_layer() {
    use common::cases::dnn_conv::{flip_filters, host_conv, host_conv_backward_data, Layer};
    let l = Layer {
        name: "t",
        nb: 2,
        c: 3,
        h: 7,
        w: 6,
        ko: 4,
        r: 3,
        s: 2,
        su: 1,
        sv: 1,
        ph: 1,
        pw: 0,
    };
    let b = l.backward_data().unwrap();
    assert_eq!((b.c, b.ko, b.h, b.w, b.ph, b.pw), (4, 3, 7, 5, 1, 1));
    assert_eq!((b.p(), b.q()), (l.h, l.w));
    let f = |n: usize, m: usize| {
        (0..n)
            .map(|i| ((i * m) % 17) as f32 - 8.0)
            .collect::<Vec<_>>()
    };
    let dy = f(l.nb * l.ko * l.p() * l.q(), 7);
    let w = f(l.ko * l.c * l.r * l.s, 5);
    let want = host_conv_backward_data(&l, &dy, &w);
    assert_eq!(host_conv(&b, &dy, &flip_filters(&l, &w)), want);
    // A strided layer's backward-data is a transposed convolution: not this kernel's.
    assert_eq!(Layer { su: 2, ..l }.backward_data(), None);
}

#[test]
fn the_host_dnn_convolution_strides_and_pads() {
    use common::cases::dnn_conv::{host_conv, Layer};
    // One 4 x 4 image, a 3 x 3 filter of ones, stride 2, padding 1: sums of windows.
    let l = Layer {
        name: "t",
        nb: 1,
        c: 1,
        h: 4,
        w: 4,
        ko: 1,
        r: 3,
        s: 3,
        su: 2,
        sv: 2,
        ph: 1,
        pw: 1,
    };
    let x: Vec<f32> = (0..16).map(|i| i as f32).collect();
    let out = host_conv(&l, &x, &[1.0; 9]);
    // Windows centred on (0,0), (0,2), (2,0), (2,2).
    assert_eq!(
        out,
        [
            0. + 1. + 4. + 5.,
            1. + 2. + 3. + 5. + 6. + 7.,
            4. + 5. + 8. + 9. + 12. + 13.,
            5. + 6. + 7. + 9. + 10. + 11. + 13. + 14. + 15.
        ]
    );
    let args = |a: &[&str]| {
        common::beast::Args::parse(&a.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    };
    assert!(
        args(&["--net", "vgg16", "--layers", "conv1_2"])
            .unwrap()
            .selected()
            .unwrap()
            .len()
            == 1
    );
    assert!(args(&["--net", "lenet"]).unwrap().selected().is_err());
    assert!(args(&["--evals", "many"]).is_err());
    // Backward-data: AlexNet's stride-1 layers as forward layers, L1 (stride 4) skipped.
    let bwd = args(&["--pass", "backward-data"]).unwrap();
    let layers = bwd.selected().unwrap();
    let l2 = common::cases::dnn_conv::ALEXNET[1].backward_data().unwrap();
    assert_eq!(layers.len(), 4);
    assert_eq!(layers[0], l2);
    assert_eq!(bwd.label(), "alexnet-bwd-data");
    let l1 = args(&["--pass", "backward-data", "--layers", "L1"]).unwrap();
    assert!(l1.selected().is_err());
    assert!(args(&["--pass", "sideways"]).is_err());
    // Backward-filter: every layer, strided ones included.
    let bwf = args(&["--pass", "backward-filter"]).unwrap();
    assert_eq!(bwf.selected().unwrap().len(), 5);
    assert_eq!(bwf.label(), "alexnet-bwd-filter");
    // Validation of the tuned configuration only, once (VGG16's gigabyte outputs).
    assert!(args(&["--validate", "best"]).unwrap().validate_best);
    assert!(!args(&["--validate", "every"]).unwrap().validate_best);
    assert!(args(&["--validate", "never"]).is_err());
}

/// A split reduction keeps every slice non-empty and its workspace within its bound, and
/// the software level keeps exactly those splits.
#[test]
fn dnn_conv_splits_leave_no_slice_empty() {
    use common::cases::dnn_conv::{
        max_split, slot, space, split_fits, Levels, Pass, ALEXNET, SPLIT_WORKSPACE_BYTES, VGG16,
    };
    // 72 in steps of 16: 5 steps; 3 slices of 2, 2, 1; 4 slices of 2 would leave none.
    // In steps of 8: 9 steps, 4 slices of 3 would leave none; in steps of 4: 18 in 4 of 5.
    assert!(split_fits(72, 16, 3) && !split_fits(72, 16, 4));
    assert!(!split_fits(72, 8, 4) && split_fits(72, 4, 4));
    assert!(split_fits(27, 32, 1) && !split_fits(27, 32, 2));
    // AlexNet L4 and L5 (5.5 M outputs) split up to 4; VGG16 conv1_2 (411 M) does not.
    assert_eq!(max_split(&ALEXNET[3], Pass::Forward), 4);
    assert_eq!(max_split(&VGG16[1], Pass::Forward), 1);
    // Backward-filter's outputs are the filters' gradient: small enough for 64 slices, and
    // AlexNet L1's (64 x 363, where 64, session 4's largest, won) for 256.
    assert!(max_split(&ALEXNET[1], Pass::BackwardFilter) >= 64);
    assert_eq!(max_split(&ALEXNET[0], Pass::BackwardFilter), 256);
    assert!(max_split(&VGG16[8], Pass::BackwardFilter) < 64);
    for l in ALEXNET.iter().chain(&VGG16) {
        let k = max_split(l, Pass::Forward);
        assert!(k == 1 || k * l.ko * l.npq() * 4 <= SPLIT_WORKSPACE_BYTES);
    }
    let small = common::beast::SMALL[1];
    let sw = space(&small, &h100(), Levels::Software).unwrap();
    let mut seen = [false; 5];
    for c in spread(&sw, 20000) {
        let (k, bk) = (c.get::<usize>(slot::SPLITK), c.get::<usize>(slot::BK));
        assert!(split_fits(small.crs(), bk, k), "{}", sw.describe(&c));
        seen[k] = true;
    }
    assert!(seen[1] && seen[2] && seen[3] && seen[4], "{seen:?}");
}

/// The host's backward-filter is the adjoint of the forward convolution in the filters:
/// <dW(x, dy), w> = <dy, conv(x, w)> for any w, at a strided, padded layer.
#[test]
fn the_host_backward_filter_is_the_forward_passs_adjoint() {
    use common::cases::dnn_conv::{host_conv, host_conv_backward_filter, Layer};
    let l = Layer {
        name: "t",
        nb: 2,
        c: 3,
        h: 9,
        w: 8,
        ko: 4,
        r: 3,
        s: 2,
        su: 2,
        sv: 1,
        ph: 1,
        pw: 1,
    };
    let noise = |n: usize, seed: u32| -> Vec<f32> {
        (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
            })
            .collect()
    };
    let x = noise(l.nb * l.c * l.h * l.w, 1);
    let w = noise(l.ko * l.crs(), 2);
    let dy = noise(l.ko * l.npq(), 3);
    let dw = host_conv_backward_filter(&l, &x, &dy);
    let y = host_conv(&l, &x, &w);
    let dot = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(a, b)| f64::from(*a) * f64::from(*b))
            .sum::<f64>()
    };
    let (lhs, rhs) = (dot(&dw, &w), dot(&dy, &y));
    assert!(
        (lhs - rhs).abs() <= 1e-4 * rhs.abs().max(1.0),
        "{lhs} {rhs}"
    );
    assert!(dw.iter().any(|v| *v != 0.0));
}

/// Backward-filter keeps its records and best apart from the forward pass of the same
/// layer (a warm start from the other pass's measurements would be wrong).
#[test]
fn dnn_conv_passes_have_their_own_input_keys() {
    use common::cases::dnn_conv::{DnnConv, Pass, ALEXNET};
    let forward = DnnConv::new(ALEXNET[1]);
    let backward = DnnConv {
        pass: Pass::BackwardFilter,
        ..forward.clone()
    };
    assert_ne!(forward.input(), backward.input());
    assert_eq!(forward.input(), ALEXNET[1].to_string());
}

/// The staged patch's tiles and local memory on AlexNet L1 (55 x 55 outputs, 11 x 11
/// filters at stride 4): 8 x 8 tiles cover an image in 7 x 7, and the patch holds 39 input
/// rows of 4 phases x 10 columns, padded to 42 words so that the next output row starts 8
/// banks on (4 x 42 = 168 = 8 mod 32); 16 x 8 tiles in 4 x 7 with rows of 76 (4 x 18 + 4).
#[test]
fn dnn_conv_patch_tiles_and_bytes() {
    use common::cases::dnn_conv::{patch_bytes, pixel_tiles, slot, ALEXNET};
    let l1 = ALEXNET[0];
    let mut v = vec![0; slot::MINB];
    v[slot::BN] = 64;
    v[slot::PATCH] = 8;
    assert_eq!(pixel_tiles(&l1, 64, 8), 128 * 7 * 7);
    assert_eq!(patch_bytes(&v, &l1), 4 * 3 * 39 * 42);
    v[slot::BN] = 128;
    v[slot::PATCH] = 16;
    assert_eq!(pixel_tiles(&l1, 128, 16), 128 * 7 * 4);
    assert_eq!(patch_bytes(&v, &l1), 4 * 3 * 39 * 76);
    // Runs of 128 pixels: 24 per image (3072 for 3025 pixels), spanning at most 4 output
    // rows, so 23 input rows of 4 x 57 words, padded to 230 so that the next output row
    // starts 24 banks on (4 x 230 = 920 = 24 mod 32; 55 = 23 mod 32, within SU = 4).
    v[slot::PATCH] = 1;
    assert_eq!(pixel_tiles(&l1, 128, 1), 128 * 24);
    assert_eq!(patch_bytes(&v, &l1), 4 * 3 * 23 * 230);
    v[slot::PATCH] = 0;
    assert_eq!(pixel_tiles(&l1, 128, 0), l1.npq() / 128);
    assert_eq!(patch_bytes(&v, &l1), 0);
}

/// The output tile staged through local memory (OSTAGE) fits the local memory launched with
/// it: rows of BN + 4 floats without a patch (the kernel's OLD), BN + 1 with one. Session 6's
/// second GPU call faulted (illegal address) on AlexNet L1's best of its first call, whose
/// 64 x 132 staged floats the launch sized as 64 x 129, past its tiles and table.
#[test]
fn dnn_conv_staged_output_fits_its_local_memory() {
    use common::cases::dnn_conv::{derived, slot, ALEXNET};
    let l1 = ALEXNET[0];
    let mut v = vec![0; slot::MINB];
    for (s, x) in [
        (slot::BM, 64),
        (slot::BN, 128),
        (slot::BK, 8),
        (slot::MDIM, 8),
        (slot::NDIM, 16),
        (slot::VS, 4),
        (slot::DB, 1),
        (slot::PADA, 4),
        (slot::PADB, 4),
        (slot::VA, 4),
        (slot::VB, 2),
        (slot::I32, 1),
        (slot::PRE, 1),
        (slot::SPLITK, 1),
        (slot::LCOLS, 16),
        (slot::OSTAGE, 1),
        (slot::MASK, 1),
    ] {
        v[s] = x;
    }
    assert!(derived(&v, &l1).local_bytes >= 4 * 64 * (128 + 4));
    v[slot::MASK] = 0;
    v[slot::PATCH] = 16;
    assert!(derived(&v, &l1).local_bytes >= 4 * 64 * (128 + 1));
}

/// The short reductions' parameters (TILES, KEXACT and, on CUDA, STCS) are offered on the
/// 3-channel layers and where C*R*S is at most two k steps of 32, nowhere else (each other
/// layer keeps its space); the tap masks are offered on both backends (their table holds
/// 32-bit offsets, 8 bytes an entry); several tiles per work-group only unsplit, unstaged,
/// with the output from registers and a whole number of them per work-group.
#[test]
fn dnn_conv_short_reductions_have_pixel_tiles_and_masks_on_both_backends() {
    use common::beast::SMALL;
    use common::cases::dnn_conv::slot;
    use common::cases::dnn_conv::{cartesian, derived, space, Layer, Levels, ALEXNET, VGG16};
    let (cuda, opencl) = (Language::Cuda, Language::OpenCl);
    // conv1_1 against conv1_2 (64 channels): PATCH 5 x OSTAGE 2 x MASK 2 x TILES 5 x
    // KEXACT 2 (x STCS 2 on CUDA), and the direct path's parameters (a reduction of 27).
    let ratio = |lang, a: &Layer, b: &Layer| cartesian(lang, a) / cartesian(lang, b);
    // ALGO, DPX, DQK, DWX, DWY, DWK, DWMEM, DXMEM, DROWS, then DOST (3 values on CUDA, 2 on
    // OpenCL).
    let direct = 2 * 3 * 4 * 6 * 6 * 4 * 2 * 2 * 7;
    assert_eq!(
        ratio(cuda, &VGG16[0], &VGG16[1]),
        5 * 2 * 2 * 5 * 2 * 2 * direct * 3
    );
    assert_eq!(
        ratio(opencl, &VGG16[0], &VGG16[1]),
        5 * 2 * 2 * 5 * 2 * direct * 2
    );
    assert_eq!(ratio(opencl, &ALEXNET[0], &ALEXNET[1]), 5 * 2 * 2 * 5 * 2);
    // 16 channels of 1 x 1: a reduction of 16, channels innermost possible, no patch.
    let pointwise = Layer {
        r: 1,
        s: 1,
        ph: 0,
        pw: 0,
        ..VGG16[1]
    };
    let pointwise = Layer { c: 16, ..pointwise };
    assert_eq!(ratio(cuda, &pointwise, &VGG16[1]), 5 * 2 * 2 * direct * 3);
    for layer in ALEXNET[1..].iter().chain(&VGG16[2..]) {
        assert_eq!(
            cartesian(cuda, layer),
            cartesian(cuda, &VGG16[1]),
            "{}",
            layer.name
        );
    }
    // MASK's table: an offset and the tap bits per reduction index (4 more bytes than PRE's).
    let mut v = vec![0; slot::MINB];
    for (s, x) in [
        (slot::BM, 64),
        (slot::BN, 128),
        (slot::BK, 16),
        (slot::MDIM, 8),
        (slot::NDIM, 16),
        (slot::VS, 4),
        (slot::VA, 4),
        (slot::VB, 4),
        (slot::I32, 1),
        (slot::PRE, 1),
        (slot::SPLITK, 1),
    ] {
        v[s] = x;
    }
    let plain = derived(&v, &VGG16[0]).local_bytes;
    v[slot::MASK] = 1;
    assert_eq!(derived(&v, &VGG16[0]).local_bytes, plain + 4 * 32);
    // The constraints on TILES, in the software-level space of the small 3-channel layer.
    let s1 = SMALL[0];
    let sw = space(&s1, &on(opencl), Levels::Software).unwrap();
    let mut tiled = 0;
    for c in spread(&sw, 20_000) {
        let t = c.get::<usize>(slot::TILES);
        if t > 1 {
            tiled += 1;
            assert_eq!(c.get::<usize>(slot::SPLITK), 1);
            assert_eq!(c.get::<usize>(slot::PATCH), 0);
            assert_eq!(c.get::<usize>(slot::OSTAGE), 0);
            assert_eq!((s1.npq() / c.get::<usize>(slot::BN)) % t, 0);
        }
    }
    assert!(tiled > 0);
    assert!(spread(&sw, 20_000).any(|c| c.get::<usize>(slot::MASK) == 1));
}

/// The direct path (ALGO 1) is offered only on the forward pass of short reductions (C*R*S
/// at most 64: VGG16 conv1_1, not AlexNet L1's 363 nor any other layer), where each path
/// fixes the other's parameters (no configuration repeats another), its out-channel block
/// divides the layer's and its work-group, registers and local memory fit the device; the
/// starts measure it first there; elsewhere every one of its parameters has one value.
#[test]
fn dnn_conv_direct_path_is_offered_only_for_short_reductions() {
    use common::cases::dnn_conv::{
        direct_derived, direct_offered, slot, space, space_for, DnnConv, Levels, Pass, ALEXNET,
        DIRECT_MAX_CRS, VGG16,
    };
    let t = h100();
    let algo_values = |s: &tune::Space| s.params()[slot::ALGO].domain_len();
    for layer in ALEXNET.iter().chain(&VGG16) {
        let short = layer.crs() <= DIRECT_MAX_CRS;
        assert_eq!(
            direct_offered(layer, Pass::Forward),
            short,
            "{}",
            layer.name
        );
        assert!(!direct_offered(layer, Pass::BackwardFilter));
        assert_eq!(short, layer.name == "conv1_1", "{}", layer.name);
    }
    // Every other layer keeps its space: one value for each of the direct path's
    // parameters, ALGO 0 (AlexNet L2's at the hardware level, as the GPU runs build it).
    let l2 = space(&ALEXNET[1], &t, Levels::Hardware).unwrap();
    for s in [slot::ALGO].into_iter().chain(slot::DPX..=slot::DOST) {
        assert_eq!(l2.params()[s].domain_len(), 1, "{}", l2.params()[s].name());
    }
    let bwd = space_for(&ALEXNET[0], &t, Levels::Software, Pass::BackwardFilter).unwrap();
    assert_eq!(algo_values(&bwd), 1);
    // conv1_1: both paths, each with the other's parameters at their first values.
    let conv = VGG16[0];
    let s = space(&conv, &t, Levels::Hardware).unwrap();
    assert_eq!(algo_values(&s), 2);
    let first = |c: &tune::Config, slots: &[usize]| {
        slots.iter().all(|&k| {
            let p = &s.params()[k];
            s.values(c)[k].1 == p.domain_value(0).unwrap()
        })
    };
    let (mut direct, mut gemm) = (0, 0);
    for c in spread(&s, 20_000) {
        if c.get::<usize>(slot::ALGO) == 1 {
            direct += 1;
            let gemm_slots: Vec<usize> = (slot::BM..=slot::KEXACT)
                .filter(|&k| k != slot::UNR)
                .collect();
            assert!(first(&c, &gemm_slots), "{}", s.describe(&c));
            let v: Vec<usize> = (0..slot::MINB).map(|k| c.get::<usize>(k)).collect();
            let d = direct_derived(&v, &conv);
            assert_eq!(conv.ko % d.channels, 0);
            assert_eq!(d.nt % 32, 0);
            assert!(d.nt <= 1024 && d.registers <= 255 && d.local_bytes <= 227 * 1024);
        } else {
            gemm += 1;
            let direct_slots: Vec<usize> = (slot::DPX..=slot::DOST).collect();
            assert!(first(&c, &direct_slots), "{}", s.describe(&c));
        }
    }
    assert!(direct > 0 && gemm > 0, "{direct} {gemm}");
    // The starts: the direct path's first, then the GEMM's.
    let study = DnnConv::new(conv);
    let starts = study.known_good(&t, &s);
    assert_eq!(starts[0].get::<usize>(slot::ALGO), 1);
    assert!(starts.iter().any(|c| c.get::<usize>(slot::ALGO) == 0));
    // Where it is not offered, a direct configuration is not in the space.
    assert!(common::cases::dnn_conv::direct_config(&l2, &[("DPX", 8)]).is_none());
}

/// `--pin ALGO=1` searches the direct path alone: every configuration of the pinned space
/// is a direct one, each also in the whole space; a pin of an unknown parameter or of a
/// value outside its set is an error, not an empty space.
#[test]
fn dnn_conv_pinned_space_is_the_part_that_has_the_pins() {
    use common::cases::dnn_conv::{slot, space, space_pinned, Levels, Pass, VGG16};
    let t = h100();
    let conv = VGG16[0];
    let pin = |name: &str, v: usize| vec![(name.to_string(), v)];
    let whole = space(&conv, &t, Levels::Hardware).unwrap();
    let direct = space_pinned(&conv, &t, Levels::Hardware, Pass::Forward, &pin("ALGO", 1)).unwrap();
    assert_eq!(direct.params()[slot::ALGO].domain_len(), 1);
    let mut n = 0;
    for c in spread(&direct, 2_000) {
        assert_eq!(c.get::<usize>(slot::ALGO), 1);
        assert!(
            whole.config_from_values(direct.values(&c)).is_ok(),
            "{}",
            direct.describe(&c)
        );
        n += 1;
    }
    assert!(n > 100, "{n}");
    for bad in [pin("NOPE", 1), pin("ALGO", 2)] {
        assert!(space_pinned(&conv, &t, Levels::Hardware, Pass::Forward, &bad).is_err());
    }
}

/// The direct path's staged output (DOST): offered on both dialects (the bulk copies and
/// the work-group-stores-only value 2 on CUDA), its two row-block buffers counted in the
/// local memory the launch sizes, and refused where an output row is not whole float4s
/// (the copies need 16-byte aligned rows).
#[test]
fn dnn_conv_direct_staged_output_is_sized_and_constrained() {
    use common::cases::dnn_conv::{
        direct_config, direct_derived, slot, space_pinned, Layer, Levels, Pass, VGG16,
    };
    let conv = VGG16[0];
    // The direct path alone (its spaces build in seconds; the whole space's take minutes
    // in a debug build).
    let direct = |layer: &Layer, t: &Target| {
        let pin = vec![("ALGO".to_string(), 1)];
        space_pinned(layer, t, Levels::Hardware, Pass::Forward, &pin).unwrap()
    };
    let cuda = direct(&conv, &h100());
    let dost = |s: &tune::Space| s.params()[slot::DOST].domain_len();
    assert_eq!(dost(&cuda), 3);
    assert_eq!(dost(&direct(&conv, &on(Language::OpenCl))), 2);
    // Session 9's winner: 8 x 4 x 4 work-items of 4 pixels x 8 channels: 32 channels x 4
    // rows x 32 columns per row block, twice.
    let mut v = vec![0; slot::MINB + 1];
    for (s, x) in [
        (slot::ALGO, 1),
        (slot::DPX, 4),
        (slot::DQK, 8),
        (slot::DWX, 8),
        (slot::DWY, 4),
        (slot::DWK, 4),
        (slot::DXMEM, 1),
        (slot::DROWS, 4),
    ] {
        v[s] = x;
    }
    let plain = direct_derived(&v, &conv).local_bytes;
    for d in [1, 2] {
        v[slot::DOST] = d;
        assert_eq!(
            direct_derived(&v, &conv).local_bytes,
            plain + 4 * 2 * 32 * 4 * 32
        );
    }
    let shape = |d: i64| {
        vec![
            ("DQK", 8),
            ("DWX", 8),
            ("DWY", 4),
            ("DWK", 4),
            ("DXMEM", 1),
            ("MINB", 1),
            ("DOST", d),
        ]
    };
    for d in 0..3 {
        assert!(direct_config(&cuda, &shape(d)).is_some(), "DOST {d}");
    }
    // 3 x 3 over 3 channels with 30 output columns: no staged output.
    let odd = Layer {
        name: "odd",
        w: 30,
        h: 30,
        ..conv
    };
    assert_eq!(odd.q() % 4, 2);
    let s = direct(&odd, &h100());
    assert!(direct_config(&s, &shape(0)).is_some());
    assert!(direct_config(&s, &shape(1)).is_none());
    assert!(direct_config(&s, &shape(2)).is_none());
}
