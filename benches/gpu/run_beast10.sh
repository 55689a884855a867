#!/bin/bash
# BEAST session 10 on an H200 (issue 15): VGG16 conv1_1 with the direct path's output staged
# in shared memory per row block and written by asynchronous bulk copies (DOST 1,
# `cp.async.bulk`, sm_90) or by the work-group's own stores from the staged tile (DOST 2),
# beside the stores from registers (DOST 0). Two calls, each under 9 minutes:
#   w  the GPU test of the direct path through NVRTC (every DOST value measured and
#      validated), cuDNN's conv1_1 and the copy/fill bandwidths, session 9's winner (U9)
#      with each DOST and session 8's H200 winner (C7, the implicit GEMM) pinned side by
#      side, the direct path tuned (--pin ALGO=1, U9 first), the winner re-measured in 2
#      more processes, Nsight Compute on U9 with DOST 1 and 0; SM clocks every second.
#   x  (after w: the staged output lost, 1.53x; the direct path's best had 16 row blocks,
#      the largest value) the GPU test again (bulk copies from one lane per warp), call w's
#      winner W10 with DOST 0/1/2 and with 32 row blocks pinned, the direct path tuned with
#      DROWS up to 64 (W10 first), its best re-measured in 5 processes, VGG16 conv1_2 and
#      AlexNet L1 re-checked with their pinned winners (no regression), cuDNN, a profile.
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features cuda,opencl --example dnn_conv
#   cargo test --release --features cuda --no-run --test cuda
#   cp target/release/examples/dnn_conv .device-bin/beast10/ (and the cuda test as cuda_test)
#   B=.device-bin/beast10 bash benches/gpu/run_beast10.sh w     # logs in $OUT (x the same)
B=${B:-.device-bin/beast10}
R=benches/gpu-logs/cuda/run.sh # CUDA 13's libnvrtc on LD_LIBRARY_PATH, TF32 off
OUT=${OUT:-/tmp/beast-out}
mkdir -p "$OUT"
part=${1:-w}
t0=$(date +%s)
source benches/gpu/beast_lib.sh # C7, profile_config
# Session 9's winner on the H100 (673.5 us there), stores from registers.
U9=ALGO=1,BM=16,BN=16,BK=4,MDIM=2,NDIM=2,VS=1,DB=0,PADA=0,PADB=0,UNR=1,FLAYOUT=0,KORDER=0,VA=1,VB=1,I32=0,PRE=0,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=0,TILES=1,KEXACT=0,STCS=0,DPX=4,DQK=8,DWX=8,DWY=4,DWK=4,DWMEM=0,DXMEM=1,DROWS=4,MINB=1
N8=BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=4,DB=0,PADA=0,PADB=4,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=1,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=1,MASK=1,TILES=1,KEXACT=1,STCS=0,MINB=2
C12=BM=64,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=1,VA=4,VB=1,I32=1,PRE=0,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=0,TILES=1,KEXACT=0,STCS=0,MINB=2
KEEP="^(layer|space|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error|start|device)"
# `pinned TAG LOG LAYER CONFIG [NET]`: one configuration measured (5 rounds) and validated.
pinned() {
  { echo "### $1: $4"
    timeout 90 bash $R "$B/dnn_conv" --backend cuda --net "${5:-vgg16}" --layers "$3" --evals 1 \
      --validate best --pin "$4"; } 2>&1 | tee -a "$OUT/$2" | grep -E "$KEEP|^###"
}
best_of() { grep -m1 '^best:' "$1" | sed 's/^best: *//; s/ /,/g'; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv | tee "$OUT/gpu-$part.log"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu \
  --format=csv -l 1 > "$OUT/clocks-$part.log" 2>&1 &
smi=$!
if [ "$part" = w ]; then
  echo "### GPU test: the direct path through NVRTC, DOST 0/1/2 included (TUNE_REQUIRE_CUDA=1)"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 90 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_direct_is_right 2>&1 | grep -E "^test |test result|wrong|direct_|panicked|note:|rror" |
    tee "$OUT/tests-w.log"
  echo "### cuDNN through PyTorch (TF32 off): VGG16 conv1_1; copy and fill bandwidth"
  NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 benches/gpu/cudnn_conv.py vgg16:conv1_1 copy fill |
    tee "$OUT/cudnn-w.tsv"
  for d in 0 1 2; do pinned "U9-DOST$d" pinned-w.log conv1_1 "$U9,DOST=$d"; done
  pinned C7 pinned-w.log conv1_1 "ALGO=0,$C7"
  mkdir -p "$OUT/rec"
  echo "### VGG16 conv1_1, the direct path alone: 1500 evaluations or 130 s, U9 first, the tuned one validated"
  timeout 190 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --pin ALGO=1 \
    --evals 1500 --seconds 130 --validate best --start "$U9,DOST=0" 2>&1 | tee "$OUT/vgg16-w.log" |
    grep -E "$KEEP"
  cp target/tune/cuda/dnn_conv-*.jsonl "$OUT/rec/direct-w.jsonl"
  python3 bench/beast/param_wins.py "$OUT/rec/direct-w.jsonl" > "$OUT/wins-w.log" 2>&1
  grep -E "(DPX|DQK|DWX|DWY|DWK|DWMEM|DXMEM|DROWS|DOST|UNR|STCS|MINB)\s" "$OUT/wins-w.log"
  best=$(best_of "$OUT/vgg16-w.log")
  for i in 1 2; do
    [ -n "$best" ] && pinned "winner-$i" remeasure-w.log conv1_1 "$best"
  done
  python3 benches/gpu/beast_table.py "$OUT/vgg16-w.log" "$OUT/cudnn-w.tsv" 2>&1 | tee "$OUT/table-w.md"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv | tee -a "$OUT/gpu-w.log"
  echo "### elapsed $(( $(date +%s) - t0 )) s"
  [ $(( $(date +%s) - t0 )) -lt 400 ] && profile_config dost1 "$U9,DOST=1"
  [ $(( $(date +%s) - t0 )) -lt 450 ] && profile_config dost0 "$U9,DOST=0"
  kill $smi
  (cd "$OUT" && tar czf logs-w.tgz gpu-w.log clocks-w.log tests-w.log cudnn-w.tsv pinned-w.log \
    vgg16-w.log wins-w.log remeasure-w.log table-w.md rec &&
    { [ -d prof ] && tar czf profile-w.tgz --exclude='*.ncu-rep' prof; true; } &&
    rm -rf prof rec clocks-w.log tests-w.log cudnn-w.tsv pinned-w.log vgg16-w.log wins-w.log remeasure-w.log)
fi
# Call w's winner on the H200 (574.8 us, 57.7%): 8 x 1 x 8 work-items of 4 pixels x 8
# channels, 16 row blocks of one row, streaming stores, MINB 2.
W10=ALGO=1,BM=16,BN=16,BK=4,MDIM=2,NDIM=2,VS=1,DB=0,PADA=0,PADB=0,UNR=1,FLAYOUT=0,KORDER=0,VA=1,VB=1,I32=0,PRE=0,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=0,TILES=1,KEXACT=0,STCS=1,DPX=4,DQK=8,DWX=8,DWY=1,DWK=8,DWMEM=0,DXMEM=1,MINB=2
if [ "$part" = x ]; then
  echo "### GPU test: the direct path through NVRTC, the bulk copies now from one lane per warp"
  [ -x "$B/cuda_test" ] && TUNE_REQUIRE_CUDA=1 timeout 90 bash $R "$B/cuda_test" --test-threads=1 \
    dnn_conv_direct_is_right 2>&1 | grep -E "^test |test result|wrong|direct_|panicked|note:|rror" |
    tee "$OUT/tests-x.log"
  NVIDIA_TF32_OVERRIDE=0 timeout 60 python3 benches/gpu/cudnn_conv.py vgg16:conv1_1,conv1_2 alexnet:L1 copy fill |
    tee "$OUT/cudnn-x.tsv"
  for v in "DROWS=16,DOST=0" "DROWS=16,DOST=1" "DROWS=16,DOST=2" "DROWS=32,DOST=0"; do
    pinned "W10-$v" pinned-x.log conv1_1 "$W10,$v"
  done
  mkdir -p "$OUT/rec"
  echo "### VGG16 conv1_1, the direct path alone (DROWS to 64): 1500 evaluations or 100 s, W10 first, validated"
  timeout 190 bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 --pin ALGO=1 \
    --evals 1500 --seconds 100 --validate best --start "$W10,DROWS=16,DOST=0" 2>&1 | tee "$OUT/vgg16-x.log" |
    grep -E "$KEEP"
  cp target/tune/cuda/dnn_conv-*.jsonl "$OUT/rec/direct-x.jsonl"
  python3 bench/beast/param_wins.py "$OUT/rec/direct-x.jsonl" > "$OUT/wins-x.log" 2>&1
  grep -E "(DPX|DQK|DWX|DWY|DWK|DWMEM|DXMEM|DROWS|DOST|UNR|STCS|MINB)\s" "$OUT/wins-x.log"
  best=$(best_of "$OUT/vgg16-x.log")
  for i in 1 2 3 4 5; do
    [ -n "$best" ] && pinned "best-$i" remeasure-x.log conv1_1 "$best"
  done
  pinned C12 vgg16-x-c12.log conv1_2 "ALGO=0,$C12"
  pinned N8 alexnet-x-l1.log L1 "ALGO=0,$N8" alexnet
  python3 benches/gpu/beast_table.py "$OUT/vgg16-x.log" "$OUT/vgg16-x-c12.log" "$OUT/alexnet-x-l1.log" \
    "$OUT/cudnn-x.tsv" 2>&1 | tee "$OUT/table-x.md"
  nvidia-smi --query-gpu=clocks.sm,clocks.mem --format=csv | tee -a "$OUT/gpu-x.log"
  echo "### elapsed $(( $(date +%s) - t0 )) s"
  # The lead's budget for this call is 420 s: the profile only if it fits.
  [ -n "$best" ] && [ $(( $(date +%s) - t0 )) -lt 280 ] && PROFILE_TIMEOUT=90 profile_config best "$best"
  kill $smi
  (cd "$OUT" && tar czf logs-x.tgz gpu-x.log clocks-x.log tests-x.log cudnn-x.tsv pinned-x.log vgg16-x.log \
    wins-x.log remeasure-x.log vgg16-x-c12.log alexnet-x-l1.log table-x.md rec &&
    { [ -d prof ] && tar czf profile-x.tgz --exclude='*.ncu-rep' prof; true; } &&
    rm -rf prof rec clocks-x.log tests-x.log cudnn-x.tsv pinned-x.log vgg16-x.log wins-x.log remeasure-x.log \
      vgg16-x-c12.log alexnet-x-l1.log)
fi
echo "### device-side wall time of this script: $(( $(date +%s) - t0 )) s"
