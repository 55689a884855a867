"""cuDNN's forward convolution, through PyTorch, for the layers of examples/dnn_conv.rs,
timed as tune times its kernel: CUDA events around back-to-back calls on one stream,
warm-ups first, the median of the samples. TF32 off (fp32 FFMA, as the tuned kernel);
cudnn.benchmark on, so cuDNN picks its fastest algorithm for each shape first.

    python3 benches/gpu/cudnn_conv.py alexnet vgg16 alexnet-bwd-data alexnet-bwd-filter copy > cudnn.tsv
    python3 benches/gpu/cudnn_conv.py vgg16:conv1_1 copy fill   # one layer, both bandwidths

Prints one `CUDNN<TAB>net<TAB>layer<TAB>ms<TAB>TFLOP/s` line per layer. `NET-bwd-data`:
cuDNN's backward-data (the input's gradient, torch.nn.grad.conv2d_input) of NET's
stride-1 layers, which examples/dnn_conv.rs `--pass backward-data` tunes;
`NET-bwd-filter`: cuDNN's backward-filter (the filters' gradient,
torch.nn.grad.conv2d_weight) of every layer of NET. `copy`: the device's copy bandwidth
(a device-to-device copy of VGG16 conv1_1's 1.64 GB output, read and written), one
`COPY<TAB>bytes<TAB>ms<TAB>GB/s` line, for the memory roofline of the layers that move
more bytes than they compute. `fill`: the device's write bandwidth (VGG16 conv1_1's output
overwritten with zeros, only written), one `FILL<TAB>bytes<TAB>ms<TAB>GB/s` line: conv1_1
writes 1.64 GB and reads 77 MB. `NET:LAYER,LAYER`: only those layers of NET.
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.grad import conv2d_input, conv2d_weight

# (name, C, H=W, K, R=S, stride, pad) at batch 128: examples/common/cases/dnn_conv.rs.
NETS = {
    "alexnet": [
        ("L1", 3, 224, 64, 11, 4, 2),
        ("L2", 64, 27, 192, 5, 1, 2),
        ("L3", 192, 13, 384, 3, 1, 1),
        ("L4", 384, 13, 256, 3, 1, 1),
        ("L5", 256, 13, 256, 3, 1, 1),
    ],
    "vgg16": [
        ("conv1_1", 3, 224, 64, 3, 1, 1),
        ("conv1_2", 64, 224, 64, 3, 1, 1),
        ("conv2_1", 64, 112, 128, 3, 1, 1),
        ("conv2_2", 128, 112, 128, 3, 1, 1),
        ("conv3_1", 128, 56, 256, 3, 1, 1),
        ("conv3_2", 256, 56, 256, 3, 1, 1),
        ("conv4_1", 256, 28, 512, 3, 1, 1),
        ("conv4_2", 512, 28, 512, 3, 1, 1),
        ("conv5_1", 512, 14, 512, 3, 1, 1),
    ],
}


def time_call(call, samples=7, per_sample=10):
    """The median over `samples` of CUDA events around `per_sample` back-to-back calls, ms."""
    for _ in range(3):  # warm-up, and cuDNN's algorithm search
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(samples):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(per_sample):
            call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per_sample)
    times.sort()
    return times[len(times) // 2]


def time_layer(c, hw, k, rs, stride, pad, bwd=None, batch=128, samples=7, per_sample=10):
    p = (hw + 2 * pad - rs) // stride + 1
    x = torch.randn(batch, c, hw, hw, device="cuda")
    w = torch.randn(k, c, rs, rs, device="cuda")
    dy = torch.randn(batch, k, p, p, device="cuda") if bwd else None
    if bwd == "data":
        call = lambda: conv2d_input(x.shape, w, dy, stride=stride, padding=pad)
    elif bwd == "filter":
        call = lambda: conv2d_weight(x, w.shape, dy, stride=stride, padding=pad)
    else:
        call = lambda: F.conv2d(x, w, stride=stride, padding=pad)
    flops = 2.0 * k * batch * p * p * c * rs * rs
    ms = time_call(call, samples, per_sample)
    return ms, flops / (ms * 1e-3) / 1e12


def copy_bandwidth():
    """Bytes read and written by a device-to-device copy of VGG16 conv1_1's output, ms, GB/s."""
    n = 128 * 64 * 224 * 224
    src, dst = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    ms = time_call(lambda: dst.copy_(src), samples=7, per_sample=5)
    moved = 2.0 * n * 4
    return moved, ms, moved / (ms * 1e-3) / 1e9


def fill_bandwidth():
    """Bytes written by zeroing VGG16 conv1_1's output, ms, GB/s."""
    n = 128 * 64 * 224 * 224
    dst = torch.empty(n, device="cuda")
    ms = time_call(lambda: dst.zero_(), samples=7, per_sample=5)
    moved = 1.0 * n * 4
    return moved, ms, moved / (ms * 1e-3) / 1e9


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__} cudnn {torch.backends.cudnn.version()}",
          file=sys.stderr)
    for net in sys.argv[1:] or ["alexnet"]:
        if net == "copy":
            moved, ms, gbs = copy_bandwidth()
            print(f"COPY\t{moved:.0f}\t{ms:.6f}\t{gbs:.1f}", flush=True)
            continue
        if net == "fill":
            moved, ms, gbs = fill_bandwidth()
            print(f"FILL\t{moved:.0f}\t{ms:.6f}\t{gbs:.1f}", flush=True)
            continue
        net, _, only = net.partition(":")
        base, _, bwd = net.partition("-bwd-")
        for name, *shape in NETS[base]:
            if only and name not in only.split(","):
                continue
            if bwd == "data" and shape[4] != 1:
                continue  # strided: a transposed convolution, not tuned here
            ms, tflops = time_layer(*shape, bwd=bwd or None)
            print(f"CUDNN\t{net}\t{name}\t{ms:.6f}\t{tflops:.3f}", flush=True)


if __name__ == "__main__":
    main()
