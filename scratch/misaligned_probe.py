"""Isolates the CUDA 'misaligned address' seen in a full GPU run of tests/dsl: the seed-0 random
config of row_max_and_softmax_sum (tests/dsl/test_peeled_loops.py), its config space bound first at
each of the test's shapes, run on each shape; one process per run (the error poisons the context)."""
import json, subprocess, sys
sys.path.insert(0, ".")
SHAPES = [(3, 64), (5, 100), (2, 7), (4, 300)]
CHILD = r'''
import sys, json, torch
sys.path.insert(0, ".")
from tests.dsl.test_peeled_loops import row_max_and_softmax_sum
from tests.dsl._harness import RANDOM_MAX_TILES
first, shape = json.loads(sys.argv[1]), json.loads(sys.argv[2])
b = row_max_and_softmax_sum.bind((torch.randn(*first, device="cuda"),))
cfg = b.config_spec.random_config(0, max_tiles=RANDOM_MAX_TILES)
x = torch.randn(*shape, device="cuda") - 3.0
out = b.compile_config(cfg)(x)
torch.cuda.synchronize()
ok = torch.allclose(out.double().cpu(), torch.logsumexp(x.double(), 1).cpu(), atol=1e-4)
print(("ok " if ok else "WRONG ") + json.dumps(dict(cfg)))
'''
for first in SHAPES:
    for shape in SHAPES:
        r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(first), json.dumps(shape)], capture_output=True, text=True)
        tail = (r.stdout.strip().splitlines() or [""])[-1][:60] if r.returncode == 0 else (r.stderr.strip().splitlines() or ["?"])[-1][:150]
        print(f"bound {first} run {shape}: {tail}", flush=True)
