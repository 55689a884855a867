#!/usr/bin/env bash
# Launch timing with the host busy (session 8): do back-to-back launches read slower when the
# thread that enqueues them is descheduled? `timer_check --gaps 20` times saxpy in samples
# of 1 and of 20 launches, with the host idle and with 32 spinning threads, on NVIDIA's
# OpenCL and on CUDA. Three builds of the OpenCL backend: `span` (as it was: from the first
# launch's start to the last one's end), `busy` (the union of the launches' intervals),
# `gate` (as it is: the launches held behind a user event until all are enqueued, then the
# union).
#
# Built here (no Rust toolchain on the GPU machine):
#   cargo build --release --features opencl,cuda --example timer_check
#   cp target/release/examples/timer_check .device-bin/lead8/timer_check_gate
#   and the same build of tune-runtime/src/backend/opencl/ as it was at 488a862
#   (timer_check_span) and without the gate (timer_check_busy); strip them
# On the GPU machine: B=.device-bin/lead8 bash benches/gpu/run_timing.sh
B=${B:-.device-bin/lead8}
R=benches/gpu-logs/cuda/run.sh # puts CUDA 13's libraries on LD_LIBRARY_PATH
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm --format=csv
clinfo 2>/dev/null | grep -iE "platform name|device name|profiling timer resolution" | sort -u
for n in 262144 1048576 4194304; do
  for bin in ${BINS:-timer_check_span timer_check_busy timer_check_gate}; do
    echo "== $bin, NVIDIA OpenCL, saxpy:$n"
    TUNE_OPENCL_DEVICE=NVIDIA timeout 90 bash $R "$B/$bin" --backend opencl "saxpy:$n" --gaps 20
  done
  echo "== ${CUDA_BIN:-timer_check_gate}, CUDA, saxpy:$n"
  timeout 90 bash $R "$B/${CUDA_BIN:-timer_check_gate}" --backend cuda "saxpy:$n" --gaps 20
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv
