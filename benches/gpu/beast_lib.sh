#!/bin/bash
# Helpers of the BEAST GPU scripts (run_beast.sh, run_beast10.sh), sourced after they set B, R
# and OUT: session 8's conv1_1 tuning and the Nsight Compute profiles of one configuration.
# Session 8: the direct path (ALGO 1) on VGG16 conv1_1. `direct_conv1_1 TAG EVALS SECONDS`
# tunes it (session 7's winner first, then the starts: the direct path's, the GEMM's),
# re-measures and validates the winner once, prints the WINS lines of ALGO and the direct
# parameters and the table with cuDNN's conv1_1 (cudnn-TAG.tsv, timed before).
C7=BM=64,BN=128,BK=16,MDIM=8,NDIM=16,VS=4,DB=1,PADA=4,PADB=0,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=2,I32=1,PRE=1,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MASK=1,TILES=16,KEXACT=1,STCS=0,MINB=2
direct_conv1_1() {
  local tag=$1 evals=$2 secs=$3
  echo "### VGG16 conv1_1, batch 128: $evals evaluations or $secs s, the tuned one validated"
  timeout $((secs + 45)) bash $R "$B/dnn_conv" --backend cuda --net vgg16 --layers conv1_1 \
    --evals "$evals" --seconds "$secs" --validate best --start "$C7" 2>&1 |
    tee "$OUT/vgg16-$tag.log" |
    grep -E "^(layer|space|tuned|best|time|re-measured|LAYER|fp32|validat|Error|error|dnn_conv|start)"
  python3 bench/beast/param_wins.py target/tune/cuda/dnn_conv-*.jsonl > "$OUT/wins-$tag.log" 2>&1
  grep -E "c=3,h=224.*(ALGO|DPX|DQK|DWX|DWY|DWK|DWMEM|DXMEM|DROWS|UNR|STCS|MINB)\s" "$OUT/wins-$tag.log"
  python3 benches/gpu/beast_table.py "$OUT/vgg16-$tag.log" "$OUT/cudnn-$tag.tsv" 2>&1 | tee "$OUT/table-$tag.md"
}
# Nsight Compute on the winner of the log vgg16-TAG.log, one launch: `profile_winner TAG`.
profile_winner() {
  local best
  best=$(grep -m1 '^best:' "$OUT/vgg16-$1.log" | sed 's/^best: *//; s/ /,/g')
  [ -n "$best" ] || { echo "no winner to profile"; return; }
  profile_config "$1" "$best"
  (cd "$OUT" && tar czf "profile-$1.tgz" prof && rm -rf prof)
}
# Nsight Compute on one configuration of VGG16 conv1_1, one launch, into $OUT/prof:
# `profile_config TAG CONFIG` (the details, the SASS page and its instruction mix). Every
# parameter is pinned (a space of that configuration alone): with `--start` and one
# evaluation, the search's first batch is compiled in parallel and the configuration
# measured first, which ncu profiles, need not be the one asked for.
profile_config() {
  local tag=$1 best=$2 ncu
  ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
  echo "### Nsight Compute: VGG16 conv1_1, $tag ($best)"
  mkdir -p "$OUT/prof"
  timeout "${PROFILE_TIMEOUT:-110}" bash $R $ncu --kernel-name dnn_conv --launch-count 1 --set full --import-source yes \
    --clock-control none -f -o "$OUT/prof/conv1_1-$tag" bash -c "cd $PWD && $B/dnn_conv --backend cuda \
    --net vgg16 --layers conv1_1 --evals 1 --seconds 5 --validate best --pin $best" \
    > "$OUT/prof/conv1_1-$tag-run.log" 2>&1
  tail -3 "$OUT/prof/conv1_1-$tag-run.log"
  $ncu --import "$OUT/prof/conv1_1-$tag.ncu-rep" --page details --print-details all > "$OUT/prof/conv1_1-$tag-details.txt" 2>&1
  $ncu --import "$OUT/prof/conv1_1-$tag.ncu-rep" --page raw --csv > "$OUT/prof/conv1_1-$tag-raw.csv" 2>&1 || true
  $ncu --import "$OUT/prof/conv1_1-$tag.ncu-rep" --page source --csv --print-source sass > "$OUT/prof/conv1_1-$tag-sass.csv" 2>&1 || true
  grep -E "Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Block Limit|Stall|Selected|L1/TEX Hit|L2 Hit|Shared Memory|Bank" \
    "$OUT/prof/conv1_1-$tag-details.txt" | head -60
  # The SASS mix: FFMA against every executed instruction (the sass page's counts).
  python3 - "$OUT/prof/conv1_1-$tag-sass.csv" <<'PY' || true
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1], errors="replace")))
head = next((i for i, r in enumerate(rows) if "Source" in r), None)
if head is None:
    sys.exit("no sass table")
cols = rows[head]
src = cols.index("Source")
ex = next((i for i, c in enumerate(cols) if c.startswith("Warp Instructions Executed") or c == "Instructions Executed"), None)
if ex is None:
    sys.exit("no executed-instructions column: " + ",".join(cols[:12]))
mix = collections.Counter()
for r in rows[head + 1:]:
    try:
        n = float(r[ex].replace(",", ""))
    except (ValueError, IndexError):
        continue
    op = r[src].split()[0] if r[src].split() else "?"
    if op.startswith("@"):
        op = r[src].split()[1] if len(r[src].split()) > 1 else op
    mix[op.split(".")[0]] += n
total = sum(mix.values()) or 1
print("SASS mix (executed warp instructions): total %.3g" % total)
for op, n in mix.most_common(14):
    print("  %-8s %6.2f%%" % (op, 100 * n / total))
PY
}
