//! ATF's saxpy (kernels/saxpy.cl, kernels/saxpy.cu): `y = a x + y` over n floats; WPT in
//! [1, n] dividing n, LS in [1, n] dividing n / WPT (blocks over the device's limit are
//! rejected before compiling). Both kernels take the same arguments and parameters.

use tune::backend::{BufferArg, KernelSpec, Tolerance};
use tune::{Bound, Param, Result, Space, SpaceBuilder};

use super::{Sources, Study, Target, Work};

/// Slot of WPT, elements per work-item.
pub const WPT: usize = 0;
/// Slot of LS, the local size.
pub const LS: usize = 1;

/// `y = a x + y` over `n` floats.
#[derive(Clone, Copy, Debug)]
pub struct Saxpy {
    /// Elements.
    pub n: usize,
    /// At least this many work-items share the work: WPT is at most `n / min_global` (on a
    /// GPU a configuration with a handful of work-items runs for seconds); 1 is ATF's space.
    pub min_global: usize,
    /// The scalar `a`.
    pub a: f32,
}

impl Saxpy {
    /// ATF's space over `n` floats (`min_global` 1), `a` = 2.5.
    pub fn new(n: usize) -> Self {
        Saxpy {
            n,
            min_global: 1,
            a: 2.5,
        }
    }

    /// The same with at least `min_global` work-items.
    pub fn min_global(self, min_global: usize) -> Self {
        Saxpy { min_global, ..self }
    }
}

impl Study for Saxpy {
    fn name(&self) -> &'static str {
        "saxpy"
    }

    fn input(&self) -> String {
        format!("n={}", self.n)
    }

    fn work(&self) -> Work {
        Work {
            flops: 2.0 * self.n as f64,
            bytes: 12.0 * self.n as f64,
        }
    }

    fn sources(&self) -> Sources {
        Sources {
            opencl: Some(include_str!("../../../kernels/saxpy.cl")),
            cuda: Some(include_str!("../../../kernels/saxpy.cu")),
        }
    }

    fn space(&self, _: &Target) -> Result<Space> {
        let (n, min_global) = (self.n, self.min_global.max(1));
        SpaceBuilder::new()
            .param(
                Param::<usize>::range("WPT", 1..=n)
                    .divides(&[], move |_| n)
                    .at_most(&[], move |_| (n / min_global).max(1)),
            )
            .param(
                Param::<usize>::range("LS", 1..=n)
                    .divides(&[WPT], move |b: &Bound| n / b.get::<usize>(WPT)),
            )
            .build()
    }

    fn spec(&self, _: &Target, source: &str) -> Result<KernelSpec> {
        let (n, a) = (self.n, self.a);
        Ok(KernelSpec::new(source, "saxpy")
            .global(move |c| [n / c.get::<usize>(WPT)])
            .local(|c| [c.get::<usize>(LS)])
            .scalar(n as i32)
            .scalar(a)
            .buffer(BufferArg::random::<f32>(n, 1))
            .buffer(BufferArg::random::<f32>(n, 2).output())
            .repetitions(10)
            // One rounding apart at most: the kernel may fuse `a * x + y`, the host does not.
            .tolerance(Tolerance::PerElement {
                abs: 1e-6,
                rel: 1e-6,
            })
            .reference(move |args| {
                let x = args.buffer::<f32>(2)?;
                let y = args.buffer::<f32>(3)?;
                Ok(vec![x
                    .iter()
                    .zip(y)
                    .map(|(x, y)| a * x + y)
                    .collect::<Vec<f32>>()
                    .into()])
            }))
    }
}
