//! The kernel specs of both passes: sizes, buffers (the filters prepared in the layouts the
//! kernel reads), launch, the checks after compiling, and the reference.

use std::time::Duration;

use tune::backend::{BufferArg, KernelSpec, ReferenceKernel, Tolerance};
use tune::{Config, Result};

use super::direct::direct_derived;
use super::host::{host_conv, host_conv_backward_filter};
use super::slot::*;
use super::space::{config_values, derived, max_split, pixel_tiles, workspace_per_split};
use super::{Check, DnnConv, Language, Layer, Pass, Study, Target};

impl DnnConv {
    /// The forward pass's spec: the output from the input and the filters, prepared in the
    /// four layouts the kernel reads.
    pub(super) fn forward_spec(&self, target: &Target, source: &str) -> Result<KernelSpec> {
        let l = self.layer;
        let (input, filter) = (l.nb * l.c * l.h * l.w, l.ko * l.crs());
        let outputs = l.ko * l.npq();
        let kcrs = BufferArg::random::<f32>(filter, 2);
        // The tuned kernel's four layouts, the reduction padded with zeros to CRSP: made
        // once per layer (on the host here; a copy of the small filter tensor either way).
        let crsp = l.crs_padded();
        let kcrs_p = pad_rows(super::super::floats(&kcrs), l.ko, l.crs(), crsp);
        let crsk = transpose(&kcrs_p, l.ko, crsp);
        let krsc = pad_rows(
            &channels_innermost(&l, super::super::floats(&kcrs)),
            l.ko,
            l.crs(),
            crsp,
        );
        let rsck = transpose(&krsc, l.ko, crsp);
        // The split reduction's partial tiles and per-tile arrival counters.
        let split = max_split(&l, Pass::Forward);
        let workspace = if split > 1 { split * outputs } else { 1 };
        let tiles = l.ko.div_ceil(16) * l.npq().div_ceil(16);
        // The direct path (ALGO 1) has its own work-groups and local memory.
        let direct = move |c: &Config| {
            (c.get::<usize>(ALGO) == 1).then(|| direct_derived(&config_values(c), &l))
        };
        let groups = move |c: &Config| {
            if let Some(d) = direct(c) {
                return d.groups;
            }
            let tiles = pixel_tiles(&l, c.get(BN), c.get(PATCH)) / c.get::<usize>(TILES);
            c.get::<usize>(SPLITK) * (l.ko / c.get::<usize>(BM)) * tiles
        };
        let mut spec = KernelSpec::new(source, "dnn_conv");
        for (name, value) in l.defines() {
            spec = spec.define(name, value);
        }
        if target.language == Language::OpenCl {
            // `__launch_bounds__`'s MINB is CUDA's; the body reads it only there.
            spec = spec.define("MINB", 1);
        }
        let nt = move |c: &Config| match direct(c) {
            Some(d) => d.nt,
            None => c.get::<usize>(MDIM) * c.get::<usize>(NDIM),
        };
        let local_bytes = move |c: &Config| match direct(c) {
            Some(d) => d.local_bytes,
            None => derived(&config_values(c), &l).local_bytes,
        };
        let spec = spec
            .global(move |c| [groups(c) * nt(c)])
            .local(move |c| [nt(c)])
            .buffer(BufferArg::zeros::<f32>(outputs).output())
            .buffer(BufferArg::random::<f32>(input, 1))
            .buffer(kcrs)
            .buffer(BufferArg::from_vec(kcrs_p))
            .buffer(BufferArg::from_vec(crsk))
            .buffer(BufferArg::from_vec(krsc))
            .buffer(BufferArg::from_vec(rsck))
            .buffer(BufferArg::zeros::<f32>(workspace))
            .buffer(BufferArg::zeros::<u32>(tiles))
            .local_buffer::<f32>(move |c| local_bytes(c) / 4)
            .warmups(1)
            .repetitions(5)
            .compile_time_limit(Duration::from_secs(60))
            .tolerance(Tolerance::Norm(1e-5));
        let spec = self.after_compiling(spec, target);
        Ok(match self.check {
            Check::Deferred => spec,
            Check::Host => spec.reference(move |host| {
                let x = host.buffer::<f32>(1)?;
                let f = host.buffer::<f32>(2)?;
                Ok(vec![host_conv(&l, x, f).into()])
            }),
            Check::Kernel => {
                let mut r = ReferenceKernel::new(source, "dnn_conv_reference")
                    .global([outputs.div_ceil(256) * 256])
                    .local([256]);
                for (name, value) in l.defines() {
                    r = r.define(name, value);
                }
                if target.language == Language::OpenCl {
                    r = r.define("MINB", 1);
                }
                let space = self.space(target)?;
                let first = space.get(0).ok_or_else(|| {
                    tune::Error::InvalidSpace("the layer's space is empty".into())
                })?;
                spec.reference_kernel(r.config(first))
            }
        })
    }

    /// BEAST's hardware level once more, on what the compiler produced. Spills are CUDA's
    /// local memory; an OpenCL CPU device reports its whole stack as private memory, so
    /// OpenCL checks only the occupancy.
    fn after_compiling(&self, spec: KernelSpec, target: &Target) -> KernelSpec {
        match (self.post_checks, target.language) {
            (false, _) => spec,
            (true, Language::Cuda) => spec.max_spill_bytes(0).min_occupancy(2),
            (true, Language::OpenCl) => spec.min_occupancy(2),
        }
    }

    /// Backward-filter's spec: dW (output) from the input and the output gradient dY (in
    /// the filters' argument); the four prepared filter layouts are unused (one float each).
    pub(super) fn backward_filter_spec(&self, target: &Target, source: &str) -> Result<KernelSpec> {
        let l = self.layer;
        let pass = Pass::BackwardFilter;
        let input = l.nb * l.c * l.h * l.w;
        let outputs = pass.outputs(&l);
        let split = max_split(&l, pass);
        let per_split = workspace_per_split(&l, pass);
        let tiles = l.ko.div_ceil(16) * pass.columns(&l, 256).div_ceil(16);
        let groups = move |c: &Config| {
            let bn = c.get::<usize>(BN);
            c.get::<usize>(SPLITK) * (l.ko / c.get::<usize>(BM)) * pass.columns(&l, bn) / bn
        };
        let nt = |c: &Config| c.get::<usize>(MDIM) * c.get::<usize>(NDIM);
        let mut spec = KernelSpec::new(source, "dnn_conv").define("BWDF", 1);
        for (name, value) in l.defines() {
            spec = spec.define(name, value);
        }
        if target.language == Language::OpenCl {
            spec = spec.define("MINB", 1);
        }
        let spec = spec
            .global(move |c| [groups(c) * nt(c)])
            .local(move |c| [nt(c)])
            .buffer(BufferArg::zeros::<f32>(outputs).output())
            .buffer(BufferArg::random::<f32>(input, 1))
            .buffer(BufferArg::random::<f32>(l.ko * l.npq(), 2))
            .buffer(BufferArg::zeros::<f32>(1))
            .buffer(BufferArg::zeros::<f32>(1))
            .buffer(BufferArg::zeros::<f32>(1))
            .buffer(BufferArg::zeros::<f32>(1))
            .buffer(BufferArg::zeros::<f32>(split * per_split))
            .buffer(BufferArg::zeros::<u32>(tiles))
            .local_buffer::<f32>(move |c| derived(&config_values(c), &l).local_bytes / 4)
            .warmups(1)
            .repetitions(5)
            .compile_time_limit(Duration::from_secs(60))
            // Each output sums batch x pixels products in f32 (AlexNet L1: 387200); its
            // rounding grows with the square root of that, past the forward pass's 1e-5.
            .tolerance(Tolerance::Norm(1e-4));
        let spec = self.after_compiling(spec, target);
        Ok(match self.check {
            Check::Deferred => spec,
            Check::Host => spec.reference(move |host| {
                let x = host.buffer::<f32>(1)?;
                let dy = host.buffer::<f32>(2)?;
                Ok(vec![host_conv_backward_filter(&l, x, dy).into()])
            }),
            Check::Kernel => {
                let mut r = ReferenceKernel::new(source, "dnn_conv_reference_bwd_filter")
                    .global([outputs.div_ceil(256) * 256])
                    .local([256])
                    .define("BWDF", 1);
                for (name, value) in l.defines() {
                    r = r.define(name, value);
                }
                if target.language == Language::OpenCl {
                    r = r.define("MINB", 1);
                }
                let space = self.space(target)?;
                let first = space.get(0).ok_or_else(|| {
                    tune::Error::InvalidSpace("the layer's space is empty".into())
                })?;
                spec.reference_kernel(r.config(first))
            }
        })
    }
}

/// `m` rows of `n` transposed: the filters from KCRS to CRSK.
fn transpose(a: &[f32], m: usize, n: usize) -> Vec<f32> {
    let mut t = vec![0.0; a.len()];
    for i in 0..m {
        for j in 0..n {
            t[j * m + i] = a[i * n + j];
        }
    }
    t
}

/// `m` rows of `n`, each padded with zeros to `np`.
fn pad_rows(a: &[f32], m: usize, n: usize, np: usize) -> Vec<f32> {
    let mut out = vec![0.0; m * np];
    for (row, src) in out.chunks_mut(np).zip(a.chunks(n)) {
        row[..n].copy_from_slice(src);
    }
    out
}

/// The filters `w[k][c][r][s]` of `l` with the channels innermost: `w[k][r][s][c]`, the
/// order of the reduction when `KORDER` is 1.
fn channels_innermost(l: &Layer, w: &[f32]) -> Vec<f32> {
    let rs = l.r * l.s;
    let mut out = vec![0.0; w.len()];
    for k in 0..l.ko {
        for c in 0..l.c {
            for t in 0..rs {
                out[(k * rs + t) * l.c + c] = w[(k * l.c + c) * rs + t];
            }
        }
    }
    out
}
