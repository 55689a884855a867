//! Launch geometry and the device limits a configuration must respect.

use super::device::CudaProps;
use crate::backend::LaunchDims;
use crate::evaluate::Cause;
use crate::Failure;

/// Grid, block and dynamic shared memory of one CUDA launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// Blocks per grid dimension.
    pub grid: [u32; 3],
    /// Threads per block dimension.
    pub block: [u32; 3],
    /// Dynamic shared memory per block in bytes.
    pub shared_bytes: u32,
}

impl Geometry {
    /// Threads in one block.
    pub fn threads_per_block(&self) -> u64 {
        self.block.iter().map(|&b| u64::from(b)).product()
    }

    /// Converts the evaluator's OpenCL-style sizes (total threads per dimension and threads
    /// per block; a CUDA grid given with `KernelSpec::grid` arrives as `grid * block`) to a
    /// grid, adding `extra_shared` bytes (local-memory arguments) to the dynamic shared memory.
    ///
    /// # Errors
    /// [`Failure::Invalid`] without a block size, for a zero dimension, or a value over 32 bits.
    pub fn from_dims(dims: &LaunchDims, extra_shared: usize) -> Result<Geometry, Failure> {
        let local = dims.local.ok_or_else(|| {
            Failure::Invalid("CUDA needs a block size; call `.local(|c| [..])`".into())
        })?;
        let grid = dims.grid().unwrap_or([1, 1, 1]);
        let to = |v: usize, what: &str| -> Result<u32, Failure> {
            if v == 0 {
                return Err(Failure::Invalid(format!("{what} is zero")));
            }
            u32::try_from(v)
                .map_err(|_| Failure::Invalid(format!("{what} {v} does not fit 32 bits")))
        };
        let shared = dims.dynamic_local_bytes.saturating_add(extra_shared);
        Ok(Geometry {
            grid: [
                to(grid[0], "grid x")?,
                to(grid[1], "grid y")?,
                to(grid[2], "grid z")?,
            ],
            block: [
                to(local[0], "block x")?,
                to(local[1], "block y")?,
                to(local[2], "block z")?,
            ],
            shared_bytes: u32::try_from(shared).map_err(|_| {
                Failure::Invalid(format!(
                    "{shared} bytes of shared memory do not fit 32 bits"
                ))
            })?,
        })
    }
}

/// Checks a launch against the device's limits before compiling: threads per block, block
/// and grid dimensions, shared memory per block (opt-in maximum).
///
/// # Errors
/// [`Failure::Rejected`] with the limit's cause.
pub fn check_device_limits(info: &CudaProps, g: &Geometry) -> Result<(), Failure> {
    let threads = g.threads_per_block();
    if threads > u64::from(info.max_threads_per_block) {
        return Err(Failure::rejected(
            Cause::WorkGroupSize,
            format!(
                "{threads} threads per block exceed the device's {}",
                info.max_threads_per_block
            ),
        ));
    }
    for i in 0..3 {
        if g.block[i] > info.max_block_dim[i] {
            return Err(Failure::rejected(
                Cause::WorkGroupSize,
                format!(
                    "block dimension {i} of {} exceeds the device's {}",
                    g.block[i], info.max_block_dim[i]
                ),
            ));
        }
        if g.grid[i] > info.max_grid_dim[i] {
            return Err(Failure::rejected(
                Cause::Grid,
                format!(
                    "grid dimension {i} of {} exceeds the device's {}",
                    g.grid[i], info.max_grid_dim[i]
                ),
            ));
        }
    }
    let smem_limit = info
        .max_shared_per_block_optin
        .max(info.max_shared_per_block);
    if g.shared_bytes > smem_limit {
        return Err(Failure::rejected(
            Cause::LocalMemory,
            format!(
                "{} bytes of dynamic shared memory exceed the device's {smem_limit} per block",
                g.shared_bytes
            ),
        ));
    }
    Ok(())
}

/// A compiled kernel's own limits, read from its function attributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelAttributes {
    /// `CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`: most threads a block of this kernel may
    /// have (lower than the device's when registers or `__launch_bounds__` limit it).
    pub max_threads_per_block: u32,
    /// `CU_FUNC_ATTRIBUTE_NUM_REGS`: registers per thread.
    pub registers: u32,
    /// Static shared memory per block in bytes.
    pub static_shared_bytes: u32,
    /// Local memory (stack, spills) per thread in bytes.
    pub local_bytes: u32,
}

/// Checks a launch against the compiled kernel's limits: threads per block (function
/// attribute), registers per block, static plus dynamic shared memory.
///
/// # Errors
/// [`Failure::Rejected`] with the limit's cause.
pub fn check_kernel_limits(
    info: &CudaProps,
    attrs: &KernelAttributes,
    g: &Geometry,
) -> Result<(), Failure> {
    let threads = g.threads_per_block();
    if threads > u64::from(attrs.max_threads_per_block) {
        return Err(Failure::rejected(
            Cause::WorkGroupSize,
            format!(
                "{threads} threads per block exceed this kernel's limit of {} ({} registers per thread)",
                attrs.max_threads_per_block, attrs.registers
            ),
        ));
    }
    let regs = threads * u64::from(attrs.registers);
    if regs > u64::from(info.max_registers_per_block) {
        return Err(Failure::rejected(
            Cause::Registers,
            format!(
                "{threads} threads x {} registers exceed the device's {} registers per block",
                attrs.registers, info.max_registers_per_block
            ),
        ));
    }
    let smem = u64::from(attrs.static_shared_bytes) + u64::from(g.shared_bytes);
    let limit = info
        .max_shared_per_block_optin
        .max(info.max_shared_per_block);
    if smem > u64::from(limit) {
        return Err(Failure::rejected(
            Cause::LocalMemory,
            format!(
                "{smem} bytes of shared memory ({} static + {} dynamic) exceed the device's {limit} per block",
                attrs.static_shared_bytes, g.shared_bytes
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn h100() -> CudaProps {
        CudaProps::hypothetical("H100", (9, 0))
    }

    fn dims(global: [usize; 3], local: Option<[usize; 3]>, shared: usize) -> LaunchDims {
        LaunchDims {
            dims: 3,
            global,
            local,
            dynamic_local_bytes: shared,
        }
    }

    fn geo(grid: [u32; 3], block: [u32; 3], shared: u32) -> Geometry {
        Geometry {
            grid,
            block,
            shared_bytes: shared,
        }
    }

    #[test]
    fn global_converts_to_grid() {
        let g = Geometry::from_dims(&dims([4096, 64, 1], Some([128, 8, 1]), 16), 32).unwrap();
        assert_eq!(g.grid, [32, 8, 1]);
        assert_eq!(g.block, [128, 8, 1]);
        assert_eq!(g.shared_bytes, 48);
        assert_eq!(g.threads_per_block(), 1024);
        // A global size the evaluator rounded up still gives whole blocks.
        let r = Geometry::from_dims(&dims([1024, 1, 1], Some([128, 1, 1]), 0), 0).unwrap();
        assert_eq!(r.grid, [8, 1, 1]);
    }

    #[test]
    fn missing_block_or_zero_is_invalid() {
        assert!(matches!(
            Geometry::from_dims(&dims([64, 1, 1], None, 0), 0),
            Err(Failure::Invalid(m)) if m.contains("block size")
        ));
        assert!(matches!(
            Geometry::from_dims(&dims([64, 1, 1], Some([0, 1, 1]), 0), 0),
            Err(Failure::Invalid(_))
        ));
        assert!(matches!(
            Geometry::from_dims(&dims([1 << 40, 1, 1], Some([1, 1, 1]), 0), 0),
            Err(Failure::Invalid(m)) if m.contains("32 bits")
        ));
    }

    #[test]
    fn device_limits() {
        let info = h100();
        assert!(check_device_limits(&info, &geo([10, 1, 1], [1024, 1, 1], 0)).is_ok());
        assert!(matches!(
            check_device_limits(&info, &geo([10, 1, 1], [64, 32, 1], 0)),
            Err(Failure::Rejected { cause: Cause::WorkGroupSize, detail: m }) if m.contains("2048 threads")
        ));
        assert!(check_device_limits(&info, &geo([1, 1, 1], [1, 1, 128], 0)).is_err());
        assert!(check_device_limits(&info, &geo([1, 70000, 1], [32, 1, 1], 0)).is_err());
        assert!(matches!(
            check_device_limits(&info, &geo([1, 1, 1], [32, 1, 1], 227 * 1024 + 1)),
            Err(Failure::Rejected { cause: Cause::LocalMemory, detail: m }) if m.contains("shared memory")
        ));
    }

    #[test]
    fn kernel_limits() {
        let info = h100();
        let attrs = KernelAttributes {
            max_threads_per_block: 256,
            registers: 255,
            static_shared_bytes: 32 * 1024,
            local_bytes: 0,
        };
        assert!(check_kernel_limits(&info, &attrs, &geo([1, 1, 1], [256, 1, 1], 0)).is_ok());
        assert!(matches!(
            check_kernel_limits(&info, &attrs, &geo([1, 1, 1], [512, 1, 1], 0)),
            Err(Failure::Rejected { cause: Cause::WorkGroupSize, detail: m }) if m.contains("this kernel's limit")
        ));
        let regs = KernelAttributes {
            max_threads_per_block: 1024,
            registers: 128,
            ..attrs
        };
        assert!(matches!(
            check_kernel_limits(&info, &regs, &geo([1, 1, 1], [1024, 1, 1], 0)),
            Err(Failure::Rejected { cause: Cause::Registers, detail: m }) if m.contains("registers per block")
        ));
        assert!(
            check_kernel_limits(&info, &attrs, &geo([1, 1, 1], [256, 1, 1], 200 * 1024)).is_err()
        );
    }
}
