//! Kernel-property constraints: checks of a configuration right after it compiled, before
//! it runs (BEAST's hardware level, on what the compiler actually produced). Each rejects
//! with its [`Cause`], so that a run's summary counts rejections by cause.
//!
//! ```
//! use tune_runtime::backend::{KernelProps, KernelSpec};
//! let spec = KernelSpec::new("/* .. */", "conv")
//!     .max_registers(128)  // invalid: registers
//!     .max_spill_bytes(0)  // invalid: spills
//!     .min_occupancy(2)    // invalid: occupancy, BEAST's 2 work-groups per compute unit
//!     .kernel_check("vector_loads", |_config, k: &KernelProps<'_>| {
//!         if k.work_group_size % 32 == 0 { Ok(()) } else { Err("not whole warps".into()) }
//!     });
//! # let _ = spec;
//! ```

use std::fmt;
use std::sync::Arc;

use super::device::{DeviceInfo, KernelLimits, Occupancy};
use crate::evaluate::{Cause, Failure};
use crate::space::Config;

/// How the detail of a rejection after compilation starts (rejections by the device's
/// limits before compiling do not), e.g. `after compiling: 168 registers per work-item`.
pub const AFTER_COMPILING: &str = "after compiling: ";

/// What is known of a configuration right after compilation, for kernel checks.
#[derive(Clone, Copy, Debug)]
pub struct KernelProps<'a> {
    /// The device.
    pub device: &'a DeviceInfo,
    /// The compiled kernel's properties (registers, private memory, its limits).
    pub limits: &'a KernelLimits,
    /// Work-items per work-group of the launch.
    pub work_group_size: usize,
    /// Local memory of one work-group: the kernel's static, local-memory arguments and
    /// dynamic shared memory, bytes.
    pub local_mem_bytes: usize,
    /// Work-groups resident per compute unit (the driver's, else estimated), if known.
    pub occupancy: Option<Occupancy>,
}

/// A user's kernel check: `Err(reason)` rejects the configuration.
pub type KernelCheckFn = Arc<dyn Fn(&Config, &KernelProps<'_>) -> Result<(), String> + Send + Sync>;

/// The kernel-property constraints of a [`KernelSpec`](super::KernelSpec).
#[derive(Clone, Default)]
pub(super) struct KernelChecks {
    pub(super) max_registers: Option<usize>,
    pub(super) max_spill_bytes: Option<usize>,
    pub(super) min_occupancy: Option<u32>,
    pub(super) preferred_multiple: bool,
    pub(super) custom: Vec<(String, KernelCheckFn)>,
}

impl fmt::Debug for KernelChecks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelChecks")
            .field("max_registers", &self.max_registers)
            .field("max_spill_bytes", &self.max_spill_bytes)
            .field("min_occupancy", &self.min_occupancy)
            .field("preferred_multiple", &self.preferred_multiple)
            .field(
                "custom",
                &self.custom.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl KernelChecks {
    /// Whether any check needs the occupancy.
    pub(super) fn wants_occupancy(&self) -> bool {
        self.min_occupancy.is_some() || !self.custom.is_empty()
    }

    /// Checks the device's and the kernel's own limits, then the spec's bounds, then the
    /// user's checks; the first that fails rejects, its detail starting with
    /// [`AFTER_COMPILING`].
    pub(super) fn check(&self, config: &Config, k: &KernelProps<'_>) -> Result<(), Failure> {
        self.check_compiled(config, k).map_err(|f| match f {
            Failure::Rejected { cause, detail } => Failure::Rejected {
                cause,
                detail: format!("{AFTER_COMPILING}{detail}"),
            },
            other => other,
        })
    }

    fn check_compiled(&self, config: &Config, k: &KernelProps<'_>) -> Result<(), Failure> {
        let dev = k.device;
        let wg = k.work_group_size;
        if let Some(max) = k.limits.max_work_group_size {
            if wg > max {
                return Err(Failure::rejected(
                    Cause::WorkGroupSize,
                    format!(
                        "work-group of {wg} work-items exceeds this kernel's limit {max} \
                         (registers or local memory){}",
                        regs_note(k.limits)
                    ),
                ));
            }
        }
        if dev.local_mem_bytes > 0 && k.local_mem_bytes > dev.local_mem_bytes {
            return Err(Failure::rejected(
                Cause::LocalMemory,
                format!(
                    "kernel needs {} bytes of local memory; the device has {}",
                    k.local_mem_bytes, dev.local_mem_bytes
                ),
            ));
        }
        if let Some(r) = k.limits.registers {
            if let Some(max) = self.max_registers {
                if r > max {
                    return Err(Failure::rejected(
                        Cause::Registers,
                        format!("{r} registers per work-item; at most {max} allowed"),
                    ));
                }
            }
            let per_group = r.saturating_mul(wg);
            let have = dev.registers_per_work_group as usize;
            if have > 0 && per_group > have {
                return Err(Failure::rejected(
                    Cause::Registers,
                    format!(
                        "{wg} work-items x {r} registers = {per_group}; the device has {have} \
                         per work-group"
                    ),
                ));
            }
        }
        if let (Some(max), Some(p)) = (self.max_spill_bytes, k.limits.private_mem_bytes) {
            if p > max {
                return Err(Failure::rejected(
                    Cause::Spills,
                    format!("{p} bytes of private (spilled) memory per work-item; at most {max} allowed"),
                ));
            }
        }
        if let (true, Some(m)) = (self.preferred_multiple, k.limits.preferred_multiple) {
            if m > 1 && wg % m != 0 {
                return Err(Failure::rejected(
                    Cause::PreferredMultiple,
                    format!("work-group of {wg} work-items is not a multiple of {m}"),
                ));
            }
        }
        if let (Some(min), Some(o)) = (self.min_occupancy, k.occupancy) {
            if o.work_groups < min {
                return Err(Failure::rejected(
                    Cause::Occupancy,
                    format!(
                        "{} work-groups per compute unit (limited by {:?}); at least {min} required",
                        o.work_groups, o.limited_by
                    ),
                ));
            }
        }
        for (name, f) in &self.custom {
            f(config, k).map_err(|why| Failure::rejected(Cause::Custom(name.clone()), why))?;
        }
        Ok(())
    }
}

fn regs_note(l: &KernelLimits) -> String {
    l.registers
        .map(|r| format!(", {r} registers per work-item"))
        .unwrap_or_default()
}
