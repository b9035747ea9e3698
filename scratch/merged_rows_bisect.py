"""Probe: which merged-row descriptor of a random attention-backward config (tests/kernels random
config 23 at B1 H6 Hkv3 Sq777 Sk555 D64 fp32) hits CUDA's illegal instruction on an H100. Each run
keeps one of the config's descriptor sites (the others through pointers) and runs in its own
process, as the error poisons the CUDA context. Run: python3 scratch/merged_rows_bisect.py CONFIG.json"""
import json, subprocess, sys

CHILD = r"""
import json, sys, torch
sys.path.insert(0, '.')
from kernels_src import attention
from build_tools.dsl.config import Config
config = json.loads(sys.argv[1])
shape = {'B': 1, 'H': 6, 'Hkv': 3, 'Sq': 777, 'Sk': 555, 'D': 64, 'causal': False, 'scale': 0.3}
args = attention.make_bwd_inputs(shape, torch.float32, 'cuda', seed=205)
kernel = attention.attention_bwd
kernel.reset()
outs = kernel.bind(args).compile_config(Config(config))(*args)
torch.cuda.synchronize()
ref = attention.reference_bwd(*args)
print('max err', max((o.double() - r.to(o.device).double()).abs().max().item() for o, r in zip(outs, ref)))
"""


def main():
    config = json.load(open(sys.argv[1]))
    sites = [i for i, s in enumerate(config["indexing"]) if s == "tensor_descriptor"]
    runs = {"all": config["indexing"]}
    runs.update({f"only site {i}": [s if j == i else ("pointer" if s == "tensor_descriptor" else s)
                                    for j, s in enumerate(config["indexing"])] for i in sites})
    runs["none"] = ["pointer" if s == "tensor_descriptor" else s for s in config["indexing"]]
    for label, indexing in runs.items():
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps({**config, "indexing": indexing})],
                              capture_output=True, text=True, timeout=120)
        tail = (proc.stdout + proc.stderr).strip().splitlines()
        print(label, "|", next((l for l in reversed(tail) if "max err" in l or "Error" in l), tail[-1] if tail else ""), flush=True)


if __name__ == "__main__":
    main()
