#!/bin/bash
# BEAST on the GPU (issue 15): every AlexNet and VGG16 layer (batch 128, forward) tuned
# with a modest budget on CUDA, each starting from the best of the layer before; cuDNN
# through PyTorch on the same shapes; the pruning table of AlexNet L2 with the time saved
# by rejecting after compilation; the kernel-property tests with the GPU required.
# Device time goal: under 8 minutes for all parts.
#
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features cuda --example dnn_conv
#   cargo test --release --features cuda --no-run --test cuda
#   mkdir -p .device-bin/beast
#   cp target/release/examples/dnn_conv .device-bin/beast/
#   cp "$(ls -t target/release/deps/cuda-* | grep -v '\.d$' | head -1)" .device-bin/beast/cuda_test
#   B=.device-bin/beast bash benches/gpu/run_beast.sh          # all parts, logs in $OUT
#   python3 benches/gpu/beast_table.py $OUT/alexnet.log $OUT/vgg16.log $OUT/cudnn.tsv
B=${B:-.device-bin/beast}
R=benches/gpu-logs/cuda/run.sh # puts CUDA 13's libnvrtc on LD_LIBRARY_PATH, TF32 off
OUT=${OUT:-/tmp/beast-out}
mkdir -p "$OUT"
part=${1:-all}
t0=$(date +%s)
if [ "$part" = all ] || [ "$part" = tests ]; then
  echo "### kernel-property tests on the GPU (TUNE_REQUIRE_CUDA=1)"
  for f in _checked rejected case_dnn_conv every_failure_kind; do
    TUNE_REQUIRE_CUDA=1 timeout 60 bash $R "$B/cuda_test" --test-threads=1 $f 2>&1 |
      grep -E "^test |test result|panicked|note:"
  done | tee "$OUT/tests.log"
fi
if [ "$part" = all ] || [ "$part" = cudnn ]; then
  echo "### cuDNN through PyTorch (TF32 off)"
  timeout 120 python3 benches/gpu/cudnn_conv.py alexnet vgg16 | tee "$OUT/cudnn.tsv"
fi
if [ "$part" = all ] || [ "$part" = alexnet ]; then
  echo "### AlexNet, batch 128: 40 evaluations or 22 s per layer"
  timeout 180 bash $R "$B/dnn_conv" --backend cuda --net alexnet --evals 40 --seconds 22 2>&1 |
    tee "$OUT/alexnet.log" | grep -vE '^\s*$'
fi
if [ "$part" = all ] || [ "$part" = vgg16 ]; then
  echo "### VGG16, batch 128: 24 evaluations or 15 s per layer"
  timeout 240 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --evals 24 --seconds 15 2>&1 |
    tee "$OUT/vgg16.log" | grep -vE '^\s*$'
fi
if [ "$part" = all ] || [ "$part" = prune ]; then
  echo "### pruning table, AlexNet L2, and measuring 8 configurations rejected after compiling"
  timeout 120 bash $R "$B/dnn_conv" --backend cuda --net alexnet --prune L2 --evals 60 \
    --seconds 40 --measure-rejected 8 2>&1 | tee "$OUT/prune.log" | grep -vE '^\s*$'
fi
echo "### device-side wall time of this script: $(( $(date +%s) - t0 )) s"
tar czf "$OUT/records-beast.tgz" target/tune tuning 2>/dev/null
