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
}
