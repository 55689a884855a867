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
    crsp = -(-(c * r * s) // 32) * 32  # the filters' rows padded to a multiple of every BK
    return dict(NB=n, C=c, H=h, W=w, KO=k, R=r, S=s, SU=u, SV=v, PH=ph, PW=pw, P=p, Q=q, CRSP=crsp)


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


WHY_NO_SASS = []


def sass_of(cubin):
    """The disassembly of `cubin`, or None (the reason kept in WHY_NO_SASS)."""
    name, path = tool()
    if not name or not cubin:
        WHY_NO_SASS.append(f"tool {name}, cubin {'empty' if not cubin else len(cubin)}")
        return None
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin if isinstance(cubin, bytes) else cubin.encode("latin-1"))
    args = [path, "-sass", f.name] if name == "cuobjdump" else [path, f.name]
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=60)
        if not r.stdout.strip():
            WHY_NO_SASS.append(f"{name}: rc {r.returncode}: {r.stderr.strip()[:300]}")
            return None
        return r.stdout
    finally:
        os.unlink(f.name)


def main_loop(ops):
    """The loop with the most FFMA among `ops` ([(label or None, op, branch target or None)]),
    a loop being the instructions from a branch's earlier target to the branch; or all."""
    where = {lab: i for i, (lab, _, _) in enumerate(ops) if lab is not None}
    best = None
    for i, (_, _, target) in enumerate(ops):
        j = where.get(target)
        if j is not None and j <= i:
            n = sum(1 for _, op, _ in ops[j : i + 1] if op == "ffma")
            if best is None or n > best[0]:
                best = (n, j, i)
    return ops if best is None else ops[best[1] : best[2] + 1]


def counted(ops):
    counts = collections.Counter(op for _, op, _ in ops)
    counts["all"] = len(ops)
    return counts


def sass_ops(text):
    ops = []
    in_kernel = False
    for line in text.splitlines():
        if "Function : " in line:
            in_kernel = line.strip().endswith("dnn_conv")
            continue
        m = re.match(
            r"\s*/\*([0-9a-f]{4,})\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)([^;]*)", line
        )
        if not (in_kernel and m):
            continue
        addr, op, rest = int(m.group(1), 16), m.group(2), m.group(3)
        t = re.search(r"BRA\s+(?:\S+,\s*)?`?\(?\.?L?_?x?_?(?:0x)?([0-9a-f]+)", op + rest)
        target = int(t.group(1), 16) if (op == "BRA" and t) else None
        cls = {"FFMA": "ffma", "LDS": "lds", "LDG": "ldg", "STS": "sts", "STG": "stg"}.get(op, "other")
        ops.append((addr, cls, target))
    return ops


def ptx_ops(text):
    ops = []
    body = text.split(".entry dnn_conv(")[1].split(".entry")[0] if ".entry dnn_conv(" in text else text
    label = None
    for line in body.splitlines():
        line = line.strip()
        if line.endswith(":") and line.startswith("$"):
            label = line[:-1]
            continue
        if not line or line.startswith(("//", ".", "{", "}", "(", ")")):
            continue
        op = line.split()[0]
        if op.startswith("@"):
            op = line.split()[1]
        cls = ptx_class(op)
        if cls == "bar":
            cls = "other"
        t = re.search(r"bra(?:\.uni)?\s+(\$\w+)", line)
        ops.append((label, cls, t.group(1) if t else None))
        label = None
    return ops


def ptx_class(op):
    """The class of a PTX instruction: ffma, lds, ldg, sts, stg, bar or other."""
    for prefix, cls in (
        ("fma.rn.f32", "ffma"),
        ("ld.shared", "lds"),
        ("ld.global", "ldg"),
        ("ldg", "ldg"),
        ("st.shared", "sts"),
        ("st.global", "stg"),
        ("bar", "bar"),
    ):
        if op.startswith(prefix):
            return cls
    return "other"


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
        cls = ptx_class(op)
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
    done = set()
    for log in logs:
        for line in open(log):
            if not line.startswith("LAYER\t"):
                continue
            f = line.rstrip("\n").split("\t")
            net, name, shape, config = f[1], f[2], f[3], f[7]
            # Each layer's LAYER line comes twice (as it finishes, and in the final table).
            if (net, name) in done:
                continue
            done.add((net, name))
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
                ops = sass_ops(sass) if sass else ptx_ops(ptx)
                loop = counted(main_loop(ops))
                total = max(counts["all"], 1)
                print(
                    f"MIX\t{net}\t{name}\t{label}\t{kind}\tregs={regs.group(1) if regs else '?'}"
                    f"\tinstructions={counts['all']}\tffma={100 * counts['ffma'] / total:.1f}%"
                    f"\tlds={counts['lds']}\tldg={counts['ldg']}\tsts={counts['sts']}"
                    f"\tstg={counts['stg']}\tother={counts['other']}"
                    f"\tloop: instructions={loop['all']}"
                    f" ffma={100 * loop['ffma'] / max(loop['all'], 1):.1f}%"
                    f" lds={loop['lds']} ldg={loop['ldg']} sts={loop['sts']} other={loop['other']}"
                    f"\t{' '.join(f'{k}={v}' for k, v in cfg.items())}"
                )
    if WHY_NO_SASS:
        print(f"# no SASS ({len(WHY_NO_SASS)} kernels), first reason: {WHY_NO_SASS[0]}")


if __name__ == "__main__":
    main()
