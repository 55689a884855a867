//! BEAST's DNN convolution layers (kernels/dnn_conv/: one kernel body for OpenCL C and
//! CUDA C, prefixed by a dialect prelude): the forward pass of a convolutional layer in
//! NCHW as an implicit GEMM through local memory, over BEAST's parameter families, in a
//! space pruned at BEAST's three levels:
//! - algorithm: block sizes are multiples of the thread dimensions, vector groups tile a
//!   work-item's share, the tiles load in whole rounds of the work-group;
//! - software: the tiles divide the layer (out channels, batch x output pixels);
//! - hardware: work-group size, registers (estimated from the tiles) and local memory
//!   within the device's, and at least 2 work-groups resident per compute unit (read from
//!   the device's properties, [`tune::backend::DeviceInfo`]).
//!
//! What the compiler produced is checked again right after compilation (registers,
//! spills, occupancy from the driver), and rejected with its cause before it runs.
//!
//! The kernel is the same on both backends; the CUDA space adds `MINB` (the minimum
//! resident blocks of `__launch_bounds__`), which OpenCL has no way to say.

//!
//! Short reductions (C*R*S at most 64: VGG16 conv1_1) also have a direct, register-blocked
//! kernel (kernels/dnn_conv/direct.c), chosen by the parameter `ALGO`.
//!
//! Files: `layer` (the layers and passes), `space` (the parameters and BEAST's three
//! levels), `direct` (the direct path's parameters and constraints), `spec` (the kernel
//! specs and the filters' layouts), `starts` (the search's starts), `host` (the references
//! on the host).

mod direct;
mod host;
mod layer;
mod space;
mod spec;
mod starts;

// Each example and test uses a part of these.
#[allow(unused_imports)]
pub use direct::{
    direct_config, direct_derived, direct_offered, with_direct_defaults, DirectDerived,
    DIRECT_MAX_CRS, DIRECT_PARAMS,
};
#[allow(unused_imports)]
pub use host::{flip_filters, host_conv, host_conv_backward_data, host_conv_backward_filter};
#[allow(unused_imports)]
pub use layer::{Layer, Pass, ALEXNET, VGG16};
#[allow(unused_imports)]
pub use space::{
    cartesian, derived, fits_i32, fits_packed_offsets, hardware_allows, max_split, patch_bytes,
    pixel_tiles, space, space_for, space_pinned, split_fits, Derived, Levels,
    SPLIT_WORKSPACE_BYTES,
};

use tune::backend::KernelSpec;
use tune::{Config, Result, Space};

use super::{Language, Sources, Study, Target, Work};

/// Slots of the parameters.
pub mod slot {
    #![allow(missing_docs)]
    /// The path (0: the implicit GEMM, 1: the direct path): first, so that the space binds
    /// it before the constraints that read it with each other parameter (direct.rs).
    pub const ALGO: usize = 0;
    pub const BM: usize = 1;
    pub const BN: usize = 2;
    pub const BK: usize = 3;
    pub const MDIM: usize = 4;
    pub const NDIM: usize = 5;
    pub const VS: usize = 6;
    pub const DB: usize = 7;
    pub const PADA: usize = 8;
    pub const PADB: usize = 9;
    pub const UNR: usize = 10;
    pub const FLAYOUT: usize = 11;
    pub const KORDER: usize = 12;
    pub const VA: usize = 13;
    pub const VB: usize = 14;
    pub const I32: usize = 15;
    pub const PRE: usize = 16;
    pub const SPLITK: usize = 17;
    pub const LCOLS: usize = 18;
    pub const PATCH: usize = 19;
    pub const OSTAGE: usize = 20;
    pub const MASK: usize = 21;
    pub const TILES: usize = 22;
    pub const KEXACT: usize = 23;
    pub const STCS: usize = 24;
    /// The direct path's (direct.rs), one value each where it is not offered.
    pub const DPX: usize = 25;
    pub const DQK: usize = 26;
    pub const DWX: usize = 27;
    pub const DWY: usize = 28;
    pub const DWK: usize = 29;
    pub const DWMEM: usize = 30;
    pub const DXMEM: usize = 31;
    pub const DROWS: usize = 32;
    pub const DOST: usize = 33;
    /// CUDA only.
    pub const MINB: usize = 34;
}

/// How the outputs are validated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Check {
    /// A direct convolution on the host (f64 accumulation), for small layers.
    #[default]
    Host,
    /// The reference kernel (one work-item per output, the definition read literally) on
    /// the device, for layers too large for the host.
    Kernel,
    /// No reference while tuning: the caller validates the tuned configuration once with
    /// [`Check::Kernel`] (examples/dnn_conv.rs `--validate best`), where validating every
    /// evaluation would move gigabytes (VGG16's early layers: 1.6 GB of output each).
    Deferred,
}

/// A layer, tuned with BEAST's space.
#[derive(Clone, Debug)]
pub struct DnnConv {
    /// The layer.
    pub layer: Layer,
    /// How its outputs are validated.
    pub check: Check,
    /// Which constraint levels the space applies (all by default).
    pub levels: Levels,
    /// Whether the compiled kernel is checked before it runs (no spills, 2 work-groups per
    /// compute unit); off only to measure what those checks reject.
    pub post_checks: bool,
    /// The pass computed.
    pub pass: Pass,
    /// Parameters held at one value each (the space is the part of the layer's that has
    /// them); empty: the whole space.
    pub pins: Vec<(String, usize)>,
}

impl DnnConv {
    /// `layer`, validated on the host, with every constraint level.
    pub fn new(layer: Layer) -> Self {
        DnnConv {
            layer,
            check: Check::Host,
            levels: Levels::Hardware,
            post_checks: true,
            pass: Pass::Forward,
            pins: Vec::new(),
        }
    }
}

/// The kernel source in `language`: the dialect prelude, the shared body (the implicit GEMM
/// and the references) and the direct path.
pub fn source(language: Language) -> &'static str {
    match language {
        Language::OpenCl => concat!(
            include_str!("../../../../kernels/dnn_conv/prelude.cl"),
            include_str!("../../../../kernels/dnn_conv/body.c"),
            include_str!("../../../../kernels/dnn_conv/direct.c")
        ),
        Language::Cuda => concat!(
            include_str!("../../../../kernels/dnn_conv/prelude.cu"),
            include_str!("../../../../kernels/dnn_conv/body.c"),
            include_str!("../../../../kernels/dnn_conv/direct.c")
        ),
    }
}

impl Study for DnnConv {
    fn name(&self) -> &'static str {
        "dnn_conv"
    }

    fn input(&self) -> String {
        // Backward-filter's records and best apart from the forward pass's of the layer.
        match self.pass {
            Pass::Forward => self.layer.to_string(),
            Pass::BackwardFilter => format!("bwd-filter,{}", self.layer),
        }
    }

    fn work(&self) -> Work {
        Work {
            flops: self.layer.flops(),
            bytes: 0.0,
        }
    }

    fn sources(&self) -> Sources {
        Sources {
            opencl: Some(source(Language::OpenCl)),
            cuda: Some(source(Language::Cuda)),
        }
    }

    fn space(&self, target: &Target) -> Result<Space> {
        space_pinned(&self.layer, target, self.levels, self.pass, &self.pins)
    }

    fn spec(&self, target: &Target, source: &str) -> Result<KernelSpec> {
        match self.pass {
            Pass::Forward => self.forward_spec(target, source),
            Pass::BackwardFilter => self.backward_filter_spec(target, source),
        }
    }

    fn known_good(&self, _target: &Target, space: &Space) -> Vec<Config> {
        match self.pass {
            Pass::Forward => self.forward_starts(space),
            Pass::BackwardFilter => starts::backward_filter_starts(space),
        }
    }
}
