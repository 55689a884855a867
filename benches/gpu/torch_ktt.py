"""The vendor libraries' side of the KTT bench, timed like tune times a composition (the sum
of the kernels' device times, from torch.profiler): torch.sum of 2^26 non-negative floats
(the same whole numbers 0..3 the reduction sums) and torch.sort of 2^24 random 32-bit keys.
Also CUDA events around each call, for the launch-to-end view. Prints one RESULT line each."""
import torch
from torch.profiler import profile, ProfilerActivity


def kernel_time(fn, calls=20):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    ev = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    names = sorted({e.name[:50] for e in ev})
    return sum(e.device_time for e in ev) / calls, names


def event_time(fn, calls=20):
    times = []
    for _ in range(calls + 3):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    times = sorted(times[3:])
    return times[len(times) // 2]


print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
n = 1 << 26
x = torch.randint(0, 4, (n,), device="cuda", dtype=torch.int32).float()
us, names = kernel_time(lambda: torch.sum(x))
ev = event_time(lambda: torch.sum(x))
print(f"RESULT\ttorch.sum\t{n}\t{us:.2f} us kernels\t{4 * n / us / 1e3:.1f} GB/s\t{ev:.2f} us events\t{names}")

k = 1 << 24
keys = torch.randint(-(1 << 31), (1 << 31) - 1, (k,), device="cuda", dtype=torch.int32)
us, names = kernel_time(lambda: torch.sort(keys))
ev = event_time(lambda: torch.sort(keys))
print(f"RESULT\ttorch.sort\t{k}\t{us:.1f} us kernels\t{k / us / 1e3:.3f} Gkeys/s\t{ev:.1f} us events\t{names}")
