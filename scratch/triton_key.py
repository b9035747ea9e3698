"""Prints what Triton's on-disk cache keys start with in this Python: the sha256 of `triton_key()`
(Triton's version and the hashes of its compiler, backends, language and libtriton), the CUDA
backend's hash for sm_90 (the bundled ptxas version), and the cache-invalidating environment
variables set. Where two machines print the same, a cache one fills is a cache the other hits.
  python3 scratch/triton_key.py [--full FILE]   (--full also writes triton_key() itself to FILE)"""
import hashlib
import json
import sys

from triton._C.libtriton import get_cache_invalidating_env_vars
from triton.backends.compiler import GPUTarget
from triton.compiler import make_backend
from triton.runtime.cache import triton_key

key = triton_key()
print(json.dumps({"triton_key_sha256": hashlib.sha256(key.encode()).hexdigest(),
                  "sm_90_backend_sha256": hashlib.sha256(make_backend(GPUTarget("cuda", 90, 32)).hash().encode()).hexdigest(),
                  "env": get_cache_invalidating_env_vars(), "python": sys.version.split()[0]}))
if sys.argv[1:2] == ["--full"]:
    with open(sys.argv[2], "w") as f:
        f.write(key)
