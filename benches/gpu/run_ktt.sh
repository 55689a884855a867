#!/bin/bash
# The KTT bench (issue 13) on an NVIDIA GPU, from prebuilt binaries in .device-bin/ktt/.
#
# Build where cargo is (no GPU needed; the commit is compiled in):
#   TUNE_COMMIT=$(git rev-parse --short HEAD) cargo build --release --features cuda,opencl \
#     --example ktt_bench --example ktt_online_conv
#   cargo test --release --features cuda,opencl --test ktt --no-run
#   mkdir -p .device-bin/ktt && cp target/release/examples/ktt_bench \
#     target/release/examples/ktt_online_conv .device-bin/ktt/ && \
#     cp "$(ls -t target/release/deps/ktt-* | grep -v '\.d$' | head -1)" .device-bin/ktt/ktt_test && \
#     git rev-parse --short HEAD > .device-bin/ktt/COMMIT
# Run on the GPU machine, one part per command (each stays under 10 minutes):
#   bash benches/gpu/run_ktt.sh tests   # tests/ktt.rs on NVIDIA's OpenCL and CUDA (required)
#   bash benches/gpu/run_ktt.sh isolated  # the isolated-backend test alone, with the ICD
#                                         # loader's diagnostics
#   bash benches/gpu/run_ktt.sh 1       # reduction vs copy bandwidth and cuBLAS sasum (+ part 3)
#   bash benches/gpu/run_ktt.sh 3       # part 3 alone, with the reduction's best of an earlier
#                                       # part 1 ($KTT_REDUCTION)
#   bash benches/gpu/run_ktt.sh 2       # radix sort, tuned vs default
#   bash benches/gpu/run_ktt.sh 4       # online tuning vs the offline best, 10,000 calls
#   bash benches/gpu/run_ktt.sh torch   # torch.sum and torch.sort, timed the same way
#   bash benches/gpu/run_ktt.sh opencl  # the reduction and online example on NVIDIA's OpenCL
# Each writes its output to benches/gpu/logs/ktt-<part>.txt with the commit and the clocks.
B=${B:-.device-bin/ktt}
LOGS=${LOGS:-benches/gpu/logs}
mkdir -p "$LOGS"

header() {
  echo "# ktt $1, $(date -u +%FT%TZ)"
  echo "commit: $(cat "$B/COMMIT" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.draw,temperature.gpu,compute_mode \
    --format=csv 2>&1
}

part() {
  local p=$1 log=$LOGS/ktt-$1.txt
  {
    header "$p"
    case $p in
      tests)
        TUNE_REQUIRE_CUDA=1 TUNE_OPENCL_DEVICE=nvidia CI=1 timeout 500 "$B/ktt_test" 2>&1 \
          | grep -E "^test |test result|panicked|note:" ;;
      isolated)
        # The composition through the isolated backend alone, while this process holds
        # NVIDIA's OpenCL: the ICD loader's account of the platforms it loads, in both
        # processes (OCL_ICD_DEBUG), and where it looks for them.
        echo "OCL_ICD_VENDORS=${OCL_ICD_VENDORS-unset} OCL_ICD_FILENAMES=${OCL_ICD_FILENAMES-unset}"
        ls /etc/OpenCL/vendors/ 2>&1 | tr '\n' ' '; echo
        TUNE_OPENCL_DEVICE=nvidia CI=1 OCL_ICD_DEBUG=7 timeout 120 "$B/ktt_test" \
          a_composition_through_the_isolated_backend --exact 2>&1 | grep -v "^$" | tail -25
        # PoCL sets HWLOC_PLUGINS_PATH=/dev/null in the process that loads it, and a worker
        # inherits it: does NVIDIA's OpenCL open with it set? (No part runs: the header
        # names the device, or the error says why not.)
        echo "NVIDIA's OpenCL with HWLOC_PLUGINS_PATH=/dev/null:"
        HWLOC_PLUGINS_PATH=/dev/null TUNE_BACKEND=opencl TUNE_OPENCL_DEVICE=nvidia TUNE_BENCH_ONLY=0 \
          timeout 60 "$B/ktt_bench" 2>&1 | head -3 ;;
      1) TUNE_BACKEND=cuda TUNE_BENCH_ONLY=1,3 TUNE_SECONDS=${KTT_SECONDS:-240} timeout 580 "$B/ktt_bench" ;;
      3) TUNE_BACKEND=cuda TUNE_BENCH_ONLY=3 \
           TUNE_KTT_REDUCTION=${KTT_REDUCTION:-WG=1024,VW=4,UNROLL=2,GPC=16,ATOMICS=true} \
           timeout 300 "$B/ktt_bench" ;;
      2) TUNE_BACKEND=cuda TUNE_BENCH_ONLY=2 TUNE_SECONDS=${KTT_SECONDS:-300} timeout 580 "$B/ktt_bench" ;;
      4) TUNE_BACKEND=cuda TUNE_BENCH_ONLY=4 TUNE_SECONDS=${KTT_SECONDS:-240} timeout 580 "$B/ktt_bench" ;;
      torch) timeout 300 python3 benches/gpu/torch_ktt.py ;;
      opencl)
        # Parts 1 and 3 (the reduction, the machinery's overhead) on NVIDIA's OpenCL, then
        # the online example as an application runs it.
        TUNE_BACKEND=opencl TUNE_OPENCL_DEVICE=nvidia TUNE_BENCH_ONLY=1,3 TUNE_SECONDS=${KTT_SECONDS:-150} timeout 300 "$B/ktt_bench"
        # The example's own size: at 4096x4096 its host-side checks (a host convolution
        # per configuration tried) and copies outran 240 s.
        TUNE_BACKEND=opencl TUNE_OPENCL_DEVICE=nvidia TUNE_FRESH=1 timeout 300 "$B/ktt_online_conv" 2048 2048 7 2000 ;;
      online-opencl)
        TUNE_BACKEND=opencl TUNE_OPENCL_DEVICE=nvidia TUNE_FRESH=1 timeout 300 "$B/ktt_online_conv" 2048 2048 7 2000 ;;
      *) echo "unknown part $p: tests isolated 1 2 3 4 torch opencl online-opencl" ;;
    esac
    header "$p (end)"
  } 2>&1 | tee "$log"
}

for p in "${@:-tests 1 2 4 torch opencl}"; do
  for q in $p; do part "$q"; done
done
