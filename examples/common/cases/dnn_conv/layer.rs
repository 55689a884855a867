//! The layers: their shapes, AlexNet's and VGG16's, and the passes computed on them.

use std::fmt;

use super::space::MAX_BK;

/// One convolutional layer: batch `nb` of `c x h x w` images, `ko` filters of `c x r x s`,
/// stride `su x sv`, zero padding `ph x pw`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layer {
    /// Its name in its network (`L1`, `conv1_2`).
    pub name: &'static str,
    /// Batch size.
    pub nb: usize,
    /// Input channels.
    pub c: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels (filters).
    pub ko: usize,
    /// Filter height.
    pub r: usize,
    /// Filter width.
    pub s: usize,
    /// Vertical stride.
    pub su: usize,
    /// Horizontal stride.
    pub sv: usize,
    /// Vertical zero padding.
    pub ph: usize,
    /// Horizontal zero padding.
    pub pw: usize,
}

impl Layer {
    /// Output height.
    pub fn p(&self) -> usize {
        (self.h + 2 * self.ph - self.r) / self.su + 1
    }
    /// Output width.
    pub fn q(&self) -> usize {
        (self.w + 2 * self.pw - self.s) / self.sv + 1
    }
    /// Batch x output pixels: the GEMM's N.
    pub fn npq(&self) -> usize {
        self.nb * self.p() * self.q()
    }
    /// The reduction: the GEMM's K.
    pub fn crs(&self) -> usize {
        self.c * self.r * self.s
    }
    /// Floating-point operations of the forward pass (a multiply-add counts two).
    pub fn flops(&self) -> f64 {
        2.0 * self.ko as f64 * self.npq() as f64 * self.crs() as f64
    }
    /// The same layer at another batch size.
    pub fn batch(self, nb: usize) -> Layer {
        Layer { nb, ..self }
    }
    /// Backward-data (the gradient of the input) as a forward convolution, where the same
    /// kernel serves it: at stride 1 it is the forward pass over the output gradient (`ko`
    /// channels of `p x q`) with the filters flipped and their channels swapped
    /// ([`flip_filters`]), padded by `r - 1 - ph`. `None` at larger strides (a transposed
    /// convolution, which this kernel does not compute) or padding of a filter's size.
    pub fn backward_data(&self) -> Option<Layer> {
        if self.su != 1 || self.sv != 1 || self.ph >= self.r || self.pw >= self.s {
            return None;
        }
        Some(Layer {
            c: self.ko,
            h: self.p(),
            w: self.q(),
            ko: self.c,
            ph: self.r - 1 - self.ph,
            pw: self.s - 1 - self.pw,
            ..*self
        })
    }
    /// The reduction padded to a multiple of every `BK` (the filters' prepared rows).
    pub fn crs_padded(&self) -> usize {
        self.crs().next_multiple_of(MAX_BK)
    }
    /// The defines of the layer.
    pub(super) fn defines(&self) -> [(&'static str, usize); 14] {
        [
            ("NB", self.nb),
            ("C", self.c),
            ("H", self.h),
            ("W", self.w),
            ("KO", self.ko),
            ("R", self.r),
            ("S", self.s),
            ("SU", self.su),
            ("SV", self.sv),
            ("PH", self.ph),
            ("PW", self.pw),
            ("P", self.p()),
            ("Q", self.q()),
            ("CRSP", self.crs_padded()),
        ]
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "n={},c={},h={},w={},k={},r={},s={},u={},v={},ph={},pw={}",
            self.nb,
            self.c,
            self.h,
            self.w,
            self.ko,
            self.r,
            self.s,
            self.su,
            self.sv,
            self.ph,
            self.pw
        )
    }
}

#[allow(clippy::too_many_arguments)]
const fn layer(
    name: &'static str,
    c: usize,
    hw: usize,
    ko: usize,
    rs: usize,
    stride: usize,
    pad: usize,
) -> Layer {
    Layer {
        name,
        nb: 128,
        c,
        h: hw,
        w: hw,
        ko,
        r: rs,
        s: rs,
        su: stride,
        sv: stride,
        ph: pad,
        pw: pad,
    }
}

/// AlexNet's convolutional layers as BEAST tuned them (convnet-benchmarks' one-tower
/// AlexNet, batch 128): Table 2's times give these sizes' flops.
pub const ALEXNET: [Layer; 5] = [
    layer("L1", 3, 224, 64, 11, 4, 2),
    layer("L2", 64, 27, 192, 5, 1, 2),
    layer("L3", 192, 13, 384, 3, 1, 1),
    layer("L4", 384, 13, 256, 3, 1, 1),
    layer("L5", 256, 13, 256, 3, 1, 1),
];

/// VGG16's distinct convolutional layers (3x3, stride 1, padding 1; batch 128):
/// `conv3_3`, `conv4_3` and `conv5_2`/`conv5_3` repeat shapes listed here once.
pub const VGG16: [Layer; 9] = [
    layer("conv1_1", 3, 224, 64, 3, 1, 1),
    layer("conv1_2", 64, 224, 64, 3, 1, 1),
    layer("conv2_1", 64, 112, 128, 3, 1, 1),
    layer("conv2_2", 128, 112, 128, 3, 1, 1),
    layer("conv3_1", 128, 56, 256, 3, 1, 1),
    layer("conv3_2", 256, 56, 256, 3, 1, 1),
    layer("conv4_1", 256, 28, 512, 3, 1, 1),
    layer("conv4_2", 512, 28, 512, 3, 1, 1),
    layer("conv5_1", 512, 14, 512, 3, 1, 1),
];

/// The pass a [`DnnConv`] computes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pass {
    /// The forward convolution (and backward-data, as the forward pass of
    /// [`Layer::backward_data`]).
    #[default]
    Forward,
    /// Backward-filter: the filters' gradient `dW[KO x C*R*S]` from the input and the
    /// output gradient, a reduction over batch x output pixels (`BWDF` in the kernel).
    BackwardFilter,
}

impl Pass {
    /// The GEMM's reduction length: `C*R*S` forward, batch x output pixels backward.
    pub fn reduction(self, l: &Layer) -> usize {
        match self {
            Pass::Forward => l.crs(),
            Pass::BackwardFilter => l.npq(),
        }
    }
    /// The number of outputs: the output tensor, or the filters' gradient.
    pub fn outputs(self, l: &Layer) -> usize {
        match self {
            Pass::Forward => l.ko * l.npq(),
            Pass::BackwardFilter => l.ko * l.crs(),
        }
    }
    /// The GEMM's columns, rounded up to whole tiles of `bn`: output pixels forward (which
    /// `BN` divides), taps backward (the last tile partly past `C*R*S`).
    pub fn columns(self, l: &Layer, bn: usize) -> usize {
        match self {
            Pass::Forward => l.npq(),
            Pass::BackwardFilter => l.crs().next_multiple_of(bn.max(1)),
        }
    }
}
