#!/bin/bash
# BEAST on the GPU (issue 15): every AlexNet and VGG16 layer (batch 128, forward) tuned
# with a modest budget on CUDA, each starting from the best of the layer before; cuDNN
# through PyTorch on the same shapes; the pruning table of AlexNet L2 with the time saved
# by rejecting after compilation; the kernel-property tests with the GPU required.
# Two calls, each under the GPU machine's 10 minutes per command: `a` (tests, cuDNN,
# AlexNet, and AlexNet L2 and L3 on NVIDIA's OpenCL; about 6 minutes) and `b` (VGG16,
# pruning table, backward-data of AlexNet L2-L5; about 7 minutes). The tuning itself
# (AlexNet 5 x 25 s, VGG16 9 x 20 s, backward-data 4 x 15 s) stays under 8 minutes.
#
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features cuda,opencl --example dnn_conv
#   cargo test --release --features cuda --no-run --test cuda
#   mkdir -p .device-bin/beast
#   cp target/release/examples/dnn_conv .device-bin/beast/
#   cp "$(ls -t target/release/deps/cuda-* | grep -v '\.d$' | head -1)" .device-bin/beast/cuda_test
#   B=.device-bin/beast bash benches/gpu/run_beast.sh a     # logs in $OUT
#   B=.device-bin/beast bash benches/gpu/run_beast.sh b
#   python3 benches/gpu/beast_table.py $OUT/alexnet.log $OUT/vgg16.log $OUT/alexnet-bwd.log $OUT/cudnn.tsv
# Session 4: `f` (AlexNet with SPLITK and the new tiles, cuDNN forward/backward, pruning;
# about 5 minutes) and `g` (backward-filter and backward-data; about 5 minutes).
# Session 5: `h` (AlexNet L1 forward with the staged patch, backward-filter L1 with larger
# splits; about 5 minutes) and `i` (L1 with the staged runs, h's winners first, every
# AlexNet layer forward with cuDNN, VGG16 conv1_1; about 5 minutes); `j` (L1 with the
# patch staged 8 loads in flight; about 2 minutes).
# Session 6: `k` (AlexNet L1 with the tap masks MASK and the staged output OSTAGE, then
# L2-L5 and cuDNN at the same commit; about 5 minutes), `m` (L1 with the staged output's
# stores from one address per work-item, L2-L5 and cuDNN at that commit, VGG16 conv1_1;
# about 4.5 minutes; it faulted: the staged output's local memory was sized short), `n`
# (call m's AlexNet part with that fixed; about 3 minutes) and `l` (every VGG16 layer with
# cuDNN; about 5 minutes).
# Session 7 (an H200): `o` (VGG16 conv1_1 with TILES, KEXACT and STCS, cuDNN's conv1_1,
# the copy and write bandwidths, the GPU tests through NVRTC and NVIDIA's OpenCL; about 4
# minutes), `p` (every VGG16 layer with cuDNN, conv1_1 from C11, call o's winner; about 4.5
# minutes) and `q` (every AlexNet layer with cuDNN; about 2.5 minutes).
# Session 8 (an H200): `r` (VGG16 conv1_1 with the direct path for short reductions, ALGO 1,
# beside the implicit GEMM: the GPU test of the direct path through NVRTC, cuDNN's conv1_1
# and the bandwidths, the tuning with the direct starts and session 7's winner first, the
# WINS lines of ALGO and the direct parameters, and Nsight Compute on the winner; about
# 5.5 minutes) and `s` (the same after adjusting, plus VGG16 conv1_2 and AlexNet L1 with
# cuDNN, and the profile of conv1_1's winner where time is left; about 6 minutes).
# Session 10 (an H200): benches/gpu/run_beast10.sh (calls w and x).
# Session 3: `d`, every AlexNet and VGG16 layer with cuDNN in one call (about 8 minutes;
# see the part). A part alone: tests, cudnn, alexnet, opencl, vgg16, prune or bwd; `c` (vgg16-late): VGG16's
# layers from conv3_1 on, in a call of their own (in part b, VGG16's 9 layers took more than
# its 6 minutes: the early layers' 1.6 GB outputs are restored, read back and compared per
# evaluation).
B=${B:-.device-bin/beast}
R=benches/gpu-logs/cuda/run.sh # puts CUDA 13's libnvrtc on LD_LIBRARY_PATH, TF32 off
OUT=${OUT:-/tmp/beast-out}
mkdir -p "$OUT"
part=${1:-a}
wants() { [ "$part" = "$1" ] || [ "$part" = "$2" ]; }
t0=$(date +%s)
if wants a tests; then
  echo "### kernel-property tests on the GPU (TUNE_REQUIRE_CUDA=1)"
  for f in _checked rejected case_dnn_conv every_failure_kind; do
    TUNE_REQUIRE_CUDA=1 timeout 40 bash $R "$B/cuda_test" --test-threads=1 $f 2>&1 |
      grep -E "^test |test result|panicked|note:"
  done | tee "$OUT/tests.log"
fi
if wants a cudnn; then
  echo "### cuDNN through PyTorch (TF32 off)"
  NVIDIA_TF32_OVERRIDE=0 timeout 120 python3 benches/gpu/cudnn_conv.py alexnet vgg16 alexnet-bwd-data | tee "$OUT/cudnn.tsv"
fi
if wants a alexnet; then
  echo "### AlexNet, batch 128: 80 evaluations or 25 s per layer"
  timeout 240 bash $R "$B/dnn_conv" --backend cuda --net alexnet --evals 80 --seconds 25 2>&1 |
    tee "$OUT/alexnet.log" | grep -vE '^\s*$'
fi
if wants a opencl; then
  echo "### the same kernel on NVIDIA's OpenCL: AlexNet L2 and L3, 20 s each"
  TUNE_OPENCL_DEVICE=nvidia timeout 75 bash $R "$B/dnn_conv" --backend opencl --net alexnet \
    --layers L2,L3 --evals 40 --seconds 20 2>&1 | tee "$OUT/opencl.log" | grep -vE '^\s*$'
fi
if wants b vgg16; then
  echo "### VGG16, batch 128: 40 evaluations or 20 s per layer"
  timeout 360 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --evals 40 --seconds 20 2>&1 |
    tee "$OUT/vgg16.log" | grep -vE '^\s*$'
fi
if wants c vgg16-late; then
  # VGG16's later layers alone (a call of its own: part b's VGG16 run stopped at conv3_1).
  echo "### VGG16 conv3_1 to conv5_1, batch 128: 40 evaluations or 20 s per layer"
  timeout 540 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --evals 40 --seconds 20 \
    --layers conv3_1,conv3_2,conv4_1,conv4_2,conv5_1 2>&1 | tee "$OUT/vgg16-late.log" |
    grep -vE '^\s*$'
fi
if wants b prune; then
  echo "### pruning table, AlexNet L2, and measuring 8 configurations rejected after compiling"
  timeout 120 bash $R "$B/dnn_conv" --backend cuda --net alexnet --prune L2 --evals 60 \
    --seconds 40 --measure-rejected 8 2>&1 | tee "$OUT/prune.log" | grep -vE '^\s*$'
fi
if wants b bwd; then
  echo "### backward-data of AlexNet's stride-1 layers (L2-L5): 40 evaluations or 15 s per layer"
  timeout 100 bash $R "$B/dnn_conv" --backend cuda --net alexnet --pass backward-data \
    --evals 40 --seconds 15 2>&1 | tee "$OUT/alexnet-bwd.log" | grep -vE '^\s*$'
fi
if wants d; then
  # Session 3 (VA, VB, I32, PRE), one call of about 8 minutes: every AlexNet and VGG16 layer
  # with cuDNN's times taken in the same call. VGG16 is validated once per layer (the tuned
  # configuration against the reference kernel, `--validate best`): validating every
  # evaluation moved gigabytes and left 3-7 evaluations per early layer, and stopped the
  # run before conv3_1.
  echo "### GPU tests of the convolution kernel (TUNE_REQUIRE_CUDA=1)"
  for f in case_dnn_conv dnn_conv_loads_and_offsets_are_right; do
    [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 $f 2>&1 |
      grep -E "^test |test result|panicked|note:"
  done | tee "$OUT/tests.log"
  echo "### cuDNN through PyTorch (TF32 off): AlexNet and VGG16, forward"
  NVIDIA_TF32_OVERRIDE=0 timeout 80 python3 benches/gpu/cudnn_conv.py alexnet vgg16 | tee "$OUT/cudnn.tsv"
  echo "### AlexNet, batch 128: 80 evaluations or 20 s per layer, every evaluation validated"
  timeout 140 bash $R "$B/dnn_conv" --backend cuda --net alexnet --evals 80 --seconds 20 2>&1 |
    tee "$OUT/alexnet.log" | grep -vE '^\s*$'
  echo "### VGG16, batch 128: 80 evaluations or 18 s per layer, the tuned one validated"
  timeout 250 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --evals 80 --seconds 18 \
    --validate best 2>&1 | tee "$OUT/vgg16.log" | grep -vE '^\s*$'
  echo "### instruction mix of the tuned kernels and of the same tiles before VA, VB, I32, PRE"
  timeout 40 bash $R python3 bench/beast/sass_mix.py "$OUT/alexnet.log" "$OUT/vgg16.log" \
    --baseline 2>&1 | tee "$OUT/mix.log" | grep -E "^MIX|^#|rror"
  python3 benches/gpu/beast_table.py "$OUT/alexnet.log" "$OUT/vgg16.log" "$OUT/cudnn.tsv" 2>&1 |
    tee "$OUT/table.md"
fi
if wants e; then
  # Session 3, second call (about 3 minutes): VGG16's layers from conv3_1 on, which part d's
  # VGG16 run did not reach (its time limit: each early layer took about 45 s with its
  # validation), with their instruction mix. cuDNN's times for them come from part d.
  echo "### VGG16 conv3_1 to conv5_1, batch 128: 80 evaluations or 15 s per layer, the tuned one validated"
  timeout 210 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --evals 80 --seconds 15 \
    --validate best --layers conv3_1,conv3_2,conv4_1,conv4_2,conv5_1 2>&1 |
    tee "$OUT/vgg16-late.log" | grep -vE '^\s*$'
  echo "### instruction mix of the tuned kernels and of the same tiles before VA, VB, I32, PRE"
  timeout 30 bash $R python3 bench/beast/sass_mix.py "$OUT/vgg16-late.log" --baseline 2>&1 |
    tee "$OUT/mix-late.log" | grep -E "^MIX|^#|rror"
fi
if wants f; then
  # Session 4, first call (about 5 minutes): the split reduction (SPLITK), the 48/96-channel
  # tiles and the padded filters on AlexNet, with cuDNN's forward, backward-data and
  # backward-filter and the copy bandwidth (VGG16 conv1_1's roofline) in the same call;
  # the pruning table and the time saved by rejecting after compiling.
  echo "### GPU tests of the convolution kernel (TUNE_REQUIRE_CUDA=1)"
  for f in case_dnn_conv dnn_conv_loads_and_offsets_are_right; do
    [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 $f 2>&1 |
      grep -E "^test |test result|panicked|note:|rror"
  done | tee "$OUT/tests.log"
  echo "### cuDNN through PyTorch (TF32 off): AlexNet forward, backward-data, backward-filter; copy bandwidth"
  NVIDIA_TF32_OVERRIDE=0 timeout 70 python3 benches/gpu/cudnn_conv.py alexnet alexnet-bwd-data \
    alexnet-bwd-filter copy | tee "$OUT/cudnn.tsv"
  echo "### AlexNet, batch 128: 100 evaluations or 25 s per layer, every evaluation validated"
  timeout 170 bash $R "$B/dnn_conv" --backend cuda --net alexnet --evals 100 --seconds 25 2>&1 |
    tee "$OUT/alexnet.log" | grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error)"
  echo "### which values of the new parameters won (best time with each value, per layer)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl 2>&1 | tee "$OUT/wins.log" |
    grep -E "SPLITK|BM|LCOLS"
  echo "### pruning table, AlexNet L2, and measuring 6 configurations rejected after compiling"
  timeout 80 bash $R "$B/dnn_conv" --backend cuda --net alexnet --prune L2 --evals 30 \
    --seconds 12 --measure-rejected 6 2>&1 | tee "$OUT/prune.log" | grep -vE '^\s*$' | tail -25
  python3 benches/gpu/beast_table.py "$OUT/alexnet.log" "$OUT/cudnn.tsv" 2>&1 | tee "$OUT/table.md"
fi
if wants g; then
  # Session 4, second call (about 5 minutes): backward-filter of every AlexNet layer (the
  # kernel's BWDF, split over up to 64 work-groups) against cuDNN's, backward-data of the
  # stride-1 layers with the split reduction, and the forward L1, L4, L5 once more.
  echo "### GPU tests: backward-filter and the forward loads (TUNE_REQUIRE_CUDA=1)"
  for f in dnn_conv_backward_filter_is_right dnn_conv_loads_and_offsets_are_right; do
    [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 $f 2>&1 |
      grep -E "^test |test result|panicked|note:|rror"
  done | tee "$OUT/tests-g.log"
  echo "### cuDNN through PyTorch (TF32 off): AlexNet backward-data and backward-filter"
  NVIDIA_TF32_OVERRIDE=0 timeout 50 python3 benches/gpu/cudnn_conv.py alexnet-bwd-data \
    alexnet-bwd-filter | tee "$OUT/cudnn-g.tsv"
  echo "### AlexNet backward-filter, batch 128: 100 evaluations or 22 s per layer, every evaluation validated"
  timeout 150 bash $R "$B/dnn_conv" --backend cuda --net alexnet --pass backward-filter \
    --evals 100 --seconds 22 2>&1 | tee "$OUT/alexnet-bwf.log" |
    grep -E "^(layer|tuned|best|time|LAYER|fp32|Error|error)"
  echo "### AlexNet forward L1, L4, L5 again (L1 with the narrow load rows, LCOLS): 60 evaluations or 15 s per layer"
  timeout 70 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1,L4,L5 \
    --evals 60 --seconds 15 2>&1 | tee "$OUT/alexnet-g.log" |
    grep -E "^(layer|tuned|best|time|LAYER|Error|error)"
  echo "### AlexNet backward-data (stride-1 layers): 60 evaluations or 14 s per layer"
  timeout 80 bash $R "$B/dnn_conv" --backend cuda --net alexnet --pass backward-data \
    --evals 60 --seconds 14 2>&1 | tee "$OUT/alexnet-bwd.log" |
    grep -E "^(layer|tuned|best|time|LAYER|Error|error)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl 2>&1 | tee "$OUT/wins-g.log" | grep -E "SPLITK|LCOLS"
  python3 benches/gpu/beast_table.py "$OUT/alexnet-bwf.log" "$OUT/alexnet-g.log" \
    "$OUT/alexnet-bwd.log" "$OUT/cudnn-g.tsv" 2>&1 | tee "$OUT/table-g.md"
fi
if wants h; then
  # Session 5, first call (about 5 minutes): AlexNet L1 forward with the staged input patch
  # (PATCH: 8 x 8, 16 x 8 and 8 x 16 output tiles among the starts), backward-filter L1 with
  # splits up to 256, cuDNN's forward and backward-filter in the same call, and the GPU tests
  # of the patch, the forward loads and backward-filter through NVRTC.
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu-h.log"
  echo "### GPU tests: the staged patch, the forward loads, backward-filter (TUNE_REQUIRE_CUDA=1)"
  for f in dnn_conv_staged_patch_is_right dnn_conv_loads_and_offsets_are_right \
    dnn_conv_backward_filter_is_right; do
    [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 $f 2>&1 |
      grep -E "^test |test result|panicked|note:|rror"
  done | tee "$OUT/tests-h.log"
  echo "### cuDNN through PyTorch (TF32 off): AlexNet forward and backward-filter"
  NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 benches/gpu/cudnn_conv.py alexnet alexnet-bwd-filter |
    tee "$OUT/cudnn-h.tsv"
  echo "### AlexNet L1 forward, batch 128: 200 evaluations or 75 s, every evaluation validated"
  timeout 120 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 200 \
    --seconds 75 2>&1 | tee "$OUT/alexnet-l1.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error)"
  echo "### AlexNet L1 backward-filter, batch 128: 120 evaluations or 40 s, every evaluation validated"
  timeout 80 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 \
    --pass backward-filter --evals 120 --seconds 40 2>&1 | tee "$OUT/alexnet-l1-bwf.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|Error|error)"
  echo "### which values won (best time with each value, as a multiple of the layer's best)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl 2>&1 | tee "$OUT/wins-h.log" |
    grep -E "PATCH|SPLITK|BN|BM|VB|LCOLS"
  python3 benches/gpu/beast_table.py "$OUT/alexnet-l1.log" "$OUT/alexnet-l1-bwf.log" \
    "$OUT/cudnn-h.tsv" 2>&1 | tee "$OUT/table-h.md"
fi
if wants i; then
  # Session 5, second call (about 5 minutes): AlexNet L1 forward re-tuned with the runs of
  # pixels staged with their input rows (PATCH 1) and the output staged by rows (OSTAGE),
  # call h's winners measured first (L1 forward's best, unstaged, and its best staged
  # one; L1 backward-filter's best); every other AlexNet layer forward re-tuned with the
  # kernel of the same commit and cuDNN timed in the same call (the per-layer table);
  # VGG16 conv1_1 (3 channels: the patch applies), validated once.
  H_FWD=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=2,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=1,I32=1,PRE=1,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MINB=1
  H_PATCH=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=2,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=2,I32=1,PRE=1,SPLITK=1,LCOLS=0,PATCH=16,OSTAGE=0,MINB=2
  H_BWF=BM=32,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=0,KORDER=0,VA=1,VB=4,I32=0,PRE=0,SPLITK=64,LCOLS=16,PATCH=0,OSTAGE=0,MINB=2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu-i.log"
  echo "### GPU test: the staged patch (runs and tiles, OSTAGE) through NVRTC (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_staged_patch_is_right 2>&1 | grep -E "^test |test result|panicked|note:|rror" |
    tee "$OUT/tests-i.log"
  echo "### cuDNN through PyTorch (TF32 off): AlexNet forward and backward-filter"
  NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 benches/gpu/cudnn_conv.py alexnet alexnet-bwd-filter |
    tee "$OUT/cudnn-i.tsv"
  echo "### AlexNet L1 forward, batch 128: 200 evaluations or 50 s, every evaluation validated"
  timeout 90 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 200 \
    --seconds 50 --start "$H_FWD" --start "$H_PATCH" 2>&1 | tee "$OUT/alexnet-i-l1.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error)"
  echo "### AlexNet L2-L5 forward, batch 128: 100 evaluations or 22 s per layer, every evaluation validated"
  timeout 150 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L2,L3,L4,L5 \
    --evals 100 --seconds 22 2>&1 | tee "$OUT/alexnet-i.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|validat|Error|error)"
  echo "### AlexNet L1 backward-filter, batch 128: 40 evaluations or 12 s, every evaluation validated"
  timeout 40 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 \
    --pass backward-filter --evals 40 --seconds 12 --start "$H_BWF" 2>&1 |
    tee "$OUT/alexnet-l1-bwf-i.log" | grep -E "^(layer|tuned|best|time|re-measured|LAYER|Error|error)"
  echo "### last (cut first if the call runs long): cuDNN's VGG16 forward, and VGG16 conv1_1,"
  echo "### batch 128: 40 evaluations or 15 s, the tuned one validated"
  NVIDIA_TF32_OVERRIDE=0 timeout 50 python3 benches/gpu/cudnn_conv.py vgg16 | tee -a "$OUT/cudnn-i.tsv"
  timeout 60 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --evals 40 \
    --seconds 15 --validate best 2>&1 | tee "$OUT/vgg16-i.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|validat|Error|error)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl 2>&1 | tee "$OUT/wins-i.log" |
    grep -E "PATCH|OSTAGE|SPLITK"
  python3 benches/gpu/beast_table.py "$OUT/alexnet-i-l1.log" "$OUT/alexnet-i.log" \
    "$OUT/alexnet-l1-bwf-i.log" "$OUT/vgg16-i.log" "$OUT/cudnn-i.tsv" 2>&1 | tee "$OUT/table-i.md"
fi
if wants j; then
  # Session 5, third call (run by the lead beyond the two planned): AlexNet L1 forward with
  # the patch staged 8 loads in flight per work-item (calls h and i staged one load at a
  # time), call i's winner first; about 2 minutes.
  I_FWD=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=2,DB=1,PADA=0,PADB=4,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=1,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=0,MINB=1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu-j.log"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_staged_patch_is_right 2>&1 | grep -E "^test |test result|panicked|note:|rror" |
    tee "$OUT/tests-j.log"
  NVIDIA_TF32_OVERRIDE=0 timeout 30 python3 benches/gpu/cudnn_conv.py alexnet | tee "$OUT/cudnn-j.tsv"
  timeout 80 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 200 \
    --seconds 45 --start "$I_FWD" 2>&1 | tee "$OUT/alexnet-j-l1.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl 2>&1 | grep -E "PATCH|OSTAGE"
fi
if wants k; then
  # Session 6, first call (about 5 minutes): AlexNet L1 forward with the gather's bounds
  # checked by tap masks (MASK) and the output staged for unstaged tiles (OSTAGE with
  # PATCH 0), session 5's winner measured first; the GPU test of both through NVRTC; then
  # every other AlexNet layer forward with the kernel of the same commit and cuDNN in the
  # same call (the per-layer table); the WINS lines of the new parameters.
  I_FWD=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=2,DB=1,PADA=0,PADB=4,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=1,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=0,MASK=0,MINB=1
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu-k.log"
  echo "### GPU test: the tap masks and the staged output through NVRTC (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 50 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_tap_masks_are_right 2>&1 | grep -E "^test |test result|panicked|note:|rror" |
    tee "$OUT/tests-k.log"
  echo "### cuDNN through PyTorch (TF32 off): AlexNet forward"
  NVIDIA_TF32_OVERRIDE=0 timeout 40 python3 benches/gpu/cudnn_conv.py alexnet | tee "$OUT/cudnn-k.tsv"
  echo "### AlexNet L1 forward, batch 128: 200 evaluations or 60 s, every evaluation validated"
  timeout 95 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 200 \
    --seconds 60 --start "$I_FWD" 2>&1 | tee "$OUT/alexnet-k-l1.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error)"
  echo "### which values won on L1 (best time with each value, as a multiple of the layer's best)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl 2>&1 | tee "$OUT/wins-k.log" |
    grep -E "c=3,.*(MASK|OSTAGE|VS|BK)"
  echo "### AlexNet L2-L5 forward, batch 128: 100 evaluations or 20 s per layer, every evaluation validated"
  timeout 130 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L2,L3,L4,L5 \
    --evals 100 --seconds 20 2>&1 | tee "$OUT/alexnet-k.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|validat|Error|error)"
  python3 benches/gpu/beast_table.py "$OUT/alexnet-k-l1.log" "$OUT/alexnet-k.log" \
    "$OUT/cudnn-k.tsv" 2>&1 | tee "$OUT/table-k.md"
fi
if wants l; then
  # Session 6, second call (about 5 minutes): every VGG16 layer forward at the commit of
  # call k, validated once (the tuned configuration against the reference kernel), with
  # cuDNN in the same call; conv1_1 (3 channels) has the tap masks and the staged output.
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu-l.log"
  NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 benches/gpu/cudnn_conv.py vgg16 | tee "$OUT/cudnn-l.tsv"
  echo "### VGG16, batch 128: 60 evaluations or 14 s per layer, the tuned one validated"
  timeout 270 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --evals 60 --seconds 14 \
    --validate best 2>&1 | tee "$OUT/vgg16-l.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|validat|Error|error)"
  python3 benches/gpu/beast_table.py "$OUT/vgg16-l.log" "$OUT/cudnn-l.tsv" 2>&1 | tee "$OUT/table-l.md"
fi
if wants m; then
  # Session 6, second call (about 4.5 minutes): AlexNet L1 forward with the staged output's
  # stores unrolled from one address per work-item (the epilogue of call k computed each
  # store's address with divisions: about 15 instructions a float), call k's winner
  # first; then L2-L5 and cuDNN at the same commit (the table), and VGG16 conv1_1 (3
  # channels: the masks and the staged output apply) with cuDNN's VGG16.
  K_FWD=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=4,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=2,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=1,MASK=1,MINB=2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu-m.log"
  echo "### GPU tests: the tap masks and the staged output (runs and patch tiles) through NVRTC (TUNE_REQUIRE_CUDA=1)"
  for f in dnn_conv_tap_masks_are_right dnn_conv_staged_patch_is_right; do
    [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 $f 2>&1 |
      grep -E "^test |test result|panicked|note:|rror"
  done | tee "$OUT/tests-m.log"
  echo "### cuDNN through PyTorch (TF32 off): AlexNet forward"
  NVIDIA_TF32_OVERRIDE=0 timeout 40 python3 benches/gpu/cudnn_conv.py alexnet | tee "$OUT/cudnn-m.tsv"
  echo "### AlexNet L1 forward, batch 128: 160 evaluations or 45 s, every evaluation validated"
  timeout 80 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 160 \
    --seconds 45 --start "$K_FWD" 2>&1 | tee "$OUT/alexnet-m-l1.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl 2>&1 | tee "$OUT/wins-m.log" |
    grep -E "c=3,.*(MASK|OSTAGE|VS)"
  echo "### AlexNet L2-L5 forward, batch 128: 80 evaluations or 17 s per layer, every evaluation validated"
  timeout 110 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L2,L3,L4,L5 \
    --evals 80 --seconds 17 2>&1 | tee "$OUT/alexnet-m.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|validat|Error|error)"
  python3 benches/gpu/beast_table.py "$OUT/alexnet-m-l1.log" "$OUT/alexnet-m.log" \
    "$OUT/cudnn-m.tsv" 2>&1 | tee "$OUT/table-m.md"
  echo "### last (cut first if the call runs long): cuDNN's VGG16 forward, VGG16 conv1_1 (40 evaluations or 14 s, the tuned one validated)"
  NVIDIA_TF32_OVERRIDE=0 timeout 50 python3 benches/gpu/cudnn_conv.py vgg16 | tee -a "$OUT/cudnn-m.tsv"
  timeout 50 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --evals 40 \
    --seconds 14 --validate best 2>&1 | tee "$OUT/vgg16-m.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|validat|Error|error)"
fi
if wants n; then
  # Session 6, third call (about 3 minutes): call m again with the staged output's local
  # memory sized right (call m faulted on its first L1 configuration: the launch gave
  # BM x (BN + 1) floats to a tile laid out in rows of BN + 4); AlexNet L1 with call k's
  # winner first, L2-L5 and cuDNN at the same commit (the table).
  K_FWD=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=4,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=2,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=1,MASK=1,MINB=2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu-n.log"
  echo "### GPU test: the tap masks and the staged output through NVRTC (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_tap_masks_are_right 2>&1 | grep -E "^test |test result|panicked|note:|rror" |
    tee "$OUT/tests-n.log"
  echo "### cuDNN through PyTorch (TF32 off): AlexNet forward"
  NVIDIA_TF32_OVERRIDE=0 timeout 40 python3 benches/gpu/cudnn_conv.py alexnet | tee "$OUT/cudnn-n.tsv"
  echo "### AlexNet L1 forward, batch 128: 150 evaluations or 40 s, every evaluation validated"
  timeout 75 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 150 \
    --seconds 40 --start "$K_FWD" 2>&1 | tee "$OUT/alexnet-n-l1.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error|dnn_conv|start)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl > "$OUT/wins-n.log" 2>&1
  grep -E "c=3,.*(MASK|OSTAGE|VS)" "$OUT/wins-n.log"
  echo "### AlexNet L2-L5 forward, batch 128: 60 evaluations or 12 s per layer, every evaluation validated"
  timeout 90 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L2,L3,L4,L5 \
    --evals 60 --seconds 12 2>&1 | tee "$OUT/alexnet-n.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|validat|Error|error|dnn_conv)"
  python3 benches/gpu/beast_table.py "$OUT/alexnet-n-l1.log" "$OUT/alexnet-n.log" \
    "$OUT/cudnn-n.tsv" 2>&1 | tee "$OUT/table-n.md"
fi
if wants o; then
  # Session 7, first call on an H200 (about 4 minutes): VGG16 conv1_1 with several pixel
  # tiles per work-group (TILES), the last k step unpadded (KEXACT) and streaming stores
  # (STCS) measured first, then the search (every parameter, the tap masks included);
  # cuDNN's conv1_1 and the device's copy and write bandwidths in the same call; the GPU
  # tests of the new parameters and of the tap masks through NVRTC and on NVIDIA's OpenCL
  # (last: a failing launch there leaves that process's OpenCL unusable).
  S6=BM=64,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=4,I32=1,PRE=1,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=0,MINB=2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/gpu-o.log"
  echo "### GPU tests: pixel tiles and tap masks through NVRTC (TUNE_REQUIRE_CUDA=1)"
  for f in dnn_conv_pixel_tiles_are_right dnn_conv_tap_masks_are_right; do
    [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 45 bash $R "$B/cuda_test" --test-threads=1 $f 2>&1 |
      grep -E "^test |test result|panicked|note:|rror"
  done | tee "$OUT/tests-o.log"
  echo "### cuDNN through PyTorch (TF32 off): VGG16 conv1_1; copy (read + write) and write bandwidth"
  NVIDIA_TF32_OVERRIDE=0 timeout 40 python3 benches/gpu/cudnn_conv.py vgg16:conv1_1 copy fill |
    tee "$OUT/cudnn-o.tsv"
  echo "### VGG16 conv1_1, batch 128: 400 evaluations or 85 s, the tuned one validated"
  timeout 125 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --evals 400 \
    --seconds 85 --validate best \
    --start "$S6,TILES=8,KEXACT=1,STCS=1,BK=32" \
    --start "$S6,TILES=8,KEXACT=1,STCS=1,BK=32,MASK=1" \
    --start "$S6,TILES=8,KEXACT=1,STCS=1,BK=32,MASK=1,UNR=0" \
    --start "$S6,TILES=8,KEXACT=1,STCS=1" \
    --start "$S6,TILES=16,KEXACT=1,STCS=1,BK=32,MASK=1" \
    --start "$S6,TILES=1,KEXACT=0,STCS=0" 2>&1 | tee "$OUT/vgg16-o.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error|dnn_conv|start)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl > "$OUT/wins-o.log" 2>&1
  grep -E "c=3,h=224.*(TILES|KEXACT|STCS|MASK|BK|VB|VS|BN|BM|DB)\s" "$OUT/wins-o.log"
  python3 benches/gpu/beast_table.py "$OUT/vgg16-o.log" "$OUT/cudnn-o.tsv" 2>&1 | tee "$OUT/table-o.md"
  echo "### GPU tests on NVIDIA's OpenCL: the tap masks (32-bit offsets now) and pixel tiles"
  for f in dnn_conv_tap_masks_are_right dnn_conv_pixel_tiles_are_right; do
    [ -x "$B/opencl_test" ] && TUNE_OPENCL_DEVICE=nvidia CI=1 timeout 45 bash $R "$B/opencl_test" \
      --test-threads=1 $f 2>&1 | grep -E "^test |test result|panicked|note:|rror"
  done | tee "$OUT/tests-o-opencl.log"
fi
if wants p; then
  # Session 7, second call (about 4.5 minutes): every VGG16 layer forward on the H200 at one
  # commit, validated once (the tuned configuration against the reference kernel), cuDNN
  # in the same call; conv1_1 with call o's winner measured first.
  C11=${C11:-BM=64,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=2,I32=1,PRE=1,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=1,TILES=16,KEXACT=1,STCS=0,MINB=2}
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/gpu-p.log"
  echo "### GPU test: pixel tiles through NVRTC, every wrong configuration listed (call o: one)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 40 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_pixel_tiles_are_right 2>&1 | grep -E "^test |test result|wrong|short_|note:|rror" |
    tee "$OUT/tests-p.log"
  NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 benches/gpu/cudnn_conv.py vgg16 copy fill | tee "$OUT/cudnn-p.tsv"
  echo "### VGG16, batch 128: 60 evaluations or 14 s per layer, the tuned one validated"
  timeout 270 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --evals 60 --seconds 14 \
    --validate best --start "$C11" 2>&1 | tee "$OUT/vgg16-p.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error|start)"
  python3 benches/gpu/beast_table.py "$OUT/vgg16-p.log" "$OUT/cudnn-p.tsv" 2>&1 | tee "$OUT/table-p.md"
fi
if wants q; then
  # Session 7, third call (about 4 minutes): every AlexNet layer forward on the H200 at the
  # commit of call p, every evaluation validated, cuDNN in the same call; L1 with session
  # 6's winner measured first (the tap masks now keep 32-bit offsets); then a profile of
  # VGG16 conv1_1's winner.
  N_FWD=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=2,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=1,MASK=1,TILES=1,KEXACT=0,STCS=0,MINB=2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/gpu-q.log"
  NVIDIA_TF32_OVERRIDE=0 timeout 40 python3 benches/gpu/cudnn_conv.py alexnet | tee "$OUT/cudnn-q.tsv"
  echo "### AlexNet L1 forward, batch 128: 150 evaluations or 40 s, every evaluation validated"
  timeout 75 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 150 \
    --seconds 40 --start "$N_FWD" 2>&1 | tee "$OUT/alexnet-q-l1.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error|start)"
  echo "### AlexNet L2-L5 forward, batch 128: 60 evaluations or 12 s per layer, every evaluation validated"
  timeout 90 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L2,L3,L4,L5 \
    --evals 60 --seconds 12 2>&1 | tee "$OUT/alexnet-q.log" |
    grep -E "^(layer|tuned|best|time|re-measured|LAYER|validat|Error|error)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl > "$OUT/wins-q.log" 2>&1
  grep -E "c=3,h=224,w=224,k=64,r=11.*(MASK|OSTAGE|KEXACT|STCS)\s" "$OUT/wins-q.log"
  python3 benches/gpu/beast_table.py "$OUT/alexnet-q-l1.log" "$OUT/alexnet-q.log" \
    "$OUT/cudnn-q.tsv" 2>&1 | tee "$OUT/table-q.md"
  # Last (cut first if the call runs long): Nsight Compute on VGG16 conv1_1's winner of call
  # o (C11), one launch, as the lead's profile of session 6's winner (what is left of the
  # 60%: stall reasons, pipes, SASS counts).
  C11=${C11:-BM=64,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=2,I32=1,PRE=1,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=1,TILES=16,KEXACT=1,STCS=0,MINB=2}
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  echo "### Nsight Compute: VGG16 conv1_1, call o's winner"
  mkdir -p "$OUT/prof"
  timeout 150 bash $R $ncu --kernel-name dnn_conv --launch-count 1 --set full --import-source yes \
    --clock-control none -f -o "$OUT/prof/conv1_1-q" bash -c "cd $PWD && $B/dnn_conv --backend cuda \
    --net vgg16 --layers conv1_1 --evals 1 --seconds 5 --validate best --start $C11" \
    > "$OUT/prof/conv1_1-q-run.log" 2>&1
  tail -3 "$OUT/prof/conv1_1-q-run.log"
  $ncu --import "$OUT/prof/conv1_1-q.ncu-rep" --page details --print-details all > "$OUT/prof/conv1_1-q-details.txt" 2>&1
  $ncu --import "$OUT/prof/conv1_1-q.ncu-rep" --page source --csv --print-source sass > "$OUT/prof/conv1_1-q-sass.csv" 2>&1 || true
  grep -E "Duration|DRAM Throughput|Issue Slots Busy|Registers Per Thread|Achieved Occupancy|Warp Cycles Per Issued|Block Limit Reg|Stall|Selected" \
    "$OUT/prof/conv1_1-q-details.txt" | head -40
  (cd "$OUT" && tar czf profile-q.tgz prof && rm -rf prof)
fi
# Session 8's conv1_1 tuning (direct_conv1_1) and the profiles (profile_winner, profile_config).
source benches/gpu/beast_lib.sh
if wants r; then
  # Session 8, first call (about 5.5 minutes): the direct path on conv1_1.
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/gpu-r.log"
  echo "### GPU test: the direct path through NVRTC (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 50 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_direct_is_right 2>&1 | grep -E "^test |test result|wrong|direct_|panicked|note:|rror" |
    tee "$OUT/tests-r.log"
  echo "### cuDNN through PyTorch (TF32 off): VGG16 conv1_1; copy (read + write) and write bandwidth"
  NVIDIA_TF32_OVERRIDE=0 timeout 40 python3 benches/gpu/cudnn_conv.py vgg16:conv1_1 copy fill |
    tee "$OUT/cudnn-r.tsv"
  direct_conv1_1 r 600 100
  profile_winner r
  nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv | tee -a "$OUT/gpu-r.log"
fi
if wants s; then
  # Session 8, second call (about 6 minutes): conv1_1 again after adjusting, then VGG16
  # conv1_2 and AlexNet L1 with their cuDNN, each with session 7's winner first (the direct
  # path is not offered there: C*R*S 576 and 363; their spaces are session 7's).
  N_FWD=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=4,DB=0,PADA=0,PADB=4,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=1,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=1,MASK=1,TILES=1,KEXACT=1,STCS=0,MINB=2
  C12=BM=64,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=1,VA=4,VB=1,I32=1,PRE=0,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=0,TILES=1,KEXACT=0,STCS=0,MINB=2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/gpu-s.log"
  echo "### GPU test: the direct path through NVRTC (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 50 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_direct_is_right 2>&1 | grep -E "^test |test result|wrong|direct_|panicked|note:|rror" |
    tee "$OUT/tests-s.log"
  NVIDIA_TF32_OVERRIDE=0 timeout 50 python3 benches/gpu/cudnn_conv.py vgg16:conv1_1 vgg16:conv1_2 alexnet:L1 copy fill |
    tee "$OUT/cudnn-s.tsv"
  direct_conv1_1 s 500 100
  echo "### VGG16 conv1_2: 30 evaluations or 12 s, the tuned one validated"
  timeout 70 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_2 --evals 30 \
    --seconds 12 --validate best --start "$C12" 2>&1 | tee "$OUT/vgg16-s-c12.log" |
    grep -E "^(layer|space|tuned|best|time|re-measured|LAYER|validat|Error|error|start)"
  echo "### AlexNet L1: 100 evaluations or 25 s, every evaluation validated"
  timeout 60 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 100 \
    --seconds 25 --start "$N_FWD" 2>&1 | tee "$OUT/alexnet-s-l1.log" |
    grep -E "^(layer|space|tuned|best|time|re-measured|LAYER|validat|Error|error|start)"
  python3 benches/gpu/beast_table.py "$OUT/vgg16-s.log" "$OUT/vgg16-s-c12.log" \
    "$OUT/alexnet-s-l1.log" "$OUT/cudnn-s.tsv" 2>&1 | tee "$OUT/table-s.md"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv | tee -a "$OUT/gpu-s.log"
  # The logs and the tuning's records in one file (the profile's run rewrites the records;
  # at most 8 files come back), then the profile of conv1_1's winner if time is left.
  root=$PWD
  (cd "$OUT" && tar czf logs-s.tgz gpu-s.log tests-s.log cudnn-s.tsv vgg16-s.log wins-s.log \
    table-s.md vgg16-s-c12.log alexnet-s-l1.log -C "$root" target/tune)
  if [ $(( $(date +%s) - t0 )) -lt 240 ]; then profile_winner s; fi
fi
# Session 9 (an H100): `t`, the first call (about 7 minutes): what limits conv1_1. The GPU
# test of the direct path through NVRTC (its row blocks now load the next block's halo tile
# while multiplying), cuDNN's conv1_1 and the copy and write bandwidths, the direct path
# tuned alone (`--pin ALGO=1`, 170 s, its starts first), the implicit GEMM alone with
# session 8's winner C7 first (40 s: C7 re-measured on this GPU), the WINS lines, then
# Nsight Compute on C7 (before the tuning) and on the direct path's winner; the SM clock sampled every second
# throughout (clocks-t.log); last, tiles_diag.py (the KORDER 1 / TILES 2 wrong result).
if wants t; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem --format=csv | tee "$OUT/gpu-t.log"
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv -l 1 > "$OUT/clocks-t.log" 2>&1 &
  smi=$!
  echo "### GPU test: the direct path through NVRTC (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 60 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_direct_is_right 2>&1 | grep -E "^test |test result|wrong|direct_|panicked|note:|rror" |
    tee "$OUT/tests-t.log"
  echo "### cuDNN through PyTorch (TF32 off): VGG16 conv1_1; copy (read + write) and write bandwidth"
  NVIDIA_TF32_OVERRIDE=0 timeout 50 python3 benches/gpu/cudnn_conv.py vgg16:conv1_1 copy fill |
    tee "$OUT/cudnn-t.tsv"
  profile_config gemm "ALGO=0,$C7"
  mkdir -p "$OUT/rec"
  echo "### VGG16 conv1_1, the direct path alone: 1500 evaluations or 170 s, the tuned one validated"
  timeout 240 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --pin ALGO=1 \
    --evals 1500 --seconds 170 --validate best 2>&1 | tee "$OUT/vgg16-t.log" |
    grep -E "^(layer|space|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error|dnn_conv|start)"
  cp target/tune/cuda/dnn_conv-*.jsonl "$OUT/rec/direct-t.jsonl"
  python3 bench/beast/param_wins.py "$OUT/rec/direct-t.jsonl" > "$OUT/wins-t.log" 2>&1
  grep -E "(DPX|DQK|DWX|DWY|DWK|DWMEM|DXMEM|DROWS|UNR|STCS|MINB)\s" "$OUT/wins-t.log"
  echo "### VGG16 conv1_1, the implicit GEMM alone: 120 evaluations or 40 s, session 8's winner first"
  timeout 100 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --pin ALGO=0 \
    --evals 120 --seconds 40 --validate best --start "$C7" 2>&1 | tee "$OUT/vgg16-t-gemm.log" |
    grep -E "^(layer|space|tuned|best|time|re-measured|LAYER|validat|Error|error|start)"
  cp target/tune/cuda/dnn_conv-*.jsonl "$OUT/rec/gemm-t.jsonl"
  python3 benches/gpu/beast_table.py "$OUT/vgg16-t.log" "$OUT/vgg16-t-gemm.log" "$OUT/cudnn-t.tsv" 2>&1 | tee "$OUT/table-t.md"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv | tee -a "$OUT/gpu-t.log"
  best=$(grep -m1 '^best:' "$OUT/vgg16-t.log" | sed 's/^best: *//; s/ /,/g')
  if [ -n "$best" ] && [ $(( $(date +%s) - t0 )) -lt 470 ]; then
    profile_config direct "$best"
  fi
  kill $smi
  echo "### KORDER 1 with TILES 2 through NVRTC, per output tile (benches/gpu/tiles_diag.py)"
  timeout 60 python3 benches/gpu/tiles_diag.py 2>&1 | tee "$OUT/diag-t.log"
  # At most 8 files come back: the logs and records in one, the profiles in another.
  (cd "$OUT" && tar czf logs-t.tgz gpu-t.log clocks-t.log tests-t.log cudnn-t.tsv vgg16-t.log \
    vgg16-t-gemm.log wins-t.log diag-t.log rec && tar czf profile-t.tgz --exclude='*.ncu-rep' prof &&
    rm -rf prof rec clocks-t.log tests-t.log cudnn-t.tsv vgg16-t.log vgg16-t-gemm.log wins-t.log)
fi
# Session 9, second call `u` (about 7 minutes): VGG16 conv1_1 tuned on the direct path
# (call t's best path on the H100; W9, call t's direct winner, first), the implicit GEMM's
# best of call t (G9) re-measured beside it, the direct winner re-measured in 3 more processes of 5
# rounds each (pinned), cuDNN's conv1_1, AlexNet L1 and VGG16 conv1_2 and the bandwidths in
# the same call; session 8's winners of AlexNet L1 and VGG16 conv1_2 re-measured (pinned,
# validated: no kernel change of theirs), Nsight Compute on conv1_1's winner, and
# tiles_diag.py again (call t's ran every variant with the first one's module).
if wants u; then
  # Call t's direct winner on the H100 (678.9 us), in the space of this commit.
  W9=${W9:-ALGO=1,BM=16,BN=16,BK=4,MDIM=2,NDIM=2,VS=1,DB=0,PADA=0,PADB=0,UNR=1,FLAYOUT=0,KORDER=0,VA=1,VB=1,I32=0,PRE=0,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=0,TILES=1,KEXACT=0,STCS=0,DPX=4,DQK=8,DWX=8,DWY=2,DWK=4,DWMEM=0,DXMEM=1,DROWS=4,MINB=1}
  # Call t's GEMM winner on the H100 (683.5 us: C7 with TILES 4).
  G9=ALGO=0,BM=64,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=2,I32=1,PRE=1,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=1,TILES=4,KEXACT=1,STCS=0,MINB=2
  N8=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=4,DB=0,PADA=0,PADB=4,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=1,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=1,MASK=1,TILES=1,KEXACT=1,STCS=0,MINB=2
  C12=BM=64,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=1,VA=4,VB=1,I32=1,PRE=0,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=0,TILES=1,KEXACT=0,STCS=0,MINB=2
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem --format=csv | tee "$OUT/gpu-u.log"
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu --format=csv -l 1 > "$OUT/clocks-u.log" 2>&1 &
  smi=$!
  echo "### GPU test: the direct path through NVRTC (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 60 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_direct_is_right 2>&1 | grep -E "^test |test result|wrong|direct_|panicked|note:|rror" |
    tee "$OUT/tests-u.log"
  NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 benches/gpu/cudnn_conv.py vgg16:conv1_1,conv1_2 alexnet:L1 copy fill |
    tee "$OUT/cudnn-u.tsv"
  mkdir -p "$OUT/rec"
  echo "### VGG16 conv1_1, the direct path (call t's best path on the H100): 1500 evaluations or 140 s, W9 first"
  timeout 200 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --pin ALGO=1 \
    --evals 1500 --seconds 140 --validate best --start "$W9" 2>&1 | tee "$OUT/vgg16-u.log" |
    grep -E "^(layer|space|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error|start)"
  cp target/tune/cuda/dnn_conv-*.jsonl "$OUT/rec/conv1_1-u.jsonl"
  python3 bench/beast/param_wins.py "$OUT/rec/conv1_1-u.jsonl" > "$OUT/wins-u.log" 2>&1
  grep -E "(DPX|DQK|DWX|DWY|DWK|DWMEM|DXMEM|DROWS|STCS|MINB|UNR)\s" "$OUT/wins-u.log"
  echo "### VGG16 conv1_1, the implicit GEMM's best of call t (pinned), re-measured and validated"
  timeout 60 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --evals 1 \
    --validate best --pin "$G9" 2>&1 | tee "$OUT/vgg16-u-gemm.log" |
    grep -E "^(space|best|time|re-measured|validat|Error|error)"
  if [ -x "$B/dnn_conv_t" ]; then
    echo "### W9 with call t's kernel (binary of call t: the weights staged before the first row block's loads)"
    timeout 60 bash $R "$B/dnn_conv_t" --backend cuda --net vgg16 --layers conv1_1 --evals 1 \
      --pin "$W9" 2>&1 | tee "$OUT/vgg16-u-before.log" | grep -E "^(re-measured|time|validat)"
  fi
  best=$(grep -m1 '^best:' "$OUT/vgg16-u.log" | sed 's/^best: *//; s/ /,/g')
  for i in 1 2 3; do
    echo "### conv1_1's winner re-measured, process $i (pinned, 5 rounds)"
    [ -n "$best" ] && timeout 60 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 \
      --evals 1 --pin "$best" 2>&1 | tee -a "$OUT/remeasure-u.log" | grep -E "^(re-measured|time)"
  done
  echo "### session 8's winners of AlexNet L1 and VGG16 conv1_2 re-measured (pinned, validated)"
  timeout 60 bash $R "$B/dnn_conv" --backend cuda --net alexnet --layers L1 --evals 1 \
    --pin "ALGO=0,$N8" 2>&1 | tee "$OUT/alexnet-u-l1.log" |
    grep -E "^(layer|space|best|time|re-measured|LAYER|validat|Error|error)"
  timeout 80 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_2 --evals 1 \
    --validate best --pin "ALGO=0,$C12" 2>&1 | tee "$OUT/vgg16-u-c12.log" |
    grep -E "^(layer|space|best|time|re-measured|LAYER|validat|Error|error)"
  python3 benches/gpu/beast_table.py "$OUT/vgg16-u.log" "$OUT/vgg16-u-c12.log" \
    "$OUT/alexnet-u-l1.log" "$OUT/cudnn-u.tsv" 2>&1 | tee "$OUT/table-u.md"
  grep -E "^LAYER" "$OUT/vgg16-u-gemm.log" | sed 's/^/GEMM /' | tee -a "$OUT/table-u.md"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv | tee -a "$OUT/gpu-u.log"
  if [ -n "$best" ] && [ $(( $(date +%s) - t0 )) -lt 450 ]; then profile_config final "$best"; fi
  kill $smi
  echo "### KORDER 1 with TILES 2 through NVRTC, per output tile (benches/gpu/tiles_diag.py)"
  timeout 45 python3 benches/gpu/tiles_diag.py 2>&1 | tee "$OUT/diag-u.log"
  (cd "$OUT" && tar czf logs-u.tgz gpu-u.log clocks-u.log tests-u.log cudnn-u.tsv vgg16-u.log \
    vgg16-u-gemm.log vgg16-u-before.log wins-u.log remeasure-u.log alexnet-u-l1.log vgg16-u-c12.log diag-u.log rec &&
    { [ -d prof ] && tar czf profile-u.tgz --exclude='*.ncu-rep' prof; true; } &&
    rm -rf prof rec clocks-u.log tests-u.log cudnn-u.tsv vgg16-u.log vgg16-u-gemm.log vgg16-u-before.log wins-u.log \
      remeasure-u.log alexnet-u-l1.log vgg16-u-c12.log)
fi
# Session 9, third call `v` (about 1 minute): the fix of channels innermost with several
# pixel tiles through NVRTC (the gather's plain loads, body.c's LDG_B; the fence lifted):
# the GPU test of pixel tiles, and tiles_diag.py with the failure (__ldg) beside the fix.
if wants v; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv | tee "$OUT/gpu-v.log"
  echo "### GPU test: pixel tiles through NVRTC, channels innermost included (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 90 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_pixel_tiles_are_right 2>&1 | grep -E "^test |test result|wrong|short_|panicked|note:|rror" |
    tee "$OUT/tests-v.log"
  echo "### tiles_diag.py"
  timeout 60 python3 benches/gpu/tiles_diag.py 2>&1 | tee "$OUT/diag-v.log"
fi
echo "### device-side wall time of this script: $(( $(date +%s) - t0 )) s"
tar czf "$OUT/records-beast-$part.tgz" target/tune tuning 2>/dev/null
