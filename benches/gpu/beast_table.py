"""Joins the `LAYER` lines of examples/dnn_conv.rs and the `CUDNN` lines of
benches/gpu/cudnn_conv.py into the per-layer table of bench/beast/RESULTS.md.

    python3 benches/gpu/beast_table.py alexnet.log vgg16.log alexnet-bwd.log cudnn.tsv
"""
import sys

ours, cudnn = {}, {}
for path in sys.argv[1:]:
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0] == "LAYER":  # LAYER net name shape ms tflops of_peak config
            ours[(f[1], f[2])] = f
        elif f[0] == "CUDNN":  # CUDNN net name ms tflops
            cudnn[(f[1], f[2])] = f
print("| net | layer | tuned | TFLOP/s | of fp32 peak | cuDNN (TF32 off) | TFLOP/s | tuned / cuDNN speed |")
print("|---|---|---|---|---|---|---|---|")
for key, f in ours.items():
    c = cudnn.get(key)
    ms = float(f[4])
    if c:
        cms = float(c[3])
        ratio = f"**{cms / ms:.2f}x**" if cms > ms else f"{cms / ms:.2f}x"
        cud = f"{cms:.3f} ms | {float(c[4]):.2f}"
    else:
        ratio, cud = "-", "- | -"
    print(f"| {key[0]} | {key[1]} | {ms:.3f} ms | {float(f[5]):.2f} | {f[6]} | {cud} | {ratio} |")
