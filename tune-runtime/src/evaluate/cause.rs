//! [`Cause`]: why a configuration was rejected before it ran, as BEAST's levels of pruning
//! see it (a device limit before compiling, a property of the compiled kernel after).

use std::fmt;

use serde::{Deserialize, Serialize};

/// The limit or constraint that rejected a configuration
/// ([`Failure::Rejected`](super::Failure::Rejected)). Recorded as the status
/// `invalid: NAME` (e.g. `invalid: registers`), so that summaries count rejections by cause.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Cause {
    /// Work-items per work-group (or per dimension) over the device's or the compiled
    /// kernel's limit.
    WorkGroupSize,
    /// Local (shared) memory over the device's limit per work-group.
    LocalMemory,
    /// Registers: per work-item over a bound, or per work-group over the device's.
    Registers,
    /// Private memory (CUDA local memory: spilled registers and stack) over a bound.
    Spills,
    /// Fewer resident work-groups (or threads) per compute unit than required.
    Occupancy,
    /// A work-group size that is not a multiple of the kernel's preferred multiple (the
    /// warp or wavefront width).
    PreferredMultiple,
    /// Work-groups per dimension over the device's grid limit.
    Grid,
    /// A kernel-property check of the user's, by its name.
    Custom(String),
}

impl Cause {
    /// The name recorded after `invalid: `: `work_group_size`, `local_memory`, `registers`,
    /// `spills`, `occupancy`, `preferred_multiple`, `grid`, or a custom check's name.
    pub fn name(&self) -> &str {
        match self {
            Cause::WorkGroupSize => "work_group_size",
            Cause::LocalMemory => "local_memory",
            Cause::Registers => "registers",
            Cause::Spills => "spills",
            Cause::Occupancy => "occupancy",
            Cause::PreferredMultiple => "preferred_multiple",
            Cause::Grid => "grid",
            Cause::Custom(name) => name,
        }
    }

    /// The cause a recorded name stands for (any other name is a [`Cause::Custom`]).
    pub fn from_name(name: &str) -> Cause {
        match name {
            "work_group_size" => Cause::WorkGroupSize,
            "local_memory" => Cause::LocalMemory,
            "registers" => Cause::Registers,
            "spills" => Cause::Spills,
            "occupancy" => Cause::Occupancy,
            "preferred_multiple" => Cause::PreferredMultiple,
            "grid" => Cause::Grid,
            other => Cause::Custom(other.to_string()),
        }
    }

    /// The status recorded for a rejection of this cause: `invalid: NAME`.
    pub fn status(&self) -> String {
        format!("invalid: {}", self.name())
    }

    /// The cause of a recorded status `invalid: NAME`, if it is one.
    pub fn of_status(status: &str) -> Option<Cause> {
        status
            .strip_prefix("invalid: ")
            .map(|n| Cause::from_name(n.trim()))
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_the_status() {
        let all = [
            Cause::WorkGroupSize,
            Cause::LocalMemory,
            Cause::Registers,
            Cause::Spills,
            Cause::Occupancy,
            Cause::PreferredMultiple,
            Cause::Grid,
            Cause::Custom("bank_conflicts".into()),
        ];
        for c in all {
            assert_eq!(Cause::of_status(&c.status()), Some(c.clone()), "{c}");
        }
        assert_eq!(Cause::Registers.status(), "invalid: registers");
        assert_eq!(Cause::of_status("invalid"), None);
        assert_eq!(Cause::of_status("compile"), None);
    }
}
