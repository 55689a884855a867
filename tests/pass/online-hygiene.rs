//! `#[tunable(online)]`'s expansion compiles in a crate that shadows the prelude's names.
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
struct f64;
trait Clone {}
trait Fn {}
trait FnMut {}
trait FnOnce {}
trait Send {}
trait Sync {}
mod core {}
mod std {}
mod tune_runtime {}

#[tune::tunable(online, technique = random, abort = evaluations(4))]
fn scale(
    x: &[::core::primitive::f32],
    out: &mut ::core::primitive::f64,
    #[tp([1, 2, 4])] wpt: ::core::primitive::usize,
) -> ::core::primitive::f64 {
    *out = x.len() as ::core::primitive::f64;
    wpt as ::core::primitive::f64
}

fn main() {
    let mut online = ScaleConfig::online().prepare(|_| ::core::result::Result::Ok(()));
    let x = [1.0; 8];
    let mut out = 0.0;
    let _ = online.call(&x, &mut out, |_, _, _| ::core::result::Result::Ok(()));
    let _ = online.tuner().stats();
}
