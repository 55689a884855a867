//! The case-study descriptions (examples/common/cases/) without a device: every case builds
//! on every backend whose language it is written in, says which backend to use otherwise,
//! and its host reference, spaces and timing are the ones the GPU results were taken with.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../examples/common/mod.rs"]
mod common;

use common::cases::conv::Conv;
use common::cases::copy::Copy;
use common::cases::gemm::{self, Gemm, Layout};
use common::cases::kt_matmul::KtMatmul;
use common::cases::saxpy::Saxpy;
use common::cases::xgemm_direct::{back_to_back, XgemmDirect};
use common::cases::{floats, Language, Study, Target};
use tune::backend::DeviceInfo;
use tune::Value;

fn on(language: Language) -> Target {
    Target::without_device(language)
}

fn studies() -> Vec<Box<dyn Study>> {
    vec![
        Box::new(Copy { n: 4096 }),
        Box::new(Saxpy::new(4096)),
        Box::new(Conv {
            w: 64,
            h: 32,
            fs: 3,
        }),
        Box::new(Gemm::new(64, 64, 32)),
        Box::new(XgemmDirect(Gemm::new(20, 576, 25))),
        Box::new(KtMatmul { n: 256 }),
    ]
}

#[test]
fn every_case_builds_for_each_language_it_is_written_in() {
    for study in studies() {
        let languages = study.sources().languages();
        assert!(!languages.is_empty(), "{}", study.name());
        for language in Language::ALL {
            let target = on(language);
            match study.case(&target) {
                Ok(case) => {
                    assert!(languages.contains(&language), "{}", study.name());
                    assert!(!case.space.is_empty(), "{} on {language}", study.name());
                    assert_eq!(case.name, study.name());
                    assert_eq!(case.input, study.input());
                }
                Err(e) => {
                    assert!(!languages.contains(&language), "{}: {e}", study.name());
                    // The error says which backend runs the case.
                    let other = languages[0];
                    assert!(
                        e.to_string().contains(&format!("--backend {other}")),
                        "{}: {e}",
                        study.name()
                    );
                }
            }
        }
    }
}

#[test]
fn a_kernel_written_in_both_languages_is_the_same_tunable_with_its_own_fingerprint() {
    for study in studies() {
        if study.sources().languages().len() < 2 {
            continue;
        }
        let cl = study.case(&on(Language::OpenCl)).unwrap();
        let cu = study.case(&on(Language::Cuda)).unwrap();
        assert_eq!((&cl.name, &cl.input), (&cu.name, &cu.input));
        assert_ne!(cl.code, cu.code, "{}", study.name());
        assert_eq!(cl.flops, cu.flops);
        assert_eq!(cl.bytes, cu.bytes);
    }
}

#[test]
fn saxpy_has_one_space_for_both_languages() {
    let study = Saxpy::new(1 << 12);
    let cl = study.space(&on(Language::OpenCl)).unwrap();
    let cu = study.space(&on(Language::Cuda)).unwrap();
    // n = 2^12: 13 choices of WPT, then LS among the divisors of n / WPT.
    assert_eq!(cl.len(), (1..=13).sum::<u128>());
    assert_eq!(cl.len(), cu.len());
    let names = |s: &tune::Space| {
        s.params()
            .iter()
            .map(|p| p.name().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&cl), names(&cu));
    // At least 64 work-items: WPT at most 2^12 / 64.
    assert_eq!(
        Saxpy::new(1 << 12)
            .min_global(64)
            .space(&on(Language::OpenCl))
            .unwrap()
            .len(),
        (7..=13).sum::<u128>()
    );
}

#[test]
fn spaces_of_the_case_studies() {
    let cl = on(Language::OpenCl);
    let cu = on(Language::Cuda);
    // CLTune's GEMM (Table IV).
    assert_eq!(Gemm::new(128, 128, 32).space(&cl).unwrap().len(), 241_600);
    // The CUDA SGEMM: well-formed configurations only, and the classic one among them.
    let study = Gemm::new(4096, 4096, 4096);
    let s = study.space(&cu).unwrap();
    assert!(s.len() > 1000, "{}", s.len());
    for c in s.iter().take(3000) {
        let g = |n: &str| c.get::<usize>(s.slot(n).unwrap());
        let nt = (g("BM") / g("TM")) * (g("BN") / g("TN"));
        assert!((64..=1024).contains(&nt));
        assert_eq!((g("BM") * g("BK")) % (g("VA") * nt), 0);
        assert_eq!((g("BN") * g("BK")) % (g("VB") * nt), 0);
        assert!(gemm::sgemm_smem(&c) <= 227 * 1024);
    }
    assert_eq!(study.known_good(&cu, &s).len(), 1);
    assert!(study.known_good(&cl, &s).is_empty());
    let x = XgemmDirect(Gemm::new(20, 576, 25)).space(&cu).unwrap();
    assert!(x.len() > 1000, "{}", x.len());
    // 4 x 5 x 4 x 4 x 4 = 1280, less (16, 1) and (128, 16) of the block sizes.
    assert_eq!(KtMatmul { n: 256 }.space(&cu).unwrap().len(), 1280 - 2 * 64);
    // The convolution's parameters have the same names but for the unroll switch.
    let names = |t: &Target| {
        let s = Conv {
            w: 256,
            h: 128,
            fs: 3,
        }
        .space(t)
        .unwrap();
        s.params()
            .iter()
            .map(|p| p.name().to_string())
            .collect::<Vec<_>>()
    };
    let (ncl, ncu) = (names(&cl), names(&cu));
    assert_eq!(ncl.len(), ncu.len());
    let differ: Vec<_> = ncl.iter().zip(&ncu).filter(|(a, b)| a != b).collect();
    assert_eq!(
        differ,
        [(&"UNROLL_FACTOR".to_string(), &"UNROLL".to_string())]
    );
}

#[test]
fn xgemm_direct_on_opencl_is_bounded_by_the_local_memory() {
    let study = XgemmDirect(Gemm::new(30, 30, 30));
    let wgd_max = |local_mem_bytes| {
        let t = Target {
            language: Language::OpenCl,
            device: DeviceInfo {
                backend: "opencl".into(),
                local_mem_bytes,
                ..DeviceInfo::default()
            },
        };
        let s = study.space(&t).unwrap();
        s.iter().map(|c| c.get::<usize>(0)).max().unwrap()
    };
    // Two WGD x (WGD + 1) tiles of floats: 20 fit 3360 bytes, 10 fit 880.
    assert_eq!(wgd_max(8 * 20 * 21), 20);
    assert_eq!(wgd_max(8 * 10 * 11 + 7), 10);
    // An unknown device is taken to have 48 KiB: WGD up to 77, so all of [1, 30] here.
    assert_eq!(wgd_max(0), 30);
}

#[test]
fn small_gemms_are_timed_back_to_back() {
    // ATF's IS1-IS4 (M, N, K), then a large size: 64 launches per sample for XgemmDirect and
    // for cuBLAS alike below 1e8 flops (on CUDA; NVIDIA's OpenCL enqueues too slowly).
    for (m, n, k) in [(20, 576, 1), (20, 576, 25), (50, 64, 1), (10, 500, 64)] {
        assert_eq!(back_to_back(m, n, k), 64);
    }
    assert_eq!(back_to_back(512, 512, 256), 1);
    assert_eq!(back_to_back(4096, 4096, 4096), 1);
    let spec = |t| {
        format!(
            "{:?}",
            XgemmDirect(Gemm::new(20, 576, 25))
                .case(&on(t))
                .unwrap()
                .spec
        )
    };
    assert!(
        spec(Language::Cuda).contains("launches_per_sample: 64"),
        "{}",
        spec(Language::Cuda)
    );
    assert!(
        spec(Language::OpenCl).contains("launches_per_sample: 1"),
        "{}",
        spec(Language::OpenCl)
    );
}

/// `alpha * A * B + beta * C` by the definition, in f64, in `layout`.
fn naive(g: &Gemm, layout: Layout, a: &[f32], b: &[f32], c: &[f32]) -> Vec<f32> {
    let (m, n, k) = (g.m, g.n, g.k);
    let mut out = c.to_vec();
    for i in 0..m {
        for j in 0..n {
            let (ai, ci): (Box<dyn Fn(usize) -> usize>, usize) = match layout {
                Layout::RowMajor => (Box::new(move |p| i * k + p), i * n + j),
                Layout::Transposed => (Box::new(move |p| p * m + i), j * m + i),
            };
            let s: f64 = (0..k)
                .map(|p| f64::from(a[ai(p)]) * f64::from(b[p * n + j]))
                .sum();
            out[ci] = (f64::from(g.alpha) * s + f64::from(g.beta) * f64::from(c[ci])) as f32;
        }
    }
    out
}

#[test]
fn the_host_gemm_is_right_in_both_layouts() {
    let g = Gemm::new(7, 5, 3);
    let [a, b, c] = g.inputs();
    let (a, b, c) = (floats(&a), floats(&b), floats(&c));
    assert_eq!((a.len(), b.len(), c.len()), (21, 15, 35));
    for layout in [Layout::RowMajor, Layout::Transposed] {
        let got = g.host(layout, a, b, c);
        let want = naive(&g, layout, a, b, c);
        for (x, y) in got.iter().zip(&want) {
            assert!(
                (x - y).abs() <= 1e-6 * y.abs().max(1.0),
                "{layout:?}: {got:?} vs {want:?}"
            );
        }
    }
    // The layouts read the same numbers differently.
    assert_ne!(
        g.host(Layout::RowMajor, a, b, c),
        g.host(Layout::Transposed, a, b, c)
    );
}

#[test]
fn the_host_convolution_reads_padded_rows() {
    let conv = Conv { w: 5, h: 3, fs: 3 };
    assert_eq!(conv.pitch(Language::Cuda), 7);
    assert_eq!(conv.pitch(Language::OpenCl), 32);
    // An identity filter copies the image out of the padding.
    let pitch = 9;
    let src: Vec<f32> = (0..pitch * 5).map(|i| i as f32).collect();
    let mut filt = vec![0.0; 9];
    filt[4] = 1.0;
    let out = common::cases::conv::host(&src, pitch, &filt, 5, 3, 3);
    for y in 0..3 {
        for x in 0..5 {
            assert_eq!(out[y * 5 + x], src[(y + 1) * pitch + x + 1]);
        }
    }
}

#[test]
fn a_convolution_tuned_for_one_filter_size_carries_to_another() {
    let (c3, c7) = (
        Conv {
            w: 256,
            h: 128,
            fs: 3,
        },
        Conv {
            w: 256,
            h: 128,
            fs: 7,
        },
    );
    let cl = on(Language::OpenCl);
    let s3 = c3.space(&cl).unwrap();
    let s7 = c7.space(&cl).unwrap();
    // A direct (LOCAL 0) configuration, fully unrolled for 3x3.
    let best = s3
        .iter()
        .find(|c| c.get::<usize>(common::cases::conv::LOCAL) == 0)
        .unwrap();
    let values: Vec<(String, Value)> = s3
        .values(&best)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let carried = c7.carry(Language::OpenCl, &s7, &values).unwrap();
    assert_eq!(carried.get::<usize>(common::cases::conv::UNROLL), 7);
}

#[test]
fn the_backend_is_chosen_on_the_command_line() {
    use common::cli::parse;
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        parse(args(&["20x1*1x576", "--backend", "cuda", "7"])).unwrap(),
        (Some(Language::Cuda), args(&["20x1*1x576", "7"]))
    );
    assert_eq!(
        parse(args(&["--backend=opencl"])).unwrap(),
        (Some(Language::OpenCl), args(&[]))
    );
    assert_eq!(parse(args(&["4096"])).unwrap(), (None, args(&["4096"])));
    let e = parse(args(&["--backend", "metal"])).unwrap_err();
    assert!(
        e.contains("`metal`") && e.contains("`opencl` or `cuda`"),
        "{e}"
    );
    assert!(parse(args(&["--backend"])).is_err());
}

#[test]
fn a_backend_without_a_kernel_language_is_an_error() {
    let device = DeviceInfo {
        backend: "metal".into(),
        ..DeviceInfo::default()
    };
    let e = Language::of(&device).unwrap_err().to_string();
    assert!(e.contains("`metal`"), "{e}");
}

// The DNN convolution (BEAST) case: its layers, host references, constraint levels and
// parameters.
#[path = "cases/dnn_conv.rs"]
mod dnn_conv;
