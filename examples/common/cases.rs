//! The seed case studies as (space, kernel spec) pairs, shared by the examples and the tests.

use tune::backend::{BufferArg, DeviceInfo, HostData, KernelSpec, ReferenceKernel, Tolerance};
use tune::{Bound, Config, Param, Result, Space, SpaceBuilder};

/// A case study: what to tune and how much work one run does.
pub struct Case {
    /// The tunable's name, as recorded (`conv`, `gemm`, ...).
    pub name: String,
    /// The input it is tuned for, as recorded (`8192x4096,fs=3`).
    pub input: String,
    /// The search space.
    pub space: Space,
    /// The kernel and how to run, time and validate it.
    pub spec: KernelSpec,
    /// Floating-point operations of one run (0 when the case is reported in bytes).
    pub flops: f64,
    /// Bytes moved by one run (for memory-bound cases).
    pub bytes: f64,
}

/// A case study without its spec (which the evaluator takes).
pub struct Info {
    /// The tunable's name.
    pub name: String,
    /// The input it is tuned for.
    pub input: String,
    /// The search space.
    pub space: Space,
    /// Floating-point operations of one run.
    pub flops: f64,
    /// Bytes moved by one run.
    pub bytes: f64,
}

impl Case {
    /// The case's description and its spec.
    pub fn split(self) -> (Info, KernelSpec) {
        (
            Info {
                name: self.name,
                input: self.input,
                space: self.space,
                flops: self.flops,
                bytes: self.bytes,
            },
            self.spec,
        )
    }
}

fn floats(b: &BufferArg) -> &[f32] {
    match b.data() {
        HostData::F32(v) => v,
        _ => &[],
    }
}

/// CLTune's copy: WPT in {1, 2, 4}, global size n / WPT, local size LS.
pub fn copy(n: usize) -> Result<Case> {
    const WPT: usize = 0;
    const LS: usize = 1;
    let space = SpaceBuilder::new()
        .param(Param::<usize>::values("WPT", [1, 2, 4]))
        .param(Param::<usize>::values("LS", [32, 64, 128, 256, 512]))
        .build()?;
    let spec = KernelSpec::new(include_str!("../../kernels/copy.cl"), "copy")
        .global(move |c| [n / c.get::<usize>(WPT)])
        .local(|c| [c.get::<usize>(LS)])
        .round_up_global(true)
        .scalar(n as i32)
        .buffer(BufferArg::random::<f32>(n, 1))
        .buffer(BufferArg::zeros::<f32>(n).output())
        .tolerance(Tolerance::Exact)
        .reference(|a| Ok(vec![a.buffer::<f32>(1)?.to_vec().into()]));
    Ok(Case {
        name: "copy".into(),
        input: format!("n={n}"),
        space,
        spec,
        flops: 0.0,
        bytes: 8.0 * n as f64,
    })
}

/// ATF's saxpy: WPT in [1, n] dividing n, LS in [1, n] dividing n / WPT; with
/// `min_global > 1`, WPT is also at most `n / min_global`, so that at least `min_global`
/// work-items share the work (on a GPU a configuration with a handful of work-items runs for
/// seconds; `min_global = 1` is ATF's space).
pub fn saxpy(n: usize, min_global: usize) -> Result<Case> {
    const WPT: usize = 0;
    const LS: usize = 1;
    let space = SpaceBuilder::new()
        .param(
            Param::<usize>::range("WPT", 1..=n)
                .divides(&[], move |_| n)
                .at_most(&[], move |_| (n / min_global.max(1)).max(1)),
        )
        .param(
            Param::<usize>::range("LS", 1..=n)
                .divides(&[WPT], move |b: &Bound| n / b.get::<usize>(WPT)),
        )
        .build()?;
    let a = 2.5f32;
    let spec = KernelSpec::new(include_str!("../../kernels/saxpy.cl"), "saxpy")
        .global(move |c| [n / c.get::<usize>(WPT)])
        .local(|c| [c.get::<usize>(LS)])
        .scalar(n as i32)
        .scalar(a)
        .buffer(BufferArg::random::<f32>(n, 1))
        .buffer(BufferArg::random::<f32>(n, 2).output())
        .reference(move |args| {
            let x = args.buffer::<f32>(2)?;
            let y = args.buffer::<f32>(3)?;
            Ok(vec![x
                .iter()
                .zip(y)
                .map(|(x, y)| a * x + y)
                .collect::<Vec<f32>>()
                .into()])
        });
    Ok(Case {
        name: "saxpy".into(),
        input: format!("n={n}"),
        space,
        spec,
        flops: 2.0 * n as f64,
        bytes: 12.0 * n as f64,
    })
}

/// The slots of the convolution's parameters.
pub mod conv_slots {
    /// Work-group size in x.
    pub const TBX: usize = 0;
    /// Work-group size in y.
    pub const TBY: usize = 1;
    /// Outputs per work-item in x.
    pub const WPTX: usize = 2;
    /// Outputs per work-item in y.
    pub const WPTY: usize = 3;
    /// Local memory mode.
    pub const LOCAL: usize = 4;
    /// Vector width.
    pub const VECTOR: usize = 5;
    /// Unroll factor.
    pub const UNROLL_FACTOR: usize = 6;
    /// Padding.
    pub const PADDING: usize = 7;
}

/// The local size of a convolution configuration (enlarged by the halo for LOCAL == 2).
pub fn conv_local(c: &Config, fs: usize) -> [usize; 2] {
    use conv_slots::*;
    let hfs = fs / 2;
    let (tbx, tby) = (c.get::<usize>(TBX), c.get::<usize>(TBY));
    let (wx, wy) = (c.get::<usize>(WPTX), c.get::<usize>(WPTY));
    if c.get::<usize>(LOCAL) == 2 {
        [tbx + (2 * hfs).div_ceil(wx), tby + (2 * hfs).div_ceil(wy)]
    } else {
        [tbx, tby]
    }
}

/// CLTune's 2D convolution (Table II) of a `w` x `h` image with an `fs` x `fs` filter.
pub fn conv(w: usize, h: usize, fs: usize) -> Result<Case> {
    use conv_slots::*;
    let hfs = fs / 2;
    let space = SpaceBuilder::new()
        .param(Param::<usize>::values("TBX", [8, 16, 32, 64]))
        .param(Param::<usize>::values("TBY", [8, 16, 32, 64]))
        .param(
            Param::<usize>::values("WPTX", [1, 2, 4, 8]).constraint(&[TBX], move |b: &Bound| {
                w % (b.get::<usize>(TBX) * b.get::<usize>(WPTX)) == 0
            }),
        )
        .param(
            Param::<usize>::values("WPTY", [1, 2, 4, 8]).constraint(&[TBY], move |b: &Bound| {
                h % (b.get::<usize>(TBY) * b.get::<usize>(WPTY)) == 0
            }),
        )
        .param(Param::<usize>::values("LOCAL", [0, 1, 2]))
        .param(
            Param::<usize>::values("VECTOR", [1, 2, 4])
                .divides(&[WPTX], |b: &Bound| b.get::<usize>(WPTX)),
        )
        // The direct path (LOCAL 0) keeps input rows in registers, which needs the filter
        // loops unrolled: UNROLL_FACTOR 1 would only repeat the unrolled kernel.
        .param(
            Param::<usize>::values("UNROLL_FACTOR", [1, fs])
                .constraint(&[LOCAL], move |b: &Bound| {
                    b.get::<usize>(LOCAL) > 0 || b.get::<usize>(UNROLL_FACTOR) == fs
                }),
        )
        .param(
            Param::<usize>::values("PADDING", [0, 1]).constraint(&[LOCAL], |b: &Bound| {
                b.get::<usize>(LOCAL) > 0 || b.get::<usize>(PADDING) == 0
            }),
        )
        .build()?;
    // Source rows padded to 128 bytes: aligned vector loads and whole cache lines.
    let src_w = (w + 2 * hfs).next_multiple_of(32);
    let src_h = h + 2 * hfs;
    let spec = KernelSpec::new(include_str!("../../kernels/conv.cl"), "conv")
        .define("IMG_W", w)
        .define("IMG_H", h)
        .define("FS", fs)
        .define("SRC_W", src_w)
        .global(move |c| {
            let l = conv_local(c, fs);
            let groups = [
                w / (c.get::<usize>(TBX) * c.get::<usize>(WPTX)),
                h / (c.get::<usize>(TBY) * c.get::<usize>(WPTY)),
            ];
            [groups[0] * l[0], groups[1] * l[1]]
        })
        .local(move |c| conv_local(c, fs))
        .static_local_memory(move |c| {
            if c.get::<usize>(LOCAL) == 0 {
                0
            } else {
                let tw = c.get::<usize>(TBX) * c.get::<usize>(WPTX) + 2 * hfs;
                let th = c.get::<usize>(TBY) * c.get::<usize>(WPTY) + 2 * hfs;
                4 * th * (tw + c.get::<usize>(PADDING))
            }
        })
        .buffer(BufferArg::random::<f32>(src_w * src_h, 1))
        .buffer(BufferArg::random::<f32>(fs * fs, 2))
        .buffer(BufferArg::zeros::<f32>(w * h).output())
        .tolerance(Tolerance::PerElement {
            abs: 1e-3,
            rel: 1e-3,
        })
        .reference(move |a| {
            let src = a.buffer::<f32>(0)?;
            let filt = a.buffer::<f32>(1)?;
            Ok(vec![conv_host(src, src_w, filt, w, h, fs).into()])
        });
    Ok(Case {
        name: "conv".into(),
        input: format!("{w}x{h},fs={fs}"),
        space,
        spec,
        flops: 2.0 * (w * h * fs * fs) as f64,
        bytes: 4.0 * ((w + 2 * hfs) * src_h + w * h) as f64,
    })
}

/// The host reference of the convolution (parallel over rows); `src` has rows of `src_w` floats.
pub fn conv_host(
    src: &[f32],
    src_w: usize,
    filt: &[f32],
    w: usize,
    h: usize,
    fs: usize,
) -> Vec<f32> {
    use rayon::prelude::*;
    let mut out = vec![0.0f32; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (x, o) in row.iter_mut().enumerate() {
            let mut acc = 0.0f32;
            for fy in 0..fs {
                for fx in 0..fs {
                    acc += filt[fy * fs + fx] * src[(y + fy) * src_w + x + fx];
                }
            }
            *o = acc;
        }
    });
    out
}

/// C = alpha * A^T * B + beta * C on the host (A: K x M, B: K x N, C: N x M; m fastest).
#[allow(clippy::too_many_arguments)]
pub fn gemm_host(
    m: usize,
    n: usize,
    k: usize,
    alpha: f32,
    beta: f32,
    a: &[f32],
    b: &[f32],
    c: &[f32],
) -> Vec<f32> {
    use rayon::prelude::*;
    let mut out = c.to_vec();
    out.par_chunks_mut(m).enumerate().for_each(|(j, col)| {
        for (i, o) in col.iter_mut().enumerate() {
            let mut acc = 0.0f32;
            for p in 0..k {
                acc += a[p * m + i] * b[p * n + j];
            }
            *o = alpha * acc + beta * *o;
        }
    });
    out
}

/// How a GEMM is validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// Against the host computation.
    Host,
    /// Against `kernels/gemm_reference.cl`.
    Kernel,
}

fn gemm_args(spec: KernelSpec, m: usize, n: usize, k: usize, check: Check) -> KernelSpec {
    let (alpha, beta) = (1.5f32, -0.5f32);
    let a = BufferArg::random::<f32>(k * m, 1);
    let b = BufferArg::random::<f32>(k * n, 2);
    let c = BufferArg::random::<f32>(n * m, 3);
    let spec = spec
        .scalar(m as i32)
        .scalar(n as i32)
        .scalar(k as i32)
        .scalar(alpha)
        .scalar(beta)
        .buffer(a)
        .buffer(b)
        .buffer(c.output())
        .tolerance(Tolerance::Norm(1e-4));
    match check {
        Check::Host => spec.reference(move |args| {
            let a = args.buffer::<f32>(5)?;
            let b = args.buffer::<f32>(6)?;
            let c = args.buffer::<f32>(7)?;
            Ok(vec![gemm_host(m, n, k, alpha, beta, a, b, c).into()])
        }),
        Check::Kernel => spec.reference_kernel(
            ReferenceKernel::new(
                include_str!("../../kernels/gemm_reference.cl"),
                "gemm_reference",
            )
            .global([m, n]),
        ),
    }
}

/// The slots of the GEMM's parameters.
pub mod gemm_slots {
    #![allow(missing_docs)]
    pub const MWG: usize = 0;
    pub const NWG: usize = 1;
    pub const KWG: usize = 2;
    pub const MDIMC: usize = 3;
    pub const NDIMC: usize = 4;
    pub const MDIMA: usize = 5;
    pub const NDIMB: usize = 6;
    pub const KWI: usize = 7;
    pub const VWM: usize = 8;
    pub const VWN: usize = 9;
    pub const STRM: usize = 10;
    pub const STRN: usize = 11;
    pub const SA: usize = 12;
    pub const SB: usize = 13;
}

/// CLTune's GEMM (Table IV): 241,600 valid configurations when 128 divides M and N and 32
/// divides K.
pub fn gemm(m: usize, n: usize, k: usize, check: Check) -> Result<Case> {
    use gemm_slots::*;
    let g = |b: &Bound, s| b.get::<usize>(s);
    let space = SpaceBuilder::new()
        .param(Param::<usize>::values("MWG", [16, 32, 64, 128]).divides(&[], move |_| m))
        .param(Param::<usize>::values("NWG", [16, 32, 64, 128]).divides(&[], move |_| n))
        .param(Param::<usize>::values("KWG", [16, 32]).divides(&[], move |_| k))
        .param(Param::<usize>::values("MDIMC", [8, 16, 32]))
        .param(Param::<usize>::values("NDIMC", [8, 16, 32]))
        .param(
            Param::<usize>::values("MDIMA", [8, 16, 32])
                .constraint(&[KWG, MDIMC, NDIMC], move |b: &Bound| {
                    g(b, KWG) % ((g(b, MDIMC) * g(b, NDIMC)) / g(b, MDIMA)) == 0
                }),
        )
        .param(
            Param::<usize>::values("NDIMB", [8, 16, 32])
                .constraint(&[KWG, MDIMC, NDIMC], move |b: &Bound| {
                    g(b, KWG) % ((g(b, MDIMC) * g(b, NDIMC)) / g(b, NDIMB)) == 0
                }),
        )
        .param(Param::<usize>::values("KWI", [2, 8]).divides(&[KWG], move |b: &Bound| g(b, KWG)))
        .param(Param::<usize>::values("VWM", [1, 2, 4, 8]).constraint(
            &[MWG, MDIMC, MDIMA],
            move |b: &Bound| {
                g(b, MWG) % (g(b, MDIMC) * g(b, VWM)) == 0
                    && g(b, MWG) % (g(b, MDIMA) * g(b, VWM)) == 0
            },
        ))
        .param(Param::<usize>::values("VWN", [1, 2, 4, 8]).constraint(
            &[NWG, NDIMC, NDIMB],
            move |b: &Bound| {
                g(b, NWG) % (g(b, NDIMC) * g(b, VWN)) == 0
                    && g(b, NWG) % (g(b, NDIMB) * g(b, VWN)) == 0
            },
        ))
        .param(Param::<usize>::values("STRM", [0, 1]))
        .param(Param::<usize>::values("STRN", [0, 1]))
        .param(Param::<usize>::values("SA", [0, 1]))
        .param(Param::<usize>::values("SB", [0, 1]))
        .build()?;
    let spec = KernelSpec::new(include_str!("../../kernels/gemm.cl"), "gemm")
        .global(move |c| {
            [
                m * c.get::<usize>(MDIMC) / c.get::<usize>(MWG),
                n * c.get::<usize>(NDIMC) / c.get::<usize>(NWG),
            ]
        })
        .local(|c| [c.get::<usize>(MDIMC), c.get::<usize>(NDIMC)])
        .static_local_memory(|c| {
            4 * c.get::<usize>(KWG)
                * (c.get::<usize>(SA) * c.get::<usize>(MWG)
                    + c.get::<usize>(SB) * c.get::<usize>(NWG))
        });
    Ok(Case {
        name: "gemm".into(),
        input: format!("m={m},n={n},k={k}"),
        space,
        spec: gemm_args(spec, m, n, k, check),
        flops: 2.0 * (m * n * k) as f64,
        bytes: 0.0,
    })
}

/// The slots of XgemmDirect's parameters.
pub mod xgemm_slots {
    #![allow(missing_docs)]
    pub const WGD: usize = 0;
    pub const MDIMCD: usize = 1;
    pub const NDIMCD: usize = 2;
    pub const MDIMAD: usize = 3;
    pub const NDIMBD: usize = 4;
    pub const KWID: usize = 5;
    pub const VWMD: usize = 6;
    pub const VWND: usize = 7;
    pub const PADA: usize = 8;
    pub const PADB: usize = 9;
}

/// CLBlast's XgemmDirect with ATF's ranges: WGD, MDIMCD, NDIMCD, MDIMAD, NDIMBD and KWID in
/// [1, max(M, N, K)], VWMD and VWND in {1, 2, 4, 8}, PADA and PADB; WGD is also bounded by the
/// device's local memory (two WGD x (WGD + 1) tiles of floats, at most 64 KiB), and a
/// work-item computes at most 256 elements of C ((WGD / MDIMCD) * (WGD / NDIMCD) <= 256: more
/// accumulators than a GPU has registers make the OpenCL compiler run for minutes) and at
/// most 4096 multiply-adds per unrolled k step (KWID * (WGD / MDIMCD) * (WGD / NDIMCD)).
pub fn xgemm_direct(
    m: usize,
    n: usize,
    k: usize,
    device: &DeviceInfo,
    check: Check,
) -> Result<Case> {
    use xgemm_slots::*;
    let r = m.max(n).max(k);
    let g = |b: &Bound, s| b.get::<usize>(s);
    // Tiles larger than 64 KiB of local memory do not pay off (and CPU devices report
    // megabytes, which would make the space huge).
    let lm = if device.local_mem_bytes == 0 {
        48 * 1024
    } else {
        device.local_mem_bytes.min(64 * 1024)
    };
    let max_wgd = (1..=r)
        .take_while(|w| 8 * w * (w + 1) <= lm)
        .last()
        .unwrap_or(1);
    let space = SpaceBuilder::new()
        .param(Param::<usize>::range("WGD", 1..=r).at_most(&[], move |_| max_wgd))
        .param(Param::<usize>::range("MDIMCD", 1..=r).divides(&[WGD], move |b: &Bound| g(b, WGD)))
        .param(
            Param::<usize>::range("NDIMCD", 1..=r)
                .divides(&[WGD], move |b: &Bound| g(b, WGD))
                .constraint(&[WGD, MDIMCD], move |b: &Bound| {
                    (g(b, WGD) / g(b, MDIMCD)) * (g(b, WGD) / g(b, NDIMCD)) <= 256
                }),
        )
        .param(
            Param::<usize>::range("MDIMAD", 1..=r)
                .divides(&[MDIMCD, NDIMCD], move |b: &Bound| {
                    g(b, MDIMCD) * g(b, NDIMCD)
                })
                .constraint(&[WGD, MDIMCD, NDIMCD], move |b: &Bound| {
                    g(b, WGD) % (g(b, MDIMCD) * g(b, NDIMCD) / g(b, MDIMAD)) == 0
                }),
        )
        .param(
            Param::<usize>::range("NDIMBD", 1..=r)
                .divides(&[MDIMCD, NDIMCD], move |b: &Bound| {
                    g(b, MDIMCD) * g(b, NDIMCD)
                })
                .constraint(&[WGD, MDIMCD, NDIMCD], move |b: &Bound| {
                    g(b, WGD) % (g(b, MDIMCD) * g(b, NDIMCD) / g(b, NDIMBD)) == 0
                }),
        )
        .param(
            Param::<usize>::range("KWID", 1..=r)
                .divides(&[WGD], move |b: &Bound| g(b, WGD))
                .constraint(&[WGD, MDIMCD, NDIMCD], move |b: &Bound| {
                    g(b, KWID) * (g(b, WGD) / g(b, MDIMCD)) * (g(b, WGD) / g(b, NDIMCD)) <= 4096
                }),
        )
        .param(Param::<usize>::values("VWMD", [1, 2, 4, 8]).constraint(
            &[WGD, MDIMCD, MDIMAD],
            move |b: &Bound| {
                g(b, WGD) % (g(b, MDIMCD) * g(b, VWMD)) == 0
                    && g(b, WGD) % (g(b, MDIMAD) * g(b, VWMD)) == 0
            },
        ))
        .param(Param::<usize>::values("VWND", [1, 2, 4, 8]).constraint(
            &[WGD, NDIMCD, NDIMBD],
            move |b: &Bound| {
                g(b, WGD) % (g(b, NDIMCD) * g(b, VWND)) == 0
                    && g(b, WGD) % (g(b, NDIMBD) * g(b, VWND)) == 0
            },
        ))
        .param(Param::bool("PADA"))
        .param(Param::bool("PADB"))
        .build()?;
    let spec = KernelSpec::new(
        include_str!("../../kernels/xgemm_direct.cl"),
        "xgemm_direct",
    )
    .global(move |c| {
        let wgd = c.get::<usize>(WGD);
        [
            m.div_ceil(wgd) * c.get::<usize>(MDIMCD),
            n.div_ceil(wgd) * c.get::<usize>(NDIMCD),
        ]
    })
    .local(|c| [c.get::<usize>(MDIMCD), c.get::<usize>(NDIMCD)])
    .static_local_memory(|c| {
        let wgd = c.get::<usize>(WGD);
        4 * wgd * (2 * wgd + usize::from(c.get::<bool>(PADA)) + usize::from(c.get::<bool>(PADB)))
    });
    // Timed one launch at a time: on NVIDIA's OpenCL a stream of back-to-back enqueues
    // costs about 10 us per launch, more than a single launch's 4.6 us floor.
    let flops = 2.0 * (m * n * k) as f64;
    let spec = spec.compile_time_limit(std::time::Duration::from_secs(20));
    Ok(Case {
        name: "xgemm_direct".into(),
        input: format!("m={m},n={n},k={k}"),
        space,
        spec: gemm_args(spec, m, n, k, check),
        flops,
        bytes: 0.0,
    })
}

/// A float buffer's contents (for tests).
pub fn buffer_floats(b: &BufferArg) -> Vec<f32> {
    floats(b).to_vec()
}
