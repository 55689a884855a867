//! Every kind of parameter, run-time bounds, defaults and a `#[tunable]` with generics.
#![deny(warnings)]

use tune::prelude::*;

/// An enum parameter.
#[derive(Clone, Copy, Debug, PartialEq, Enum)]
pub enum Kernel {
    Naive,
    Tiled,
}

struct Device {
    max_wg: usize,
}

impl Device {
    fn max_work_group_size(&self) -> usize {
        self.max_wg
    }
}

/// A public tunable function: its generated items are documented.
#[tunable(technique = "random")]
pub fn sum<T: Copy + Into<f64> + Sync>(
    xs: &[T],
    out: &mut f64,
    #[tp(1..=xs.len(), divides(xs.len()), default = 1)] chunk: usize,
    #[tp([1, 2, 4], at_most(chunk as u8))] unroll: u8,
    #[tp] kernel: Kernel,
    #[tp((0..3).map(|i| 0.5 * f64::from(i)))] scale: f64,
) -> f64 {
    let _ = (unroll, kernel);
    *out = xs.chunks(chunk).map(|c| c.iter().map(|&x| x.into()).sum::<f64>()).sum::<f64>() * scale;
    *out
}

/// An `async` tunable function.
#[tunable]
pub async fn fetch(base: u64, #[tp(0..4)] offset: u64) -> u64 {
    base + offset
}

/// An `unsafe` tunable function.
///
/// # Safety
/// `p` points to at least `len` readable bytes.
#[tunable]
pub unsafe fn peek(p: *const u8, len: usize, #[tp(0..len)] at: usize) -> u8 {
    unsafe { *p.add(at) }
}

fn main() -> tune::Result<()> {
    let _future = FetchConfig { offset: 1 }.call(41);
    let bytes = [7u8; 4];
    assert_eq!(unsafe { PeekConfig { at: 3 }.call(bytes.as_ptr(), 4) }, 7);
    assert_eq!(PeekConfig::space(bytes.as_ptr(), 4)?.len(), 4);
    let device = Device { max_wg: 256 };
    let data = vec![1u32; 1 << 12];
    let n = data.len();
    let space = tune::space! {
        WPT: usize in 1..=n, divides(n);
        LS: usize in 1..=n, divides(n / WPT) && at_most(device.max_work_group_size());
        VW: u32 in [1, 2, 4, 8];
        PAD: bool;
        K: Kernel;
        TS: usize in (0..=10).map(|i| 1 << i);
        ST: usize in 0..=64 step 8;
        F: f32 in [0.5, 1.0, 2.0];
        X: usize in 1..=64, WPT * X <= 1024 || PAD;
        Y: i64 in -4..4, unequal(0), default = 1;
    }?;
    assert!(space.len() > 0);
    let mut out = 0.0;
    let s = SumConfig::space(&data, &out)?;
    let cfg = SumConfig::try_from(s.get(0).unwrap_or_else(|| unreachable!()))?;
    let _ = cfg.call(&data, &mut out);
    let _ = format!("{cfg} {cfg:?}");
    Ok(())
}
