#!/bin/bash
# Nsight Compute on AlexNet L1's and L3's winners of beast5 (issue 15), one launch each: stall
# reasons, pipe use and per-SASS-instruction counts (benches/gpu-logs/beast6/profile/ANALYSIS.md).
# Build: cargo build --release --features cuda,opencl --example dnn_conv; copy it to $B.
# Run on the GPU machine: OUT=$OUT B=.device-bin/lead6 bash benches/gpu/ncu_beast.sh
# Other layers: PROFILES='NAME:NET:LAYER:CONFIG ...' (session 7: VGG16 conv1_1 on the H200).
B=${B:-.device-bin/lead6}; R=benches/gpu-logs/cuda/run.sh  # B: a folder holding a release build of examples/dnn_conv
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
$ncu --version | tail -1
L1='BM=64,BN=128,BK=8,MDIM=8,NDIM=16,VS=2,DB=1,PADA=0,PADB=4,UNR=1,FLAYOUT=1,KORDER=0,VA=4,VB=1,I32=1,PRE=1,SPLITK=1,LCOLS=16,PATCH=0,OSTAGE=0,MINB=1'
L3='BM=64,BN=128,BK=8,MDIM=4,NDIM=16,VS=4,DB=1,PADA=4,PADB=4,UNR=1,FLAYOUT=1,KORDER=1,VA=4,VB=2,I32=1,PRE=0,SPLITK=1,LCOLS=0,PATCH=0,OSTAGE=0,MINB=2'
PROFILES=${PROFILES:-"L1:alexnet:L1:$L1 L3:alexnet:L3:$L3"}
for P in $PROFILES; do
  IFS=: read -r L net layer cfg <<< "$P"
  timeout 200 bash $R $ncu --kernel-name dnn_conv --launch-count 1 --set full --import-source yes \
    --clock-control none -f -o $OUT/$L bash -c "cd $PWD && $B/dnn_conv --backend cuda --net $net --layers $layer --evals 1 --seconds 5 --validate best --start $cfg" > $OUT/$L-run.log 2>&1
  tail -5 $OUT/$L-run.log
  $ncu --import $OUT/$L.ncu-rep --page details --print-details all > $OUT/$L-details.txt 2>&1
  $ncu --import $OUT/$L.ncu-rep --page raw --csv > $OUT/$L-raw.csv 2>&1
  $ncu --import $OUT/$L.ncu-rep --page source --csv --print-source sass > $OUT/$L-sass.csv 2>&1 || true
  ls -la $OUT/
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Warp Cycles Per Issued|Block Limit" $OUT/$L-details.txt | head -20
done
cd $OUT && tar czf profile.tgz *-run.log *-details.txt *-raw.csv *-sass.csv *.ncu-rep 2>/dev/null && rm -f *-raw.csv *-sass.csv *.ncu-rep; ls -la $OUT
