"""Derives valid_configs.json: for each T1 file here, the count and SHA-256 of its valid
configurations (Kernel Tuner cache keys, sorted, newline-joined), checked against the
brute-force caches in shared/data/tuning-caches. Usage: python3 derive.py [SHARED_DATA_DIR]"""
import gzip, hashlib, itertools, json, os, sys

here = os.path.dirname(os.path.abspath(__file__))
# shared/ lies beside the repository (or beside the folder of worktrees).
candidates = [os.path.join(here, "../" * k + "shared/data") for k in (5, 6)]
data = sys.argv[1] if len(sys.argv) > 1 else next((c for c in candidates if os.path.isdir(c)), candidates[0])
caches = os.path.join(data, "tuning-caches/benchmark_hub")


spaces = {}


def space(t1):
    if t1 not in spaces:
        spaces[t1] = build(t1)
    return spaces[t1]


def build(t1):
    d = json.load(open(os.path.join(here, t1)))
    ps = d["ConfigurationSpace"]["TuningParameters"]
    names = [p["Name"] for p in ps]
    values = [eval(p["Values"]) for p in ps]
    conds = [compile(c["Expression"], "<condition>", "eval") for c in d["ConfigurationSpace"]["Conditions"]]
    valid = []
    for combo in itertools.product(*values):
        env = dict(zip(names, combo))
        if all(eval(c, {}, env) for c in conds):
            valid.append(combo)
    return names, valid


def key(combo):
    return ",".join(str(v) for v in combo)


def cache_keys(path):
    c = json.load(gzip.open(os.path.join(caches, path)))
    return c, set(c["cache"].keys())


out = {}
for t1 in ["convolution_milo.json", "dedispersion_milo.json", "gemm_milo.json"]:
    names, valid = space(t1)
    keys = sorted(key(c) for c in valid)
    out[t1] = {
        "count": len(keys),
        "sha256": hashlib.sha256("\n".join(keys).encode()).hexdigest(),
    }
    print(t1, len(keys))

for cache in ["convolution_milo/A100.json.gz", "convolution_milo/A4000.json.gz"]:
    c, k = cache_keys(cache)
    names, valid = space("convolution_milo.json")
    assert c["tune_params_keys"] == names
    assert k == set(key(v) for v in valid), cache
c, k = cache_keys("dedispersion_milo/A100.json.gz")
names, valid = space("dedispersion_milo.json")
assert c["tune_params_keys"] == names
assert k == set(key(v) for v in valid)
# gemm: the cache is an older variant of the space (see README.md).
c, k = cache_keys("legacy/gemm/RTX_2080_Ti.json.gz")
names, valid = space("gemm_milo.json")
tp = c["tune_params"]
restricted = set()
for v in valid:
    env = dict(zip(names, v))
    if all(env[n] in tp[n] for n in c["tune_params_keys"]):
        restricted.add(",".join(str(env[n]) for n in c["tune_params_keys"]))
extra = {key_ for key_, e in c["cache"].items()
         if e["MWG"] == 128 and e["NWG"] == 128 and e["MDIMC"] == 8 and e["NDIMC"] == 8}
assert restricted == k - extra and len(extra) == 484, (len(restricted), len(k), len(extra))

with open(os.path.join(here, "valid_configs.json"), "w") as f:
    json.dump(out, f, indent=2, sort_keys=True)
    f.write("\n")
print("checked against the caches; wrote valid_configs.json")
