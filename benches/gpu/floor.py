"""Kernel-only device time (torch.profiler, CUPTI) of a trivial kernel: the floor that a
profiler reports for a launch that does almost nothing, to compare with OpenCL's."""
import torch
from torch.profiler import profile, ProfilerActivity

x = torch.zeros(1024, device="cuda")
for _ in range(10):
    x.add_(1.0)
torch.cuda.synchronize()
with profile(activities=[ProfilerActivity.CUDA]) as p:
    for _ in range(50):
        x.add_(1.0)
    torch.cuda.synchronize()
ev = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
print(f"TRIVIAL_KERNEL\t{sum(e.device_time for e in ev) / 50:.3f} us per launch (CUPTI)")
