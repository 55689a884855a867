"""cuBLAS SGEMM (TF32 off) and a device-to-device copy, timed with CUDA events, on the shapes
of the OpenCL GEMM case studies. Prints one line per shape: M N K, median ms, TFLOP/s."""
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")
print("device:", torch.cuda.get_device_name(0))


def timed(fn, reps=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


# (M, N, K): GEMM 4096^3, XgemmDirect IS1-IS4 and 1024^3.
for m, n, k in [(4096, 4096, 4096), (20, 576, 1), (20, 576, 25), (50, 64, 1), (10, 500, 64), (1024, 1024, 1024)]:
    a = torch.randn(m, k, device=dev)
    b = torch.randn(k, n, device=dev)
    c = torch.randn(m, n, device=dev)
    ms = timed(lambda: torch.addmm(c, a, b, beta=-0.5, alpha=1.5, out=c))
    print(f"CUBLAS\t{m}x{k}*{k}x{n}\t{ms * 1e3:.3f} us\t{2 * m * n * k / ms / 1e9:.3f} TFLOP/s")

x = torch.empty(256 << 20, device=dev)  # 1 GiB
y = torch.empty_like(x)
ms = timed(lambda: y.copy_(x), reps=10, warm=3)
print(f"COPY\t{2 * x.numel() * 4 / ms / 1e9:.1f} GB/s (read + write, 1 GiB device-to-device)")
