"""How fast a launcher compiled against libtorch could be. A C++ function (pybind11,
built here with g++ against torch's headers and libraries) allocates the softmax output with
at::empty_like and launches the generated softmax 1x4096 kernel with cuLaunchKernel, its argument
layout taken from the native launch's descriptor (checked). Timed against eager torch.softmax,
hk.softmax, the generated launcher (native launch) and torch.cuda._sleep(1): medians of 15
alternating rounds of 1000 calls.
`python tools/cpp_launch_probe.py` (GPU; needs g++ and the torch wheel's headers; notes/decode_host_time_h200.md)."""
import importlib.util
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

import torch
import torch.utils.cpp_extension as ext

SRC = r'''
#include <torch/extension.h>
#include <dlfcn.h>
typedef int (*Launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *, void **, void **);
static Launch launch_fn = nullptr;

// softmax_fwd 1xN bf16: params (x, x_stride_0, n, out, out_stride_0) + two scratch pointers
at::Tensor softmax_rows(const at::Tensor &x, uint64_t function, int64_t block, int64_t shared, uint64_t stream) {
  if (launch_fn == nullptr)
    launch_fn = (Launch)dlsym(dlopen("libcuda.so.1", RTLD_NOW), "cuLaunchKernel");
  at::Tensor out = at::empty_like(x);
  uint64_t xp = (uint64_t)x.data_ptr(), op = (uint64_t)out.data_ptr(), zero = 0;
  int32_t xs0 = (int32_t)x.stride(0), n = (int32_t)x.size(1), os0 = (int32_t)out.stride(0);
  void *params[] = {&xp, &xs0, &n, &op, &os0, &zero, &zero};
  int status = launch_fn((void *)function, (unsigned)x.size(0), 1, 1, (unsigned)block, 1, 1, (unsigned)shared,
                         (void *)stream, params, nullptr);
  TORCH_CHECK(status == 0, "cuLaunchKernel failed: ", status);
  return out;
}

PYBIND11_MODULE(hk_cpp_probe, m) { m.def("softmax_rows", &softmax_rows); }
'''


def build():
    tmp = tempfile.mkdtemp()
    src = os.path.join(tmp, "probe.cpp")
    open(src, "w").write(SRC)
    so = os.path.join(tmp, "hk_cpp_probe" + sysconfig.get_config_var("EXT_SUFFIX"))
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    cmd = ["g++", "-O2", "-shared", "-fPIC", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", src, "-o", so,
           f"-I{sysconfig.get_paths()['include']}"]
    cmd += [f"-I{p}" for p in ext.include_paths()] + [f"-L{p}" for p in ext.library_paths()]
    cmd += ["-ltorch", "-ltorch_cpu", "-lc10", "-ltorch_python", "-ldl"]
    cmd += [f"-Wl,-rpath,{p}" for p in ext.library_paths()]
    subprocess.check_call(cmd)
    spec = importlib.util.spec_from_file_location("hk_cpp_probe", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main():
    t0 = time.time()
    mod = build()
    print(f"built in {time.time() - t0:.1f} s", flush=True)
    if not torch.cuda.is_available():
        return
    sys.path.insert(0, os.getcwd())
    import helion_kernels as hk
    from benchmarks.timing import Timer
    from helion_kernels._dispatch import DISPATCHER
    from helion_kernels._generated import softmax as gs
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16) * 4
    dec = DISPATCHER.select("softmax_fwd", x.device, x.dtype, ("M", "N"), (1, 4096))
    fn = getattr(gs, f"softmax_fwd__{dec.variant}")
    fn(x, x.dtype)
    fn(x, x.dtype)
    entries = [e for _, launches in gs._LAUNCHES.values() if launches for e in launches.values() if e.__class__ is bytes]
    (desc,) = entries
    function = int.from_bytes(desc[:8], "little")
    block = int.from_bytes(desc[8:12], "little")
    shared = int.from_bytes(desc[12:16], "little")
    codes = desc[20:].decode()
    print("descriptor codes", codes, "block", block, "shared", shared, flush=True)
    assert codes == "cp4c4p4ccc", codes
    stream = lambda: torch._C._cuda_getCurrentRawStream(0)
    out = mod.softmax_rows(x, function, block, shared, stream())
    torch.cuda.synchronize()
    print("max err vs float64", (out.double() - torch.softmax(x.double(), -1)).abs().max().item(), flush=True)
    timer = Timer(torch.device("cuda"))
    fns = {"eager torch.softmax": lambda: torch.softmax(x, -1),
           "torch.cuda._sleep(1)": lambda: torch.cuda._sleep(1),
           "hk.softmax": lambda: hk.softmax(x, -1),
           "generated launcher (native launch)": lambda: fn(x, x.dtype),
           "C++ launcher (stream from Python)": lambda: mod.softmax_rows(x, function, block, shared, stream()),
           "torch._C._cuda_getCurrentRawStream": stream}
    rounds = timer.host_rounds(fns, rounds=15)
    for name, values in rounds.items():
        print(f"{name:38s} {statistics.median(values):7.2f} us/call", flush=True)


if __name__ == "__main__":
    main()
