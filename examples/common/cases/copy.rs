//! CLTune's copy (kernels/copy.cl): WPT elements per work-item, global size n / WPT, local
//! size LS; the whole space is 15 configurations. Written in OpenCL C only.

use tune::backend::{BufferArg, KernelSpec, Tolerance};
use tune::{Param, Result, Space, SpaceBuilder};

use super::{Sources, Study, Target, Work};

/// Slot of WPT, elements per work-item.
pub const WPT: usize = 0;
/// Slot of LS, the local size.
pub const LS: usize = 1;

/// A copy of `n` floats.
#[derive(Clone, Copy, Debug)]
pub struct Copy {
    /// Elements copied.
    pub n: usize,
}

impl Study for Copy {
    fn name(&self) -> &'static str {
        "copy"
    }

    fn input(&self) -> String {
        format!("n={}", self.n)
    }

    fn work(&self) -> Work {
        Work {
            flops: 0.0,
            bytes: 8.0 * self.n as f64,
        }
    }

    fn sources(&self) -> Sources {
        Sources {
            opencl: Some(include_str!("../../../kernels/copy.cl")),
            cuda: None,
        }
    }

    fn space(&self, _: &Target) -> Result<Space> {
        SpaceBuilder::new()
            .param(Param::<usize>::values("WPT", [1, 2, 4]))
            .param(Param::<usize>::values("LS", [32, 64, 128, 256, 512]))
            .build()
    }

    fn spec(&self, _: &Target, source: &str) -> Result<KernelSpec> {
        let n = self.n;
        Ok(KernelSpec::new(source, "copy")
            .global(move |c| [n / c.get::<usize>(WPT)])
            .local(|c| [c.get::<usize>(LS)])
            .round_up_global(true)
            .scalar(n as i32)
            .buffer(BufferArg::random::<f32>(n, 1))
            .buffer(BufferArg::zeros::<f32>(n).output())
            .tolerance(Tolerance::Exact)
            .reference(|a| Ok(vec![a.buffer::<f32>(1)?.to_vec().into()])))
    }
}
