"""cuBLAS SGEMM kernel-only time (torch.profiler device time, TF32 off) for XgemmDirect's shapes,
comparable with OpenCL profiling-event times."""
import torch
from torch.profiler import profile, ProfilerActivity

torch.backends.cuda.matmul.allow_tf32 = False
for m, n, k in [(20, 576, 1), (20, 576, 25), (50, 64, 1), (10, 500, 64), (1024, 1024, 1024), (4096, 4096, 4096)]:
    a, b, c = (torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda"), torch.randn(m, n, device="cuda"))
    for _ in range(5):
        torch.addmm(c, a, b, beta=-0.5, alpha=1.5, out=c)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(20):
            torch.addmm(c, a, b, beta=-0.5, alpha=1.5, out=c)
        torch.cuda.synchronize()
    ev = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    per_call = sum(e.device_time for e in ev) / 20
    names = sorted({e.name[:60] for e in ev})
    print(f"CUBLAS_KERNEL\t{m}x{k}*{k}x{n}\t{per_call:.3f} us\t{2*m*n*k/per_call/1e6:.3f} TFLOP/s\t{names}")
