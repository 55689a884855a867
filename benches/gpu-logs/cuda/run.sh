#!/bin/bash
# Finds libnvrtc / libcublas (CUDA 13) and runs what is asked, logging into $OUT.
set -o pipefail
libs=""
for f in $(find /usr/local/cuda*/ -maxdepth 6 \( -name 'libnvrtc.so.13*' -o -name 'libcublas.so.13*' \) -not -path '*compat*' 2>/dev/null); do
  d=$(dirname "$f"); case ":$libs:" in *":$d:"*) ;; *) libs="$libs:$d";; esac
done
export LD_LIBRARY_PATH="${libs#:}:${LD_LIBRARY_PATH}"
export NVIDIA_TF32_OVERRIDE=0
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1
"$@"
