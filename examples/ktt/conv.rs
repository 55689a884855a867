//! The 2D convolution of CLTune's case study (kernels/conv.cl, kernels/conv.cu, their spaces
//! from `examples/common`) as a one-kernel composition whose input the application writes:
//! a stream of frames, for online tuning.

use tune::backend::composition::{BufferId, Composition, KernelSource};
use tune::backend::{Backend, BufferArg, DeviceInfo, Tolerance};
use tune::{Config, Space};

use super::{is_cuda, mix};

/// The convolution of `w x h` frames with an `fs x fs` filter.
pub struct Conv<B: Backend> {
    /// The space (CLTune's, as the case studies declare it per dialect).
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
    /// The first valid configuration: what an untuned program might run.
    pub default: Config,
}

/// Frame `k` of a stream of `src_w x src_h` frames.
pub fn frame(src_w: usize, src_h: usize, k: u64) -> Vec<f32> {
    (0..(src_w * src_h) as u64)
        .map(|i| ((mix(i, k) % 1024) as f32) / 1024.0 - 0.5)
        .collect()
}

impl<B: Backend> Conv<B> {
    /// Frame `k` of the stream, in the padded layout (frame 0 is the input the composition
    /// declares and tuning validates with).
    pub fn frame(&self, k: u64) -> Vec<f32> {
        frame(self.src_w, self.src_h, k)
    }

    /// The host's convolution of a frame (the reference).
    pub fn reference(&self, frame: &[f32]) -> Vec<f32> {
        crate::common::cases::conv_host(frame, self.src_w, &self.filter, self.w, self.h, self.fs)
    }

    /// Floats read and written by one run at least.
    pub fn bytes(&self) -> f64 {
        4.0 * (self.src_w * self.src_h + self.w * self.h) as f64
    }
}

/// The tolerance of a convolution's output against the host's.
pub const TOLERANCE: Tolerance = Tolerance::PerElement {
    abs: 1e-3,
    rel: 1e-3,
};

/// The convolution on `device` (OpenCL or CUDA kernel, by the device's backend).
///
/// # Errors
/// An invalid space for these sizes (`w` and `h` must be multiples of 64).
pub fn case<B: Backend>(
    device: &DeviceInfo,
    w: usize,
    h: usize,
    fs: usize,
) -> tune::Result<Conv<B>> {
    let hfs = fs / 2;
    let filter: Vec<f32> = (0..(fs * fs) as u64)
        .map(|i| ((mix(i, 99) % 256) as f32) / 256.0)
        .collect();
    let mut c = Composition::<B>::new();
    let (space, src_w, src_h, kernel) = if is_cuda(device) {
        cuda_kernel(w, h, fs)?
    } else {
        use crate::common::cases::{conv_local, conv_slots as s};
        let space = crate::common::cases::conv(w, h, fs)?.space;
        let src_w = (w + 2 * hfs).next_multiple_of(32);
        let kernel = KernelSource::new(include_str!("../../kernels/conv.cl"), "conv")
            .define("IMG_W", w)
            .define("IMG_H", h)
            .define("FS", fs)
            .define("SRC_W", src_w)
            .global(move |c| {
                let l = conv_local(c, fs);
                [
                    w / (c.get::<usize>(s::TBX) * c.get::<usize>(s::WPTX)) * l[0],
                    h / (c.get::<usize>(s::TBY) * c.get::<usize>(s::WPTY)) * l[1],
                ]
            })
            .local(move |c| conv_local(c, fs));
        (space, src_w, h + 2 * hfs, kernel)
    };
    let conv = c.kernel(kernel);
    let first = frame(src_w, src_h, 0);
    let expected = crate::common::cases::conv_host(&first, src_w, &filter, w, h, fs);
    let src = c.input(BufferArg::from_vec(first));
    let filt = c.input(BufferArg::from_vec(filter.clone()));
    let dst = c.output(BufferArg::zeros::<f32>(w * h));
    c.host(move |run| {
        run.launch(conv).arg(src).arg(filt).arg(dst).run()?;
        Ok(())
    });
    c.reference(move |_| Ok(vec![tune::backend::HostData::from(expected.clone())]));
    c.tolerance(TOLERANCE);
    let default = space
        .get(0)
        .ok_or_else(|| tune::Error::InvalidSpace("the convolution's space is empty".into()))?;
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

#[cfg(feature = "cuda")]
fn cuda_kernel(w: usize, h: usize, fs: usize) -> tune::Result<(Space, usize, usize, KernelSource)> {
    let space = crate::common::cuda::conv_space(w as u32, h as u32, fs as u32)?;
    let kernel = KernelSource::new(crate::common::cuda::CONV_SRC, "conv")
        .define("FS", fs)
        .define("W", w)
        .define("H", h)
        .global(move |c| [w / c.get::<u32>(2) as usize, h / c.get::<u32>(3) as usize])
        .local(|c| [c.get::<u32>(0) as usize, c.get::<u32>(1) as usize]);
    Ok((space, w + fs / 2 * 2, h + fs / 2 * 2, kernel))
}

#[cfg(not(feature = "cuda"))]
fn cuda_kernel(_: usize, _: usize, _: usize) -> tune::Result<(Space, usize, usize, KernelSource)> {
    Err(tune::Error::BackendUnavailable {
        backend: "cuda".into(),
        reason: "built without the `cuda` feature".into(),
    })
}
