#!/bin/bash
# Issue 10's GPU study (benches/GPU-REPORT-trust.md):
#   repeat: SGEMM 4096^3 and the 3x3 convolution (8192x4096) tuned from 5 seeds each, each
#           run into its own tuning database, so no run starts from another's result; the
#           report reads the re-measured median of each run's winner and its spread. Then
#           the 5 winners of each kernel measured again side by side in one process
#           (timer_check --across): their range there is what the searches found, apart
#           from what differs from one process to the next.
#           `gemm` and `conv` run one kernel's part alone. Budgets: GEMM_SECONDS and
#           CONV_SECONDS (40 and 35 s by default); a run that would end past DEADLINE seconds
#           after the start (default 570) is skipped and says so. After each search, up to
#           POLISH (64) more evaluations climb from its best through one-parameter
#           neighbours (Tuner::polish; POLISH=0: none).
#   timer:  for SGEMM, the convolution and saxpy, each tuned briefly here, tune's time for
#           the best (as the tuner measures: median of 7 rounds) against Nsight Compute's gpu__time_duration of the
#           same configuration launched one launch per sample.
# Every log starts with the commit and the clocks.
#
# Build where cargo is (no GPU needed), then run on the GPU machine:
#   cargo build --release --features cuda --example gemm --example conv --example saxpy \
#     --example timer_check
#   mkdir -p .device-bin/trust && cp target/release/examples/{gemm,conv,saxpy,timer_check} \
#     .device-bin/trust/ && strip .device-bin/trust/*
#   TUNE_COMMIT=$(git rev-parse --short HEAD) B=.device-bin/trust bash benches/gpu/run_trust.sh repeat
#   TUNE_COMMIT=... B=.device-bin/trust bash benches/gpu/run_trust.sh timer
B=${B:-.device-bin/trust}
R=benches/gpu-logs/cuda/run.sh # CUDA 13's libnvrtc and libcublas on LD_LIBRARY_PATH
# Logs and databases go to W; with OUT set (the GPU machine's folder that comes back), they
# are packed into one file there at the end.
W=${W:-/tmp/trust}
SEEDS=${SEEDS:-1 2 3 4 5}
mkdir -p "$W"
if [ -n "$OUT" ]; then
  trap 'tar czf "$OUT/trust-${1:-repeat}.tar.gz" -C "$W" . 2>/dev/null' EXIT
fi
clocks() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw,clocks_throttle_reasons.active \
    --format=csv,noheader
}
echo "commit ${TUNE_COMMIT:-unknown}; $(date -u +%FT%TZ)"
echo "clocks (name, driver, sm MHz, mem MHz, max sm MHz, temperature, power, throttle): $(clocks)"
keep() { grep -E "^(case|space|tuned|compile|best|time|re-measured|RESULT|TIMER|ACROSS)|error|Error"; }

START=$SECONDS
DEADLINE=${DEADLINE:-570}
# Whether a step of at most $1 seconds still ends before the deadline; says so if not.
fits() {
  if ((SECONDS - START + $1 > DEADLINE)); then
    echo "SKIPPED: $2 (would end past ${DEADLINE} s; at $((SECONDS - START)) s)"
    return 1
  fi
}

# repeat_one NAME SECONDS EVALS OVERHEAD ARGS...: 5 seeds of one kernel, then its winners
# side by side. OVERHEAD: the most seconds a run takes beyond its budget (setup, reference,
# re-measurement).
repeat_one() {
  local name=$1 seconds=$2 evals=$3 overhead=$4
  shift 4
  local dbs=()
  for seed in $SEEDS; do
    fits $((seconds + overhead)) "$name seed $seed" || continue
    echo "### $name $*, seed $seed, ${seconds} s + polish ${POLISH:-64}; at $((SECONDS - START)) s"
    TUNE_SEED=$seed TUNE_DB="$W/db-$name-$seed" TUNE_EVALS=$evals TUNE_SECONDS=$seconds \
      TUNE_POLISH=${POLISH:-64} \
      timeout $((seconds + overhead)) bash $R "$B/$name" --backend cuda "$@" \
      > "$W/$name-$seed.log" 2>&1
    keep < "$W/$name-$seed.log"
    echo "clocks: $(clocks)"
    dbs+=("$W/db-$name-$seed")
  done
  local case=$name:$(IFS=:; echo "$*")
  ((${#dbs[@]})) || return 0
  fits 40 "$name across" || return 0
  echo "### $name: the winners side by side; at $((SECONDS - START)) s"
  timeout 40 bash $R "$B/timer_check" --backend cuda "$case" --across "${dbs[@]}" 2>&1 | keep
  echo "clocks: $(clocks)"
}

gemm_repeat() {
  repeat_one gemm "${GEMM_SECONDS:-40}" "${GEMM_EVALS:-2000}" 40 4096
}
conv_repeat() {
  repeat_one conv "${CONV_SECONDS:-35}" "${CONV_EVALS:-2000}" 25 8192 4096 3
}

case "${1:-repeat}" in
repeat)
  gemm_repeat
  conv_repeat
  ;;
gemm)
  gemm_repeat
  ;;
conv)
  conv_repeat
  ;;
timer)
  # Each kernel tuned briefly into a database of its own, then its best checked.
  # TIMER_KERNELS picks some of them, e.g. TIMER_KERNELS=conv.
  K=${TIMER_KERNELS:-gemm conv saxpy}
  echo "### tuning the kernels briefly: $K"
  [[ $K == *gemm* ]] && TUNE_DB="$W/timer-gemm" TUNE_EVALS=60 TUNE_SECONDS=25 timeout 90 bash $R "$B/gemm" --backend cuda 4096 2>&1 | keep
  [[ $K == *conv* ]] && TUNE_DB="$W/timer-conv" TUNE_EVALS=60 TUNE_SECONDS=25 timeout 90 bash $R "$B/conv" --backend cuda 8192 4096 3 2>&1 | keep
  [[ $K == *saxpy* ]] && TUNE_DB="$W/timer-saxpy" TUNE_EVALS=60 TUNE_SECONDS=20 timeout 90 bash $R "$B/saxpy" --backend cuda 67108864 2>&1 | keep
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  for c in "gemm:4096 gemm sgemm" "conv:8192:4096:3 conv conv" "saxpy:67108864 saxpy saxpy"; do
    set -- $c
    [[ $K == *$2* ]] || continue
    echo "### timer check $1"
    TUNE_DB="$W/timer-$2" timeout 120 bash $R "$B/timer_check" --backend cuda "$1" 2>&1 | keep
    TUNE_DB="$W/timer-$2" timeout 120 bash $R "$B/timer_check" --backend cuda "$1" --plain 30 2>&1 | keep
    # The same 30 launches timed by Nsight Compute, at the clocks and caches tune sees.
    TUNE_DB="$W/timer-$2" timeout 240 bash $R "$ncu" --clock-control none --cache-control none \
      --metrics gpu__time_duration.sum --kernel-name "$3" --csv \
      "$B/timer_check" --backend cuda "$1" --plain 30 > "$W/ncu-$2.csv" 2> "$W/ncu-$2.err"
    python3 - "$W/ncu-$2.csv" <<'PY'
import csv, statistics, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
if not rows:
    sys.exit("NCU\tno profile rows (see the .err file)")
head = rows[0]
vi, ui = head.index("Metric Value"), head.index("Metric Unit")
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
         "second": 1e6, "s": 1e6}
t = [float(r[vi].replace(",", "")) * scale[r[ui]] for r in rows[1:] if r[vi]]
last = t[-30:]
print(f"NCU\t{len(t)} launches profiled; last {len(last)}: median {statistics.median(last):.3f} us, "
      f"min {min(last):.3f}, max {max(last):.3f}")
PY
    [ -s "$W/ncu-$2.csv" ] || tail -5 "$W/ncu-$2.err"
  done
  echo "clocks: $(clocks)"
  ;;
*)
  echo "usage: run_trust.sh repeat|gemm|conv|timer" >&2
  exit 2
  ;;
esac
