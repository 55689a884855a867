"""cuBLAS SGEMM (TF32 off) on XgemmDirect's shapes, timed like tune's back-to-back samples:
64 calls of C = alpha * A * B + beta * C back to back between two CUDA events, divided by 64
(median of 20 such samples). The 64 calls are captured in a CUDA graph and replayed, so the
host's per-call overhead (Python, PyTorch) does not leave the GPU idle between them: the gaps
between kernels are the smallest a stream of cuBLAS calls can have, which favours cuBLAS.
Also prints the kernel-only device time (CUPTI, torch.profiler) of one call for reference."""
import statistics

import torch
from torch.profiler import profile, ProfilerActivity

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
REPS, SAMPLES = 64, 20
SHAPES = [("IS1", 20, 576, 1), ("IS2", 20, 576, 25), ("IS3", 50, 64, 1), ("IS4", 10, 500, 64)]

for label, m, n, k in SHAPES:
    a, b, c = (torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda"), torch.randn(m, n, device="cuda"))
    for _ in range(10):
        torch.addmm(c, a, b, beta=-0.5, alpha=1.5, out=c)
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            torch.addmm(c, a, b, beta=-0.5, alpha=1.5, out=c)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(REPS):
            torch.addmm(c, a, b, beta=-0.5, alpha=1.5, out=c)
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    samples = []
    for _ in range(SAMPLES):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        g.replay()
        e.record()
        e.synchronize()
        samples.append(s.elapsed_time(e) * 1e3 / REPS)
    b2b = statistics.median(samples)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(20):
            torch.addmm(c, a, b, beta=-0.5, alpha=1.5, out=c)
        torch.cuda.synchronize()
    ev = [x for x in p.events() if x.device_type == torch.autograd.DeviceType.CUDA]
    kernel_only = sum(x.device_time for x in ev) / 20
    print(f"CUBLAS_B2B\t{label}\t{m}x{k}*{k}x{n}\t{b2b:.3f} us per call back to back (graph of {REPS})\t{kernel_only:.3f} us kernel only (CUPTI)")
