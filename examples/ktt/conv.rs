//! A 2D filter of frames (kernels/frame_filter.cl, kernels/frame_filter.cu) as a one-kernel
//! composition whose input the application writes: a stream of frames, for online tuning.
//!
//! Parameters: work-group `TBX x TBY`, outputs per work-item `WPTX x WPTY`, and `LOCAL`
//! (stage the tile in local memory); the tile divides the frame and, staged, fits the
//! device's local memory.

use tune::backend::composition::{BufferId, Composition, KernelSource};
use tune::backend::{Backend, BufferArg, DeviceInfo, HostData, Tolerance};
use tune::{Bound, Config, Param, Space, SpaceBuilder};

use super::{is_cuda, mix};

/// The OpenCL kernel.
pub const CL: &str = include_str!("../../kernels/frame_filter.cl");
/// The CUDA kernel.
pub const CU: &str = include_str!("../../kernels/frame_filter.cu");

/// Parameter slots.
pub mod slots {
    /// Work-group size in x.
    pub const TBX: usize = 0;
    /// Work-group size in y.
    pub const TBY: usize = 1;
    /// Outputs per work-item in x.
    pub const WPTX: usize = 2;
    /// Outputs per work-item in y.
    pub const WPTY: usize = 3;
    /// Stage the tile in local memory.
    pub const LOCAL: usize = 4;
}

/// The filter of `w x h` frames with an `fs x fs` filter.
pub struct Conv<B: Backend> {
    /// The space.
    pub space: Space,
    /// The kernel and buffers; the application writes `src` and reads `dst`.
    pub composition: Composition<B>,
    /// The padded input frame: `src_h` rows of `src_w` floats.
    pub src: BufferId,
    /// The output: `h` rows of `w` floats.
    pub dst: BufferId,
    /// Floats per input row.
    pub src_w: usize,
    /// Input rows.
    pub src_h: usize,
    /// Output width.
    pub w: usize,
    /// Output height.
    pub h: usize,
    /// Filter size.
    pub fs: usize,
    /// The filter.
    pub filter: Vec<f32>,
    /// A plain configuration (16 x 8 work-items, one output each, no local memory): what an
    /// untuned program might run.
    pub default: Config,
}

/// Frame `k` of a stream of `src_w x src_h` frames.
pub fn frame(src_w: usize, src_h: usize, k: u64) -> Vec<f32> {
    (0..(src_w * src_h) as u64)
        .map(|i| ((mix(i, k) % 1024) as f32) / 1024.0 - 0.5)
        .collect()
}

/// The host's filter of a padded frame (in f64, rows in parallel).
pub fn host(src: &[f32], src_w: usize, filt: &[f32], w: usize, h: usize, fs: usize) -> Vec<f32> {
    use rayon::prelude::*;
    let mut out = vec![0f32; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, row)| {
        for (x, o) in row.iter_mut().enumerate() {
            let mut acc = 0f64;
            for fy in 0..fs {
                for fx in 0..fs {
                    acc +=
                        f64::from(filt[fy * fs + fx]) * f64::from(src[(y + fy) * src_w + x + fx]);
                }
            }
            *o = acc as f32;
        }
    });
    out
}

impl<B: Backend> Conv<B> {
    /// Frame `k` of the stream, padded (frame 0 is the input the composition declares and
    /// tuning validates with).
    pub fn frame(&self, k: u64) -> Vec<f32> {
        frame(self.src_w, self.src_h, k)
    }

    /// The host's filter of a frame (the reference).
    pub fn reference(&self, frame: &[f32]) -> Vec<f32> {
        host(frame, self.src_w, &self.filter, self.w, self.h, self.fs)
    }

    /// Floats read and written by one run at least.
    pub fn bytes(&self) -> f64 {
        4.0 * (self.src_w * self.src_h + self.w * self.h) as f64
    }
}

/// The tolerance of a filtered frame against the host's.
pub const TOLERANCE: Tolerance = Tolerance::PerElement {
    abs: 1e-3,
    rel: 1e-3,
};

/// The filter of `w x h` frames with an `fs x fs` filter on `device` (OpenCL or CUDA kernel
/// by the device's backend).
///
/// # Errors
/// An empty space: `w` must be a multiple of 8, `h` of 1.
pub fn case<B: Backend>(
    device: &DeviceInfo,
    w: usize,
    h: usize,
    fs: usize,
) -> tune::Result<Conv<B>> {
    let hfs = fs / 2;
    let max_wg = device.max_work_group_size.max(64);
    let local = match device.local_mem_bytes {
        0 => 48 * 1024,
        // Static shared memory is limited to 48 KiB per CUDA block.
        n if is_cuda(device) => n.min(48 * 1024),
        n => n,
    };
    use slots::*;
    let space = SpaceBuilder::new()
        .param(Param::<usize>::values("TBX", [8, 16, 32, 64]))
        .param(
            Param::<usize>::values("TBY", [1, 2, 4, 8, 16]).constraint(&[TBX], move |b: &Bound| {
                b.get::<usize>(TBX) * b.get::<usize>(TBY) <= max_wg
            }),
        )
        .param(
            Param::<usize>::values("WPTX", [1, 2, 4]).constraint(&[TBX], move |b: &Bound| {
                w % (b.get::<usize>(TBX) * b.get::<usize>(WPTX)) == 0
            }),
        )
        .param(
            Param::<usize>::values("WPTY", [1, 2, 4, 8]).constraint(&[TBY], move |b: &Bound| {
                h % (b.get::<usize>(TBY) * b.get::<usize>(WPTY)) == 0
            }),
        )
        .param(
            Param::bool("LOCAL").constraint(&[TBX, TBY, WPTX, WPTY], move |b: &Bound| {
                let tw = b.get::<usize>(TBX) * b.get::<usize>(WPTX) + 2 * hfs;
                let th = b.get::<usize>(TBY) * b.get::<usize>(WPTY) + 2 * hfs;
                !b.get::<bool>(LOCAL) || 4 * (tw * th + fs * fs) <= local
            }),
        )
        .build()?;
    let filter: Vec<f32> = (0..(fs * fs) as u64)
        .map(|i| ((mix(i, 99) % 256) as f32) / 256.0)
        .collect();
    let (src_w, src_h) = (w + 2 * hfs, h + 2 * hfs);
    let kernel = KernelSource::new(if is_cuda(device) { CU } else { CL }, "filter")
        .define("W", w)
        .define("H", h)
        .define("FS", fs)
        .global(move |c| [w / c.get::<usize>(WPTX), h / c.get::<usize>(WPTY)])
        .local(|c| [c.get::<usize>(TBX), c.get::<usize>(TBY)]);
    let mut c = Composition::<B>::new();
    let k = c.kernel(kernel);
    let first = frame(src_w, src_h, 0);
    let expected = host(&first, src_w, &filter, w, h, fs);
    let src = c.input(BufferArg::from_vec(first));
    let filt = c.input(BufferArg::from_vec(filter.clone()));
    let dst = c.output(BufferArg::zeros::<f32>(w * h));
    c.host(move |run| {
        run.launch(k).arg(src).arg(filt).arg(dst).run()?;
        Ok(())
    });
    c.reference(move |_| Ok(vec![HostData::from(expected.clone())]));
    c.tolerance(TOLERANCE);
    let default = space
        .config_from_values([
            ("TBX", tune::Value::UInt(16)),
            ("TBY", tune::Value::UInt(8)),
            ("WPTX", tune::Value::UInt(1)),
            ("WPTY", tune::Value::UInt(1)),
            ("LOCAL", tune::Value::Bool(false)),
        ])
        .or_else(|_| {
            space
                .get(0)
                .ok_or_else(|| tune::Error::InvalidSpace("the filter's space is empty".into()))
        })?;
    Ok(Conv {
        space,
        composition: c,
        src,
        dst,
        src_w,
        src_h,
        w,
        h,
        fs,
        filter,
        default,
    })
}
