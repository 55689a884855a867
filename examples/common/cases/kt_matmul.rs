//! Kernel Tuner's throughput case (kernels/kt_matmul.cu, the benchmark kernel of the
//! project's Kernel Tuner comparison, unchanged): a register-tiled n x n SGEMM tuned over
//! block and tile sizes and unrolling, 7 timed iterations, no validation (as there).
//! Written in CUDA C only.

use tune::backend::{BufferArg, KernelSpec};
use tune::{Bound, Param, Result, Space, SpaceBuilder};

use super::{Sources, Study, Target, Work};

/// Slot of `block_size_x`.
pub const BLOCK_X: usize = 0;
/// Slot of `block_size_y`.
pub const BLOCK_Y: usize = 1;
/// Slot of `tile_size_x`.
pub const TILE_X: usize = 2;
/// Slot of `tile_size_y`.
pub const TILE_Y: usize = 3;

/// Kernel Tuner's throughput case at `n x n`.
#[derive(Clone, Copy, Debug)]
pub struct KtMatmul {
    /// Matrix size.
    pub n: usize,
}

impl Study for KtMatmul {
    fn name(&self) -> &'static str {
        "kt_matmul"
    }

    fn input(&self) -> String {
        format!("n={}", self.n)
    }

    fn work(&self) -> Work {
        Work {
            flops: 2.0 * (self.n * self.n * self.n) as f64,
            bytes: 0.0,
        }
    }

    fn sources(&self) -> Sources {
        Sources {
            opencl: None,
            cuda: Some(include_str!("../../../kernels/kt_matmul.cu")),
        }
    }

    /// 4 x 5 x 4 x 4 x 4 = 1,280 Cartesian configurations, restricted to
    /// 32 <= block_size_x * block_size_y <= 1024.
    fn space(&self, _: &Target) -> Result<Space> {
        SpaceBuilder::new()
            .param(Param::<usize>::values("block_size_x", [16, 32, 64, 128]))
            .param(
                Param::<usize>::values("block_size_y", [1, 2, 4, 8, 16]).constraint(
                    &[BLOCK_X],
                    |b: &Bound| {
                        (32..=1024).contains(&(b.get::<usize>(BLOCK_X) * b.get::<usize>(BLOCK_Y)))
                    },
                ),
            )
            .param(Param::<usize>::values("tile_size_x", [1, 2, 4, 8]))
            .param(Param::<usize>::values("tile_size_y", [1, 2, 4, 8]))
            .param(Param::<usize>::values("loop_unroll", [1, 2, 4, 8]))
            .build()
    }

    fn spec(&self, _: &Target, source: &str) -> Result<KernelSpec> {
        let n = self.n;
        let g = |c: &tune::Config, s| c.get::<usize>(s);
        Ok(KernelSpec::new(source, "matmul")
            .grid(move |c| {
                [
                    n.div_ceil(g(c, BLOCK_X) * g(c, TILE_X)),
                    n.div_ceil(g(c, BLOCK_Y) * g(c, TILE_Y)),
                ]
            })
            .local(move |c| [g(c, BLOCK_X), g(c, BLOCK_Y)])
            .buffer(BufferArg::zeros::<f32>(n * n))
            .buffer(BufferArg::random::<f32>(n * n, 1))
            .buffer(BufferArg::random::<f32>(n * n, 2))
            .scalar(n as i32)
            .warmups(0)
            .repetitions(7))
    }
}
