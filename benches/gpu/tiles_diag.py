"""Where the implicit GEMM with several pixel tiles per work-group (TILES) and channels
innermost (KORDER 1) goes wrong through NVRTC (issue 15; sessions 7-8 fenced it off the
space, unexplained): compiles kernels/dnn_conv/ as tune does (NVRTC, the device's sm_XX,
-lineinfo, every parameter a -D), runs it on tests/case_studies/dnn_conv.rs's 4-channel
layer (short_c4s1) with CuPy, and compares it with a float64 convolution on the host, per
output tile: the relative error, and how many outputs are exactly zero. Then the same
with one thing changed at a time (TILES 1, KORDER 0, DB 0, plain loads for __ldg, ptxas
-O0), so that the cause is narrowed on the GPU. Session 9's call u on an H100: wrong (0.69)
with __ldg in the gather, right with plain loads or -G, wrong with ptxas -O0; since then
body.c's gather uses plain loads with TILES over 1 (TILE_PLAIN_LOADS), and the second
variant restores __ldg: the failure before the fix, beside the fixed kernel.

    python3 benches/gpu/tiles_diag.py        # one DIAG line per variant

Prints `DIAG<TAB>variant<TAB>rel error<TAB>per tile: error/zeros ...`.
"""
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# short_c4s1 (tests/case_studies/dnn_conv.rs): batch 2, 4 -> 16 channels, 12 x 18, 5 x 3.
LAYER = dict(NB=2, C=4, H=12, W=18, KO=16, R=5, S=3, SU=1, SV=1, PH=0, PW=0)
# Combination 4 of dnn_conv_pixel_tiles_are_right, the configuration that failed.
CONFIG = dict(ALGO=0, BM=16, BN=32, BK=4, MDIM=4, NDIM=8, VS=1, DB=1, PADA=0, PADB=0, UNR=0,
              FLAYOUT=1, KORDER=1, VA=1, VB=1, I32=1, PRE=0, SPLITK=1, LCOLS=0, PATCH=0,
              OSTAGE=0, MASK=0, TILES=2, KEXACT=1, STCS=1, DPX=4, DQK=4, DWX=1, DWY=1, DWK=1,
              DWMEM=0, DXMEM=0, DROWS=1, MINB=1)


RUNS = []


def nvrtc_module():
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError:
        from cupy.cuda import nvrtc
    return nvrtc


def source(plain_loads):
    text = "".join(open(os.path.join(ROOT, "kernels/dnn_conv", f)).read()
                   for f in ("prelude.cu", "body.c", "direct.c"))
    if plain_loads:
        text = text.replace("#define LDG(p) __ldg(p)", "#define LDG(p) (*(p))")
    return text


def compile_cubin(defines, arch, extra, plain_loads):
    nvrtc = nvrtc_module()
    prog = nvrtc.createProgram(source(plain_loads), "dnn_conv.cu", [], [])
    opts = [f"--gpu-architecture={arch}"] + [f"-D{k}={v}" for k, v in defines.items()]
    opts += ["-lineinfo"] + extra
    try:
        nvrtc.compileProgram(prog, opts)
    except Exception as e:
        raise RuntimeError(f"{e}: {nvrtc.getProgramLog(prog)}")
    return nvrtc.getCUBIN(prog)


def layouts(w, l):
    """The filters as the spec prepares them: KCRS unpadded, then KCRS, CRSK, KRSC and RSCK
    with the reduction padded by zeros to CRSP."""
    ko, crs, crsp = l["KO"], l["C"] * l["R"] * l["S"], l["CRSP"]
    kcrs = w.reshape(ko, crs)
    krsc = w.transpose(0, 2, 3, 1).reshape(ko, crs)
    pad = lambda a: np.concatenate([a, np.zeros((ko, crsp - crs), np.float32)], 1)
    kcrs_p, krsc_p = pad(kcrs), pad(krsc)
    return [w.ravel(), kcrs_p.ravel(), kcrs_p.T.copy().ravel(), krsc_p.ravel(),
            krsc_p.T.copy().ravel()]


def host_conv(x, w, l):
    n, c, h, wd = x.shape
    p, q = l["P"], l["Q"]
    xp = np.zeros((n, c, h + 2 * l["PH"], wd + 2 * l["PW"]))
    xp[:, :, l["PH"]:l["PH"] + h, l["PW"]:l["PW"] + wd] = x
    out = np.zeros((n, l["KO"], p, q))
    for r in range(l["R"]):
        for s in range(l["S"]):
            patch = xp[:, :, r:r + p * l["SU"]:l["SU"], s:s + q * l["SV"]:l["SV"]]
            out += np.einsum("nchw,kc->nkhw", patch, w[:, :, r, s].astype(np.float64))
    return out


def run(cp, variant, config, arch, extra=(), plain_loads=False):
    l = dict(LAYER)
    l["P"] = (l["H"] + 2 * l["PH"] - l["R"]) // l["SU"] + 1
    l["Q"] = (l["W"] + 2 * l["PW"] - l["S"]) // l["SV"] + 1
    crs = l["C"] * l["R"] * l["S"]
    l["CRSP"] = -(-crs // 32) * 32
    rng = np.random.default_rng(1)
    x = rng.standard_normal((l["NB"], l["C"], l["H"], l["W"])).astype(np.float32)
    w = rng.standard_normal((l["KO"], l["C"], l["R"], l["S"])).astype(np.float32)
    want = host_conv(x.astype(np.float64), w, l)
    try:
        cubin = compile_cubin({**l, **config}, arch, list(extra), plain_loads)
    except RuntimeError as e:
        print(f"DIAG\t{variant}\tcompile failed: {str(e)[:300]}")
        return
    # A path of its own per variant: CuPy keeps a module loaded from a path (call t on the
    # H100 ran the first variant's kernel for every later one).
    path = os.path.join(tempfile.gettempdir(), f"tiles_diag_{os.getpid()}_{len(RUNS)}.cubin")
    RUNS.append(variant)
    open(path, "wb").write(cubin if isinstance(cubin, bytes) else cubin.encode("latin-1"))
    mod = cp.RawModule(path=path)
    kern = mod.get_function("dnn_conv")
    npq = l["NB"] * l["P"] * l["Q"]
    c = config
    nt = c["MDIM"] * c["NDIM"]
    tiles = -(-npq // c["BN"])
    groups = c["SPLITK"] * (l["KO"] // c["BM"]) * (tiles // c["TILES"])
    out = cp.full(l["KO"] * npq, np.float32(np.nan), dtype=cp.float32)
    bufs = [cp.asarray(x.ravel())] + [cp.asarray(a) for a in layouts(w, l)]
    ws = cp.zeros(1, dtype=cp.float32)
    cnt = cp.zeros(l["KO"] * npq // 256 + 16, dtype=cp.uint32)
    kern((groups,), (nt,), (out, *bufs, ws, cnt), shared_mem=16384)
    cp.cuda.Device().synchronize()
    got = cp.asnumpy(out).reshape(l["NB"], l["KO"], l["P"], l["Q"]).astype(np.float64)
    err = np.linalg.norm(np.nan_to_num(got - want, nan=1e30)) / np.linalg.norm(want)
    # Per output tile of BN consecutive pixels (n*P*Q + p*Q + q): error and zeros or NaN.
    flat_got = got.transpose(1, 0, 2, 3).reshape(l["KO"], npq)
    flat_want = want.transpose(1, 0, 2, 3).reshape(l["KO"], npq)
    per = []
    for t in range(tiles):
        g = flat_got[:, t * c["BN"]:(t + 1) * c["BN"]]
        wv = flat_want[:, t * c["BN"]:(t + 1) * c["BN"]]
        e = np.linalg.norm(np.nan_to_num(g - wv, nan=1e30)) / np.linalg.norm(wv)
        per.append(f"{t}:{e:.2g}/z{int((g == 0).sum())}/n{int(np.isnan(g).sum())}")
    print(f"DIAG\t{variant}\t{err:.3g}\t{' '.join(per)}", flush=True)
    os.unlink(path)


def main():
    import cupy as cp
    arch = f"sm_{cp.cuda.Device().compute_capability}"
    print(f"device {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()} {arch}", flush=True)
    variants = [
        ("TILES 2, KORDER 1 (the failing configuration)", {}, (), False),
        ("the same, the gather's __ldg (TILE_PLAIN_LOADS 0: before the fix)",
         {"TILE_PLAIN_LOADS": 0}, (), False),
        ("TILES 1", {"TILES": 1}, (), False),
        ("STCS 0", {"STCS": 0}, (), False),
        ("DB 0", {"DB": 0}, (), False),
        ("KORDER 0, PRE 0", {"KORDER": 0}, (), False),
        ("KORDER 0, PRE 0, BK 8", {"KORDER": 0, "BK": 8}, (), False),
        ("plain loads for __ldg", {}, (), True),
        ("ptxas -O0", {}, ("--ptxas-options=-O0",), False),
        ("-G (device debug)", {}, ("-G",), False),
        ("NDIM 16 (64 work-items)", {"NDIM": 16}, (), False),
        ("TILES 4", {"TILES": 4}, (), False),
    ]
    for name, change, extra, plain in variants:
        try:
            run(cp, name, {**CONFIG, **change}, arch, extra, plain)
        except Exception as e:  # one variant's failure says so and the next runs
            print(f"DIAG\t{name}\tfailed: {type(e).__name__}: {str(e)[:300]}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
