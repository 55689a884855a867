#!/bin/bash
# Issue 17's GPU figures (bench/scale/RESULTS.md): evaluations per second of the SGEMM tuning
# (examples/scale_gemm.rs, 4096^3, random search with a fixed seed, so that every run
# measures the same configurations) on 1, 2 and 4 GPUs of one machine, each GPU measured by
# its own isolated worker process, against one GPU tuned by the tuner on its own; then the
# first configurations of the space searched exhaustively on one and on every GPU, whose
# outcomes must be the same. Targets: 2 GPUs >= 1.9x one GPU, 4 GPUs >= 3.7x.
#
# On a machine with one GPU it runs 2 and 4 workers on that GPU instead ("workers on one
# GPU"): that shows that the run works and what overlapping several workers gives, not
# the scaling across GPUs, and is labelled so.
#
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features cuda --example scale_gemm
#   mkdir -p .device-bin/scale && cp target/release/examples/scale_gemm .device-bin/scale/ \
#     && strip .device-bin/scale/scale_gemm
#   TUNE_COMMIT=$(git rev-parse --short HEAD) B=.device-bin/scale bash benches/gpu/run_scale.sh throughput
#   TUNE_COMMIT=... B=.device-bin/scale bash benches/gpu/run_scale.sh exhaustive
# Environment: EVALS (configurations per run, default 200), SECONDS_MAX (time limit per run,
# default 50), SIZE (default 4096), EXHAUSTIVE (configurations of the exhaustive check,
# default 100), OUT (logs; default /tmp/scale).
B=${B:-.device-bin/scale}
R=benches/gpu-logs/cuda/run.sh # CUDA 13's libnvrtc and libcublas on LD_LIBRARY_PATH
OUT=${OUT:-/tmp/scale}
EVALS=${EVALS:-200}
SECONDS_MAX=${SECONDS_MAX:-50}
SIZE=${SIZE:-4096}
EXHAUSTIVE=${EXHAUSTIVE:-100}
mkdir -p "$OUT"
clocks() {
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active \
    --format=csv,noheader
}
gpus=$(nvidia-smi -L | grep -c '^GPU')
echo "commit ${TUNE_COMMIT:-unknown}; $(date -u +%FT%TZ); $gpus GPU(s); $(nproc) CPU cores"
echo "clocks (index, name, driver, sm MHz, mem MHz, max sm MHz, temperature, power, throttle):"
clocks
keep() { grep -E "^(SCALE|scale_gemm|tune:|log:)|error|Error|panicked"; }

# list LABEL: the devices of a run with that many units.
devices() {
  local n=$1 list=""
  for ((i = 0; i < n; i++)); do
    if ((gpus >= n)); then list="$list,$i"; else list="$list,0"; fi
  done
  echo "${list#,}"
}

one() { # label, then scale_gemm's arguments
  local label=$1
  shift
  echo "### $label"
  TUNE_EVALS=$EVALS TUNE_SECONDS=$SECONDS_MAX TUNE_LOG_DIR="$OUT" \
    timeout $((SECONDS_MAX + 90)) bash $R "$B/scale_gemm" --backend cuda --label "$label" "$@" "$SIZE" 2>&1 | keep
  echo "clocks: $(clocks | tr '\n' ' ')"
}

PART=${1:-all} # throughput, exhaustive or all (each part fits in 10 minutes)
if [[ $PART != exhaustive ]]; then
  one single --single --devices 0
  one devices-1 --devices 0
  for n in 2 4; do
    if ((gpus >= n)); then
      one "gpus-$n" --devices "$(devices "$n")"
    else
      one "workers-on-one-gpu-$n" --devices "$(devices "$n")"
    fi
  done
fi

# Exhaustive search of the first configurations: the same outcomes on one and on all.
n=$((gpus >= 4 ? 4 : (gpus >= 2 ? 2 : 4)))
if [[ $PART != throughput ]]; then
  TUNE_TECHNIQUE=exhaustive EVALS=$EXHAUSTIVE one exhaustive-1 --devices 0
  TUNE_TECHNIQUE=exhaustive EVALS=$EXHAUSTIVE one "exhaustive-$n" --devices "$(devices "$n")"
fi

python3 - "$OUT" "$n" <<'EOF'
import json, sys, collections
out, n = sys.argv[1], sys.argv[2]
def read(label):
    try:
        with open(f"{out}/{label}.jsonl") as f:
            return [json.loads(l) for l in f if l.strip()]
    except OSError:
        return None
def outcomes(rs):
    return {r["index"]: r["status"] for r in rs if "index" in r and "status" in r}
a, b = read("exhaustive-1"), read(f"exhaustive-{n}")
if a is None or b is None:
    print("EXHAUSTIVE missing log"); sys.exit(0)
oa, ob = outcomes(a), outcomes(b)
same_set = set(oa) == set(ob)
diff = [i for i in oa if i in ob and oa[i] != ob[i]]
print(f"EXHAUSTIVE configurations {len(oa)} vs {len(ob)}; same set: {same_set}; "
      f"outcomes that differ: {len(diff)} {[(i, oa[i], ob[i]) for i in diff[:5]]}")
ca = {r["index"]: r.get("cost") for r in a}
cb = {r["index"]: r.get("cost") for r in b}
ratios = sorted(cb[i] / ca[i] for i in ca if ca[i] and cb.get(i))
if ratios:
    print(f"EXHAUSTIVE cost on {n} / on 1, per configuration: min {ratios[0]:.3f}, "
          f"median {ratios[len(ratios)//2]:.3f}, max {ratios[-1]:.3f}")
for label in ["single", "devices-1", "gpus-2", "gpus-4", "workers-on-one-gpu-2", "workers-on-one-gpu-4"]:
    rs = read(label)
    if rs:
        by = collections.Counter(r.get("measured_on") for r in rs)
        print(f"MEASURED_ON {label}: {dict(by)}")
EOF
