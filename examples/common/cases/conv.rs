//! CLTune's 2D convolution (Table II) of a `w` x `h` image with an `fs` x `fs` filter
//! (kernels/conv.cl, kernels/conv.cu): `out[y][x] = sum filt[fy][fx] * src[y + fy][x + fx]`
//! over an image padded by `fs / 2` on every side, validated against a host convolution.
//!
//! Both kernels take CLTune's parameters (TBX, TBY, WPTX, WPTY, LOCAL, VECTOR, the unroll
//! switch, PADDING) with the tiles dividing the image, but they are two designs, and three
//! parameters mean something else in each; the space branches on the language there:
//! - VECTOR: the OpenCL kernel loads input rows and stores outputs VECTOR floats at a time
//!   in every mode (so VECTOR divides WPTX); the CUDA kernel uses it only for the vector
//!   loads of LOCAL = 2 (elsewhere it is fixed at 1, so no configuration repeats another).
//! - Unrolling: OpenCL's `UNROLL_FACTOR` is 1 or FS, and its direct path (LOCAL = 0) keeps
//!   input rows in registers, which needs the filter loops unrolled (so it is FS there);
//!   CUDA's `UNROLL` is 1 (unrolled) or 0 (rolled) in every mode.
//! - LOCAL = 2: the OpenCL work-group grows by the halo (the extra work-items only load);
//!   the CUDA block keeps its size and loads with vectors.
//!
//! The OpenCL kernel's input rows are padded to 128 bytes (its vector loads are casts that
//! need aligned rows); the CUDA kernel checks alignment itself and reads unpadded rows.

use tune::backend::{BufferArg, KernelSpec, Tolerance};
use tune::{Bound, Config, Param, Result, Space, SpaceBuilder, Value};

use super::{Language, Sources, Study, Target, Work};

/// Slot of TBX, the work-group size in x.
pub const TBX: usize = 0;
/// Slot of TBY, the work-group size in y.
pub const TBY: usize = 1;
/// Slot of WPTX, outputs per work-item in x.
pub const WPTX: usize = 2;
/// Slot of WPTY, outputs per work-item in y.
pub const WPTY: usize = 3;
/// Slot of LOCAL, the local-memory mode.
pub const LOCAL: usize = 4;
/// Slot of VECTOR, the vector width.
pub const VECTOR: usize = 5;
/// Slot of the unroll switch (`UNROLL_FACTOR` in OpenCL, `UNROLL` in CUDA).
pub const UNROLL: usize = 6;
/// Slot of PADDING, the extra column of the local tile.
pub const PADDING: usize = 7;

/// Most bytes of the CUDA kernel's static shared memory (the tile and the filter).
const CUDA_STATIC_SHARED: usize = 48 * 1024;

/// A `w` x `h` image convolved with an `fs` x `fs` filter.
#[derive(Clone, Copy, Debug)]
pub struct Conv {
    /// Image width.
    pub w: usize,
    /// Image height.
    pub h: usize,
    /// Filter size (odd).
    pub fs: usize,
}

impl Conv {
    fn hfs(&self) -> usize {
        self.fs / 2
    }

    /// Floats per row of the padded input image.
    pub fn pitch(&self, language: Language) -> usize {
        let w = self.w + 2 * self.hfs();
        match language {
            Language::OpenCl => w.next_multiple_of(32),
            Language::Cuda => w,
        }
    }

    /// The local size of an OpenCL configuration (grown by the halo for LOCAL = 2).
    pub fn opencl_local(&self, c: &Config) -> [usize; 2] {
        let g = |s| c.get::<usize>(s);
        let halo = 2 * self.hfs();
        if g(LOCAL) == 2 {
            [
                g(TBX) + halo.div_ceil(g(WPTX)),
                g(TBY) + halo.div_ceil(g(WPTY)),
            ]
        } else {
            [g(TBX), g(TBY)]
        }
    }

    /// The configuration with `values` (tuned for another filter size) in `space` (this
    /// filter size's, on `language`): a full unroll unrolls the new filter. `None` if it
    /// is not valid here.
    pub fn carry(
        &self,
        language: Language,
        space: &Space,
        values: &[(String, Value)],
    ) -> Option<Config> {
        let fs = self.fs;
        let mapped = values.iter().map(|(k, v)| {
            let v = match (language, k.as_str(), v) {
                (Language::OpenCl, "UNROLL_FACTOR", Value::Int(u)) if *u > 1 => {
                    Value::Int(fs as i64)
                }
                (Language::OpenCl, "UNROLL_FACTOR", Value::UInt(u)) if *u > 1 => {
                    Value::UInt(fs as u64)
                }
                _ => v.clone(),
            };
            (k.as_str(), v)
        });
        space.config_from_values(mapped).ok()
    }
}

/// The convolution on the host, accumulated in f64, rows in parallel; `src` has rows of
/// `pitch` floats.
pub fn host(src: &[f32], pitch: usize, filt: &[f32], w: usize, h: usize, fs: usize) -> Vec<f32> {
    use rayon::prelude::*;
    let mut out = vec![0.0f32; w * h];
    out.par_chunks_mut(w.max(1))
        .enumerate()
        .for_each(|(y, row)| {
            for (x, o) in row.iter_mut().enumerate() {
                let mut acc = 0.0f64;
                for fy in 0..fs {
                    for fx in 0..fs {
                        acc += f64::from(filt[fy * fs + fx])
                            * f64::from(src[(y + fy) * pitch + x + fx]);
                    }
                }
                *o = acc as f32;
            }
        });
    out
}

impl Study for Conv {
    fn name(&self) -> &'static str {
        "conv"
    }

    fn input(&self) -> String {
        format!("{}x{},fs={}", self.w, self.h, self.fs)
    }

    fn work(&self) -> Work {
        let (w, h, fs, hfs) = (self.w, self.h, self.fs, self.hfs());
        Work {
            flops: 2.0 * (w * h * fs * fs) as f64,
            bytes: 4.0 * ((w + 2 * hfs) * (h + 2 * hfs) + w * h) as f64,
        }
    }

    fn sources(&self) -> Sources {
        Sources {
            opencl: Some(include_str!("../../../kernels/conv.cl")),
            cuda: Some(include_str!("../../../kernels/conv.cu")),
        }
    }

    fn space(&self, target: &Target) -> Result<Space> {
        let (w, h, fs) = (self.w, self.h, self.fs);
        let lang = target.language;
        let g = |b: &Bound, s| b.get::<usize>(s);
        let tby = match lang {
            Language::OpenCl => Param::<usize>::values("TBY", [8, 16, 32, 64]),
            // CUDA blocks hold at most 1024 threads on every device.
            Language::Cuda => Param::<usize>::values("TBY", [8, 16, 32])
                .constraint(&[TBX], move |b: &Bound| g(b, TBX) * g(b, TBY) <= 1024),
        };
        let local = Param::<usize>::values("LOCAL", [0, 1, 2]);
        let local = match lang {
            // The evaluator checks OpenCL's local memory against the device.
            Language::OpenCl => local,
            Language::Cuda => local.constraint(&[TBX, TBY, WPTX, WPTY], move |b: &Bound| {
                let sx = g(b, TBX) * g(b, WPTX) + fs;
                let sy = g(b, TBY) * g(b, WPTY) + fs - 1;
                g(b, LOCAL) == 0 || 4 * (sx * sy + fs * fs) <= CUDA_STATIC_SHARED
            }),
        };
        let vector = Param::<usize>::values("VECTOR", [1, 2, 4]);
        let vector = match lang {
            Language::OpenCl => vector.divides(&[WPTX], move |b: &Bound| g(b, WPTX)),
            Language::Cuda => vector.constraint(&[LOCAL], move |b: &Bound| {
                g(b, LOCAL) == 2 || g(b, VECTOR) == 1
            }),
        };
        let unroll = match lang {
            Language::OpenCl => Param::<usize>::values("UNROLL_FACTOR", [1, fs])
                .constraint(&[LOCAL], move |b: &Bound| {
                    g(b, LOCAL) > 0 || g(b, UNROLL) == fs
                }),
            Language::Cuda => Param::<usize>::values("UNROLL", [1, 0]),
        };
        SpaceBuilder::new()
            .param(Param::<usize>::values("TBX", [8, 16, 32, 64]))
            .param(tby)
            .param(
                Param::<usize>::values("WPTX", [1, 2, 4, 8])
                    .constraint(&[TBX], move |b: &Bound| w % (g(b, TBX) * g(b, WPTX)) == 0),
            )
            .param(
                Param::<usize>::values("WPTY", [1, 2, 4, 8])
                    .constraint(&[TBY], move |b: &Bound| h % (g(b, TBY) * g(b, WPTY)) == 0),
            )
            .param(local)
            .param(vector)
            .param(unroll)
            .param(
                Param::<usize>::values("PADDING", [0, 1]).constraint(&[LOCAL], move |b: &Bound| {
                    g(b, LOCAL) > 0 || g(b, PADDING) == 0
                }),
            )
            .build()
    }

    fn spec(&self, target: &Target, source: &str) -> Result<KernelSpec> {
        let (w, h, fs, hfs) = (self.w, self.h, self.fs, self.hfs());
        let lang = target.language;
        let pitch = self.pitch(lang);
        let spec = KernelSpec::new(source, "conv");
        let spec = match lang {
            Language::OpenCl => {
                let this = *self;
                spec.define("IMG_W", w)
                    .define("IMG_H", h)
                    .define("FS", fs)
                    .define("SRC_W", pitch)
                    .global(move |c| {
                        let l = this.opencl_local(c);
                        let groups = [
                            w / (c.get::<usize>(TBX) * c.get::<usize>(WPTX)),
                            h / (c.get::<usize>(TBY) * c.get::<usize>(WPTY)),
                        ];
                        [groups[0] * l[0], groups[1] * l[1]]
                    })
                    .local(move |c| this.opencl_local(c))
                    .static_local_memory(move |c| {
                        if c.get::<usize>(LOCAL) == 0 {
                            0
                        } else {
                            let tw = c.get::<usize>(TBX) * c.get::<usize>(WPTX) + 2 * hfs;
                            let th = c.get::<usize>(TBY) * c.get::<usize>(WPTY) + 2 * hfs;
                            4 * th * (tw + c.get::<usize>(PADDING))
                        }
                    })
            }
            // Back to back (replayed from a graph), as an application calls it: a single
            // launch of a ~100 us kernel carries 3-5 us of event and launch latency.
            Language::Cuda => spec
                .define("FS", fs)
                .define("W", w)
                .define("H", h)
                .global(move |c| [w / c.get::<usize>(WPTX), h / c.get::<usize>(WPTY)])
                .local(|c| [c.get::<usize>(TBX), c.get::<usize>(TBY)])
                .launches_per_sample(16),
        };
        Ok(spec
            .buffer(BufferArg::random::<f32>(pitch * (h + 2 * hfs), 1))
            .buffer(BufferArg::random::<f32>(fs * fs, 2))
            .buffer(BufferArg::zeros::<f32>(w * h).output())
            .warmups(2)
            .repetitions(10)
            .tolerance(Tolerance::PerElement {
                abs: 1e-4,
                rel: 1e-4,
            })
            .reference(move |a| {
                let src = a.buffer::<f32>(0)?;
                let filt = a.buffer::<f32>(1)?;
                Ok(vec![host(src, pitch, filt, w, h, fs).into()])
            }))
    }
}
