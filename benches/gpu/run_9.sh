#!/bin/bash
# GPU run 9 (session 3): the OpenCL tests on NVIDIA's OpenCL (the README's command:
# `TUNE_OPENCL_DEVICE=nvidia cargo test --release --features opencl --test opencl`), and the
# isolated backend's conformance tests there.
B=${B:-.device-bin/t9}
export TUNE_OPENCL_DEVICE=nvidia CI=1
echo "### opencl tests"; timeout 240 $B/opencl_test 2>&1 | grep -vE "^(case|device|space|tuned|compile|best|time|RESULT|setup):|^\s*$|error generated"
echo "### isolated conformance"; timeout 120 $B/isolated_test conformance a_correct a_build a_wrong 2>&1 | grep -E "^test |test result|panicked"
