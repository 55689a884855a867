//! The expansions compile in a crate that shadows the prelude's names and primitive types.
#![allow(dead_code, non_camel_case_types)]
#![deny(warnings)]

struct Option;
struct Some;
struct None;
struct Result;
struct Ok;
struct Err;
struct Vec;
struct Box;
struct String;
struct usize;
struct u64;
struct bool;
struct str;
trait Clone {}
trait Copy {}
trait Default {}
trait Fn {}
trait From {}
trait Into {}
trait Iterator {}
trait IntoIterator {}
mod core {}
mod std {}
mod alloc {}
mod tune_runtime {}

#[derive(::core::clone::Clone, ::core::marker::Copy, Debug, PartialEq, tune::Enum)]
enum Kernel {
    Naive,
    Tiled,
}

#[tune::tunable]
fn scale(
    x: &[f32],
    #[tp(1..=x.len(), divides(x.len()))] wpt: ::core::primitive::usize,
    #[tp] pad: ::core::primitive::bool,
    #[tp] kernel: Kernel,
) -> ::core::primitive::usize {
    let _ = (pad, kernel);
    x.len() / wpt
}

fn main() {
    let n: ::core::primitive::usize = 64;
    let space = tune::space! {
        WPT: u32 in 1..=64, divides(64) && at_most(n as u32);
        LS: u32 in [1, 2, 4], WPT % LS == 0 || !multiple_of(2);
        PAD: ::core::primitive::bool;
        K: Kernel, default = Kernel::Tiled;
        G: i16 in (0..4).map(|i| 1 << i);
    };
    let _ = space;
    let x = [1.0f32; 16];
    let _ = ScaleConfig::space(&x);
    let cfg = ScaleConfig { wpt: 2, pad: true, kernel: Kernel::Naive };
    let _ = cfg.call(&x);
    let _ = entry_points as fn();
}

/// The tuning entry point and dispatch, under the same shadowed names.
#[tune::tunable(
    technique = random,
    abort = evaluations(3) | (duration(1s) & valid_evaluations(2)),
    input(n = x.len()),
    device = "cpu",
    name = "hygiene_sum",
    repetitions = 2
)]
fn sum(x: &[f32], y: &mut [f32], k: ::core::primitive::usize, #[tp([1, 2, 4])] wpt: ::core::primitive::usize) {
    let _ = (x, y, k, wpt);
}

/// A cost returned as a value.
#[tune::tunable]
fn cost(x: &[f32], #[tp([1, 2, 4])] wpt: ::core::primitive::usize) -> ::core::primitive::f64 {
    x.len() as ::core::primitive::f64 / wpt as ::core::primitive::f64
}

#[allow(unused_must_use)]
fn entry_points() {
    let x = [1.0f32; 16];
    let mut y = [0.0f32; 16];
    let _ = SumConfig::tuner(&x, &mut y, 3);
    let _ = SumConfig::best(&x, &y, 3);
    let _ = sum_auto(&x, &mut y, 3);
    let _ = CostConfig::tuner_with(&x, |c, x| {
        let _ = (c, x);
        ::core::result::Result::Ok(())
    });
    let _ = CostConfig::best_in(&tune::results::Database::open("unused"), &x);
}

#[tune::test]
fn tune_sum() {
    let x = [1.0f32; 16];
    let mut y = [0.0f32; 16];
    SumConfig::tuner(&x, &mut y, 3)?
}
