"""The instruction mix of the DNN convolution kernel (kernels/dnn_conv/) as NVRTC compiles
it, for the tuned configurations of a tuning log: what share of the instructions are FFMA,
shared-memory and global loads and stores, and the rest (address arithmetic, predicates,
moves), over the whole kernel (its main loop dominates: the k loop is unrolled BK times).

    python3 bench/beast/sass_mix.py LOG [--arch sm_90] [--baseline]

LOG holds examples/dnn_conv.rs `LAYER` lines (layer shape and best configuration).
`--baseline` also compiles, per layer, the same tiles with VA=1 VB=1 I32=0 PRE=0 (the
kernel as it was before those parameters). Uses NVRTC through CuPy; SASS where `cuobjdump`
or `nvdisasm` is found (CUDA's bin folders), else PTX only. Prints one `MIX` line per
kernel: layer, variant, registers if known, instructions, FFMA (or fma.rn.f32) share,
and the counts by class.
"""
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def nvrtc_module():
    try:
        from cupy_backends.cuda.libs import nvrtc
    except ImportError:
        from cupy.cuda import nvrtc
    return nvrtc


def layer_defines(shape):
    d = dict(kv.split("=") for kv in shape.split(","))
    n, c, h, w, k, r, s = (int(d[x]) for x in "n c h w k r s".split())
    u, v, ph, pw = int(d["u"]), int(d["v"]), int(d["ph"]), int(d["pw"])
    p = (h + 2 * ph - r) // u + 1
    q = (w + 2 * pw - s) // v + 1
    return dict(NB=n, C=c, H=h, W=w, KO=k, R=r, S=s, SU=u, SV=v, PH=ph, PW=pw, P=p, Q=q)


def compile_kernel(defines, arch):
    nvrtc = nvrtc_module()
    src = open(os.path.join(ROOT, "kernels/dnn_conv/prelude.cu")).read() + open(
        os.path.join(ROOT, "kernels/dnn_conv/body.c")
    ).read()
    prog = nvrtc.createProgram(src, "dnn_conv.cu", [], [])
    opts = [f"--gpu-architecture={arch}", "-default-device", "--ptxas-options=-v"]
    opts += [f"-D{k}={v}" for k, v in defines.items()]
    try:
        nvrtc.compileProgram(prog, opts)
    except Exception as e:  # the log says why
        raise RuntimeError(f"{e}: {nvrtc.getProgramLog(prog)}")
    log = nvrtc.getProgramLog(prog)
    ptx = nvrtc.getPTX(prog)
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    cubin = nvrtc.getCUBIN(prog) if hasattr(nvrtc, "getCUBIN") else None
    return log, ptx, cubin


def tool():
    for name in ("cuobjdump", "nvdisasm"):
        found = shutil.which(name) or next(iter(glob.glob(f"/usr/local/cuda*/bin/{name}")), None)
        if found:
            return name, found
    return None, None


def sass_of(cubin):
    name, path = tool()
    if not name or cubin is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
    args = [path, "-sass", f.name] if name == "cuobjdump" else [path, f.name]
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=60).stdout
    finally:
        os.unlink(f.name)


def classify_sass(text):
    counts = collections.Counter()
    in_kernel = False
    for line in text.splitlines():
        if "Function : dnn_conv" in line or line.strip().startswith(".text.dnn_conv"):
            in_kernel = "reference" not in line
            continue
        if "Function :" in line:
            in_kernel = False
        m = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)", line)
        if not (in_kernel and m):
            continue
        op = m.group(1)
        cls = {
            "FFMA": "ffma",
            "LDS": "lds",
            "LDG": "ldg",
            "STS": "sts",
            "STG": "stg",
            "BAR": "bar",
        }.get(op, "other")
        counts[cls] += 1
        counts["all"] += 1
    return counts


def classify_ptx(text):
    counts = collections.Counter()
    body = text.split(".entry dnn_conv(")[1].split(".entry")[0] if ".entry dnn_conv(" in text else text
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith(("//", ".", "{", "}", "$")) or line.endswith(":"):
            continue
        op = line.split()[0].lstrip("@!%p0123456789 ")
        if op.startswith("fma.rn.f32"):
            cls = "ffma"
        elif op.startswith("ld.shared"):
            cls = "lds"
        elif op.startswith(("ld.global", "ldg")):
            cls = "ldg"
        elif op.startswith("st.shared"):
            cls = "sts"
        elif op.startswith("st.global"):
            cls = "stg"
        elif op.startswith("bar"):
            cls = "bar"
        else:
            cls = "other"
        counts[cls] += 1
        counts["all"] += 1
    return counts


def main():
    args = sys.argv[1:]
    arch = "sm_90"
    if "--arch" in args:
        arch = args[args.index("--arch") + 1]
    baseline = "--baseline" in args
    logs = [a for a in args if os.path.isfile(a)]
    print(f"# SASS via {tool()[0] or 'none found: PTX only'}; arch {arch}")
    for log in logs:
        for line in open(log):
            if not line.startswith("LAYER\t"):
                continue
            f = line.rstrip("\n").split("\t")
            net, name, shape, config = f[1], f[2], f[3], f[7]
            best = dict(kv.split("=") for kv in config.split())
            variants = [("tuned", best)]
            if baseline:
                variants.append(("before", {**best, "VA": "1", "VB": "1", "I32": "0", "PRE": "0"}))
            for label, cfg in variants:
                defines = {**layer_defines(shape), **cfg}
                try:
                    clog, ptx, cubin = compile_kernel(defines, arch)
                except Exception as e:
                    print(f"MIX\t{net}\t{name}\t{label}\tcompile failed: {e}")
                    continue
                regs = re.search(r"Function properties for dnn_conv\b.*?Used (\d+) registers", clog, re.S)
                sass = sass_of(cubin)
                counts, kind = (classify_sass(sass), "sass") if sass else (classify_ptx(ptx), "ptx")
                total = max(counts["all"], 1)
                print(
                    f"MIX\t{net}\t{name}\t{label}\t{kind}\tregs={regs.group(1) if regs else '?'}"
                    f"\tinstructions={counts['all']}\tffma={100 * counts['ffma'] / total:.1f}%"
                    f"\tlds={counts['lds']}\tldg={counts['ldg']}\tsts={counts['sts']}"
                    f"\tstg={counts['stg']}\tother={counts['other']}\t{config}"
                )


if __name__ == "__main__":
    main()
