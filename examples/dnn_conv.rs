//! BEAST's DNN convolution layers (examples/common/cases/dnn_conv/): tunes the forward
//! pass of every layer of AlexNet or VGG16 (batch 128) and prints, per layer, the time,
//! the throughput and its share of the device's fp32 peak (from its compute units and
//! clock); with `--prune LAYER`, BEAST's pruning table for one layer instead.
//!
//! ```sh
//! cargo run --release --features opencl --example dnn_conv -- --net small        # PoCL
//! cargo run --release --features cuda --example dnn_conv -- --backend cuda --net alexnet
//! cargo run --release --features cuda --example dnn_conv -- --backend cuda --prune L2
//! ```
//!
//! Options: `--net alexnet|vgg16|small` (small: AlexNet's shapes at batch 2 and fewer
//! channels, validated on the host), `--batch N`, `--layers L1,L3`, `--evals N`
//! (`TUNE_EVALS`), `--seconds S` (`TUNE_SECONDS`), `--prune LAYER`, `--measure-rejected N`
//! (with `--prune`: measure N configurations that were rejected after compilation, to
//! show what the rejection saved), `--pass forward|backward-data` (backward-data of the
//! stride-1 layers, as the forward pass over the output gradient with the filters flipped;
//! printed as the network `NET-bwd-data`; `backward-filter`: `NET-bwd-filter`),
//! `--validate every|best`, `--start BM=64,BN=64,...` (repeatable: measured first on every
//! layer whose space has it, e.g. a previous run's winners), `--pin NAME=V,...` (those
//! parameters held at one value: `--pin ALGO=1` searches VGG16 conv1_1's direct path
//! alone). Each layer after the first
//! starts from the best of the layer before it, where that configuration is valid.

// Built without a backend, the example only says so (see `common::cli::main`).
#![cfg_attr(not(any(feature = "opencl", feature = "cuda")), allow(unused))]

mod common;

use std::process::ExitCode;

fn main() -> ExitCode {
    common::cli::main("dnn_conv", |device, args| {
        let options = common::beast::Args::parse(&args)?;
        with_backend!(device, |b| common::beast::run(b, &options))
    })
}
