"""The C source of the generated modules' native launch: `SOURCE` is carried into every generated
module as text and compiled on a GPU host at a kernel's first eligible launch (launch_helpers).

`launch(state, kernel, grid, args, constants, num_warps, num_stages)` does, in C, what the Python
`_launch_python` of launch_helpers does on a repeated argument specialization: it builds the same
key (device, options, constexprs, Triton's debug and instrumentation settings, each int's value,
each float as `float`, each tensor's dtype and 16-byte alignment, any other argument as (type,
value)), looks it up in the kernel's dict of launches and launches the entry on the current stream.
An entry is either a launcher tuple `(run, options, function)` (called as the Python path calls
it) or a descriptor `bytes` that this file launches itself with the CUDA driver's cuLaunchKernel:

    <QIII: function handle, threads per block, dynamic shared memory bytes, argument count
    then one type code per argument of `args + constants`:
    c constexpr (not passed)  p pointer  1/2/4/8 an integer of that many bytes
    h fp16  b bf16  f fp32  d fp64

followed, as Triton 3.6 compiles every kernel, by two null scratch pointers. Anything else (an
empty grid aside, which returns at once) goes to `state`'s Python fallback: a new key, a launch
hook or pre-run hook, a tensor not on a CUDA device, no current CUDA context, an argument that
cannot be hashed (a host-built TMA descriptor, which the Python path keys by its specialization), more
than MAX_ARGS arguments. The tensors of a descriptor's launch must be on a CUDA device.

`state` is a tuple: (launches by kernel id, fallback, get_device(), get_stream(device), Triton's
runtime knobs, its compilation knobs, triton.knobs.HookChain, torch.Tensor).

The module also allocates the launchers' `new_empty` outputs without torch's Python argument
parsing: `alloc_init(libtorch_cpu path, libtorch_python path)` resolves, in the libraries torch has
already loaded, libtorch's AOTI C shim (`aoti_torch_empty_strided`, the C ABI that AOTInductor's
generated code allocates through) and `THPVariable_Wrap`, and returns the shim's (dtype name, code)
pairs, or None when a symbol is missing (the caller keeps torch's allocation). Then, with `alloc` the
tuple (torch.Tensor, {torch dtype: code}, torch's own `TensorBase.new_empty`,
`torch._C._is_torch_function_mode_enabled`, fallback new_empty(t, dtype, *sizes)):

    new_empty(alloc, t, dtype, *sizes) == t.new_empty(*sizes, dtype=dtype)

A contiguous tensor on the device of a plain CPU or CUDA tensor, of a dtype the shim names, is
allocated here; anything else goes to the fallback: a tensor subclass, another device, a size that
is not an int or is negative, no size, more than MAX_DIMS dimensions, sizes whose product
overflows, a failed allocation (the fallback raises torch's own error; the shim also logs the
failure to stderr), and any call made while `Tensor.new_empty` is replaced (a
test's poisoned allocation, a memory tracer) or a torch function mode is active (it sees the call).

The same module replays recorded direct calls: native_replay's C source is compiled into it.
"""
from . import native_replay

_LAUNCH_AND_ALLOCATION = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030B0000
#define PyFloat_Pack2(x, p, le) _PyFloat_Pack2((x), (unsigned char *)(p), (le))
#endif

#define MAX_ARGS 64
#define HEADER_BYTES 20

typedef int CUresult;
typedef void *CUfunction;
typedef void *CUstream;
typedef void *CUcontext;
typedef CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, CUstream, void **, void **);
typedef CUresult (*CtxGetCurrent)(CUcontext *);
typedef CUresult (*GetErrorString)(CUresult, const char **);

static LaunchKernel cu_launch_kernel = NULL;
static CtxGetCurrent cu_ctx_get_current = NULL;
static GetErrorString cu_get_error_string = NULL;
typedef CUresult (*StreamIsCapturing)(CUstream, int *);
static StreamIsCapturing cu_stream_is_capturing = NULL; /* optional: native_replay's buffers need it */

static PyObject *str_dtype, *str_data_ptr, *str_is_cuda, *str_debug, *str_instrumentation_mode,
    *str_launch_enter_hook, *str_launch_exit_hook, *str_calls, *str_pre_run_hooks;

enum { ST_LAUNCHES, ST_FALLBACK, ST_GET_DEVICE, ST_GET_STREAM, ST_RUNTIME, ST_COMPILATION,
       ST_HOOK_CHAIN, ST_TENSOR, ST_SIZE };
enum { ARG_INT, ARG_FLOAT, ARG_TENSOR, ARG_OTHER };

static int load_driver(void) {
  if (cu_launch_kernel != NULL)
    return 0;
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (lib == NULL) {
    PyErr_Format(PyExc_RuntimeError, "cannot open libcuda.so.1: %s", dlerror());
    return -1;
  }
  cu_ctx_get_current = (CtxGetCurrent)dlsym(lib, "cuCtxGetCurrent");
  cu_get_error_string = (GetErrorString)dlsym(lib, "cuGetErrorString");
  cu_stream_is_capturing = (StreamIsCapturing)dlsym(lib, "cuStreamIsCapturing");
  LaunchKernel launch_kernel = (LaunchKernel)dlsym(lib, "cuLaunchKernel");
  if (cu_ctx_get_current == NULL || cu_get_error_string == NULL || launch_kernel == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "libcuda.so.1 lacks cuLaunchKernel, cuCtxGetCurrent or cuGetErrorString");
    return -1;
  }
  cu_launch_kernel = launch_kernel;
  return 0;
}

/* 1 when a launch hook is set (Triton's HookChain with calls, or any other non-None hook),
   0 when none, -1 on error. */
static int hook_set(PyObject *runtime, PyObject *name, PyObject *hook_chain) {
  PyObject *hook = PyObject_GetAttr(runtime, name);
  if (hook == NULL)
    return -1;
  int set;
  if ((PyObject *)Py_TYPE(hook) == hook_chain) {
    PyObject *calls = PyObject_GetAttr(hook, str_calls);
    set = calls == NULL ? -1 : PyObject_IsTrue(calls);
    Py_XDECREF(calls);
  } else {
    set = hook != Py_None;
  }
  Py_DECREF(hook);
  return set;
}

/* 1 when a hook or a pre-run hook asks for Triton's path, 0 when not, -1 on error. */
static int hooked(PyObject **state, PyObject *kernel) {
  int set = hook_set(state[ST_RUNTIME], str_launch_enter_hook, state[ST_HOOK_CHAIN]);
  if (set == 0)
    set = hook_set(state[ST_RUNTIME], str_launch_exit_hook, state[ST_HOOK_CHAIN]);
  if (set != 0)
    return set;
  PyObject *pre_run = PyObject_GetAttr(kernel, str_pre_run_hooks);
  if (pre_run == NULL)
    return -1;
  set = PyObject_IsTrue(pre_run);
  Py_DECREF(pre_run);
  return set;
}

static int store_int(const char code, PyObject *value, uint64_t *slot) {
  long long v = PyLong_AsLongLong(value);
  if (v == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    unsigned long long u = PyLong_AsUnsignedLongLong(value);
    if (u == (unsigned long long)-1 && PyErr_Occurred())
      return -1;
    v = (long long)u;
  }
  switch (code) {
  case '1': { int8_t x = (int8_t)v; memcpy(slot, &x, 1); break; }
  case '2': { int16_t x = (int16_t)v; memcpy(slot, &x, 2); break; }
  case '4': { int32_t x = (int32_t)v; memcpy(slot, &x, 4); break; }
  default: memcpy(slot, &v, 8); break;
  }
  return 0;
}

static int store_float(const char code, PyObject *value, uint64_t *slot) {
  double d = PyFloat_AsDouble(value);
  if (d == -1.0 && PyErr_Occurred())
    return -1;
  if (code == 'd') {
    memcpy(slot, &d, 8);
  } else if (code == 'h') {
    if (PyFloat_Pack2(d, (char *)slot, 1) < 0)
      return -1;
  } else {
    float f = (float)d;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    if (code == 'b') {
      uint16_t half = (uint16_t)(bits >> 16); /* truncated, as Triton's launcher packs bf16 */
      memcpy(slot, &half, 2);
    } else {
      memcpy(slot, &bits, 4);
    }
  }
  return 0;
}

/* 1 when every tensor argument is on a CUDA device, 0 when one is not (Triton's launch reports
   it), -1 on error. */
static int on_cuda(PyObject *const *values, const int *kinds, Py_ssize_t n_args) {
  for (Py_ssize_t i = 0; i < n_args; i++) {
    if (kinds[i] != ARG_TENSOR)
      continue;
    PyObject *is_cuda = PyObject_GetAttr(values[i], str_is_cuda);
    if (is_cuda == NULL)
      return -1;
    Py_DECREF(is_cuda);
    if (is_cuda != Py_True)
      return 0;
  }
  return 1;
}

/* Launch `descriptor` (see the module docstring) with `values` (args then constants). */
static PyObject *launch_descriptor(PyObject *descriptor, PyObject *const *values, Py_ssize_t count,
                                   const int *kinds, const uint64_t *pointers, const unsigned *grid,
                                   PyObject *stream_obj) {
  const char *bytes = PyBytes_AS_STRING(descriptor);
  uint64_t function;
  uint32_t block, shared, declared;
  memcpy(&function, bytes, 8);
  memcpy(&block, bytes + 8, 4);
  memcpy(&shared, bytes + 12, 4);
  memcpy(&declared, bytes + 16, 4);
  const char *codes = bytes + HEADER_BYTES;
  if ((Py_ssize_t)declared != count || PyBytes_GET_SIZE(descriptor) != HEADER_BYTES + count) {
    PyErr_SetString(PyExc_RuntimeError, "native launch: descriptor does not match the arguments");
    return NULL;
  }
  uint64_t stream = PyLong_AsUnsignedLongLong(stream_obj);
  if (stream == (uint64_t)-1 && PyErr_Occurred())
    return NULL;
  uint64_t storage[MAX_ARGS + 2];
  void *params[MAX_ARGS + 2];
  int n = 0;
  for (Py_ssize_t i = 0; i < count; i++) {
    const char code = codes[i];
    PyObject *value = values[i];
    if (code == 'c')
      continue;
    storage[n] = 0;
    if (code == 'p') {
      if (i < MAX_ARGS && kinds[i] == ARG_TENSOR)
        storage[n] = pointers[i];
      else if (value != Py_None && store_int('8', value, &storage[n]) < 0)
        return NULL;
    } else if (code == 'h' || code == 'b' || code == 'f' || code == 'd') {
      if (store_float(code, value, &storage[n]) < 0)
        return NULL;
    } else if (store_int(code, value, &storage[n]) < 0) {
      return NULL;
    }
    params[n] = &storage[n];
    n++;
  }
  storage[n] = 0; /* Triton 3.6's global and profile scratch pointers: none */
  params[n] = &storage[n];
  storage[n + 1] = 0;
  params[n + 1] = &storage[n + 1];
  CUresult status = cu_launch_kernel((CUfunction)(uintptr_t)function, grid[0], grid[1], grid[2], block, 1, 1,
                                     shared, (CUstream)(uintptr_t)stream, params, NULL);
  if (status != 0) {
    const char *message = NULL;
    cu_get_error_string(status, &message);
    PyErr_Format(PyExc_RuntimeError, "CUDA error %d launching a generated kernel: %s", status,
                 message ? message : "unknown");
    return NULL;
  }
  Py_RETURN_NONE;
}

/* Call a launcher tuple's run(gx, gy, gz, stream, function, *options, *args, *constants). */
static PyObject *launch_tuple(PyObject *entry, PyObject *const *values, Py_ssize_t count,
                              PyObject *const *grid_objs, PyObject *stream) {
  if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 3 || !PyTuple_CheckExact(PyTuple_GET_ITEM(entry, 1))) {
    PyErr_SetString(PyExc_RuntimeError, "native launch: malformed launcher entry");
    return NULL;
  }
  PyObject *options = PyTuple_GET_ITEM(entry, 1);
  Py_ssize_t n_options = PyTuple_GET_SIZE(options);
  Py_ssize_t total = 5 + n_options + count;
  PyObject *small[5 + 8 + MAX_ARGS];
  if (total > (Py_ssize_t)(sizeof(small) / sizeof(small[0]))) {
    PyErr_SetString(PyExc_RuntimeError, "native launch: too many launcher options");
    return NULL;
  }
  small[0] = grid_objs[0];
  small[1] = grid_objs[1];
  small[2] = grid_objs[2];
  small[3] = stream;
  small[4] = PyTuple_GET_ITEM(entry, 2);
  for (Py_ssize_t i = 0; i < n_options; i++)
    small[5 + i] = PyTuple_GET_ITEM(options, i);
  for (Py_ssize_t i = 0; i < count; i++)
    small[5 + n_options + i] = values[i];
  return PyObject_Vectorcall(PyTuple_GET_ITEM(entry, 0), small, total, NULL);
}

static PyObject *launch(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 7 || !PyTuple_CheckExact(argv[0]) || PyTuple_GET_SIZE(argv[0]) != ST_SIZE ||
      !PyTuple_CheckExact(argv[2]) || !PyTuple_CheckExact(argv[3]) || !PyTuple_CheckExact(argv[4])) {
    PyErr_SetString(PyExc_TypeError,
                    "launch(state, kernel, grid: tuple, args: tuple, constants: tuple, num_warps, num_stages)");
    return NULL;
  }
  PyObject **state = &PyTuple_GET_ITEM(argv[0], 0);
  PyObject *kernel = argv[1], *grid = argv[2], *args = argv[3], *constants = argv[4];
  PyObject *const *call = argv + 1; /* the fallback's arguments */

  static PyObject *one = NULL;
  if (one == NULL && (one = PyLong_FromLong(1)) == NULL)
    return NULL;
  Py_ssize_t dims = PyTuple_GET_SIZE(grid);
  if (dims < 1 || dims > 3)
    return PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);
  unsigned grid_size[3] = {1, 1, 1};
  PyObject *grid_objs[3] = {one, one, one};
  for (Py_ssize_t i = 0; i < dims; i++) {
    PyObject *item = PyTuple_GET_ITEM(grid, i);
    long size = PyLong_AsLong(item);
    if (size == -1 && PyErr_Occurred())
      return NULL;
    if (size == 0)
      Py_RETURN_NONE;
    if (size < 0 || size > 0x7fffffffL)
      return PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);
    grid_size[i] = (unsigned)size;
    grid_objs[i] = item;
  }

  PyObject *id = PyLong_FromVoidPtr(kernel);
  if (id == NULL)
    return NULL;
  PyObject *kernel_state = PyDict_GetItemWithError(state[ST_LAUNCHES], id); /* borrowed */
  Py_DECREF(id);
  if (kernel_state == NULL) {
    if (PyErr_Occurred())
      return NULL;
    return PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);
  }
  PyObject *launches = PyTuple_CheckExact(kernel_state) && PyTuple_GET_SIZE(kernel_state) == 2
                           ? PyTuple_GET_ITEM(kernel_state, 1) : NULL;
  if (launches == NULL || !PyDict_CheckExact(launches))
    return PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);
  int hook = hooked(state, kernel);
  if (hook < 0)
    return NULL;
  if (hook)
    return PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);

  Py_ssize_t n_args = PyTuple_GET_SIZE(args), n_constants = PyTuple_GET_SIZE(constants);
  Py_ssize_t count = n_args + n_constants;
  if (count > MAX_ARGS)
    return PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);
  PyObject *values[MAX_ARGS];
  int kinds[MAX_ARGS];
  uint64_t pointers[MAX_ARGS];
  PyObject *dtypes[MAX_ARGS];
  Py_ssize_t key_size = 6;
  PyObject *result = NULL, *key = NULL, *device = NULL;
  Py_ssize_t classified = 0;
  for (Py_ssize_t i = 0; i < count; i++)
    values[i] = i < n_args ? PyTuple_GET_ITEM(args, i) : PyTuple_GET_ITEM(constants, i - n_args);
  for (; classified < n_args; classified++) {
    PyObject *arg = values[classified];
    dtypes[classified] = NULL;
    if (PyLong_CheckExact(arg)) {
      kinds[classified] = ARG_INT;
    } else if (PyFloat_CheckExact(arg)) {
      kinds[classified] = ARG_FLOAT;
    } else if (PyObject_TypeCheck(arg, (PyTypeObject *)state[ST_TENSOR])) {
      kinds[classified] = ARG_TENSOR;
      PyObject *ptr = PyObject_CallMethodNoArgs(arg, str_data_ptr);
      if (ptr == NULL)
        goto done;
      pointers[classified] = PyLong_AsUnsignedLongLong(ptr);
      Py_DECREF(ptr);
      if (pointers[classified] == (uint64_t)-1 && PyErr_Occurred())
        goto done;
      if ((dtypes[classified] = PyObject_GetAttr(arg, str_dtype)) == NULL)
        goto done;
      key_size++;
    } else if (PyObject_Hash(arg) == -1) {
      /* an unhashable argument (a host-built TMA descriptor): the Python path keys it */
      PyErr_Clear();
      result = PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);
      goto done;
    } else {
      kinds[classified] = ARG_OTHER;
    }
    key_size++;
  }
  for (Py_ssize_t i = n_args; i < count; i++)
    kinds[i] = ARG_OTHER;

  if ((device = PyObject_CallNoArgs(state[ST_GET_DEVICE])) == NULL)
    goto done;
  if ((key = PyTuple_New(key_size)) == NULL)
    goto done;
  PyObject *head[6];
  head[0] = device;
  head[1] = argv[5];
  head[2] = argv[6];
  head[3] = constants;
  for (int i = 0; i < 4; i++) {
    Py_INCREF(head[i]);
    PyTuple_SET_ITEM(key, i, head[i]);
  }
  if ((head[4] = PyObject_GetAttr(state[ST_RUNTIME], str_debug)) == NULL)
    goto done;
  PyTuple_SET_ITEM(key, 4, head[4]);
  if ((head[5] = PyObject_GetAttr(state[ST_COMPILATION], str_instrumentation_mode)) == NULL)
    goto done;
  PyTuple_SET_ITEM(key, 5, head[5]);
  Py_ssize_t slot = 6;
  for (Py_ssize_t i = 0; i < n_args; i++) {
    PyObject *arg = values[i];
    switch (kinds[i]) {
    case ARG_INT:
      Py_INCREF(arg);
      PyTuple_SET_ITEM(key, slot++, arg);
      break;
    case ARG_FLOAT:
      Py_INCREF((PyObject *)&PyFloat_Type);
      PyTuple_SET_ITEM(key, slot++, (PyObject *)&PyFloat_Type);
      break;
    case ARG_TENSOR: {
      PyTuple_SET_ITEM(key, slot++, dtypes[i]); /* the key takes the reference */
      dtypes[i] = NULL;
      PyObject *aligned = pointers[i] % 16 == 0 ? Py_True : Py_False;
      Py_INCREF(aligned);
      PyTuple_SET_ITEM(key, slot++, aligned);
      break;
    }
    default: {
      PyObject *pair = PyTuple_Pack(2, (PyObject *)Py_TYPE(arg), arg);
      if (pair == NULL)
        goto done;
      PyTuple_SET_ITEM(key, slot++, pair);
    }
    }
  }

  PyObject *entry = PyDict_GetItemWithError(launches, key); /* borrowed */
  if (entry == NULL) {
    if (!PyErr_Occurred())
      result = PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);
    goto done;
  }
  Py_INCREF(entry);
  PyObject *stream = PyObject_CallOneArg(state[ST_GET_STREAM], device);
  if (stream != NULL) {
    if (PyBytes_CheckExact(entry)) {
      int on_device = on_cuda(values, kinds, n_args);
      CUcontext context = NULL;
      if (on_device >= 0 && load_driver() == 0) {
        if (!on_device || cu_ctx_get_current(&context) != 0 || context == NULL)
          result = PyObject_Vectorcall(state[ST_FALLBACK], call, 6, NULL);
        else
          result = launch_descriptor(entry, values, count, kinds, pointers, grid_size, stream);
      }
    } else {
      result = launch_tuple(entry, values, count, grid_objs, stream);
    }
    Py_DECREF(stream);
  }
  Py_DECREF(entry);

done:
  for (Py_ssize_t i = 0; i < classified; i++)
    if (kinds[i] == ARG_TENSOR)
      Py_XDECREF(dtypes[i]);
  Py_XDECREF(key);
  Py_XDECREF(device);
  return result;
}

/* new_empty through libtorch's AOTI C shim (see the module docstring). */
#define MAX_DIMS 16
typedef void *TensorHandle;
typedef int32_t (*EmptyStrided)(int64_t, const int64_t *, const int64_t *, int32_t, int32_t, int32_t,
                                TensorHandle *);
typedef int32_t (*DeleteTensor)(TensorHandle);
typedef PyObject *(*WrapTensor)(TensorHandle);
typedef int32_t (*ShimCode)(void);

static EmptyStrided empty_strided = NULL;
static DeleteTensor delete_tensor = NULL;
static WrapTensor wrap_tensor = NULL;
static int32_t device_type_cpu, device_type_cuda;
static PyObject *str_is_cpu, *str_get_device, *str_new_empty;

enum { AL_TENSOR, AL_DTYPES, AL_NEW_EMPTY, AL_FUNCTION_MODE, AL_FALLBACK, AL_SIZE };

static const char *const dtype_names[] = {"bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                          "bfloat16", "float32", "float64", "complex64", "complex128"};

static PyObject *alloc_init(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 2 || !PyUnicode_Check(argv[0]) || !PyUnicode_Check(argv[1])) {
    PyErr_SetString(PyExc_TypeError, "alloc_init(libtorch_cpu path, libtorch_python path)");
    return NULL;
  }
  const char *cpu_path = PyUnicode_AsUTF8(argv[0]), *python_path = PyUnicode_AsUTF8(argv[1]);
  if (cpu_path == NULL || python_path == NULL)
    return NULL;
  /* only libraries this process has loaded already: nothing is loaded here */
  void *cpu = dlopen(cpu_path, RTLD_NOW | RTLD_NOLOAD);
  void *python = dlopen(python_path, RTLD_NOW | RTLD_NOLOAD);
  if (cpu == NULL || python == NULL)
    Py_RETURN_NONE;
  EmptyStrided empty = (EmptyStrided)dlsym(cpu, "aoti_torch_empty_strided");
  DeleteTensor delete_ = (DeleteTensor)dlsym(cpu, "aoti_torch_delete_tensor_object");
  ShimCode cpu_type = (ShimCode)dlsym(cpu, "aoti_torch_device_type_cpu");
  ShimCode cuda_type = (ShimCode)dlsym(cpu, "aoti_torch_device_type_cuda");
  /* THPVariable_Wrap(const at::TensorBase &): a shim handle points at an at::Tensor */
  WrapTensor wrap = (WrapTensor)dlsym(python, "_Z16THPVariable_WrapRKN2at10TensorBaseE");
  if (empty == NULL || delete_ == NULL || cpu_type == NULL || cuda_type == NULL || wrap == NULL)
    Py_RETURN_NONE;
  Py_ssize_t n_names = (Py_ssize_t)(sizeof(dtype_names) / sizeof(dtype_names[0]));
  PyObject *codes = PyList_New(0);
  if (codes == NULL)
    return NULL;
  for (Py_ssize_t i = 0; i < n_names; i++) {
    char symbol[64];
    snprintf(symbol, sizeof(symbol), "aoti_torch_dtype_%s", dtype_names[i]);
    ShimCode code = (ShimCode)dlsym(cpu, symbol);
    if (code == NULL)
      continue;
    PyObject *pair = Py_BuildValue("(si)", dtype_names[i], (int)code());
    if (pair == NULL || PyList_Append(codes, pair) < 0) {
      Py_XDECREF(pair);
      Py_DECREF(codes);
      return NULL;
    }
    Py_DECREF(pair);
  }
  device_type_cpu = cpu_type();
  device_type_cuda = cuda_type();
  delete_tensor = delete_;
  wrap_tensor = wrap;
  empty_strided = empty;
  return codes;
}

/* 1 with the shim's dtype code of `dtype`, 0 when it has none, -1 on error. */
static int dtype_code(PyObject **alloc, PyObject *dtype, int32_t *code) {
  PyObject *value = PyDict_GetItemWithError(alloc[AL_DTYPES], dtype); /* borrowed */
  if (value == NULL)
    return PyErr_Occurred() ? -1 : 0;
  *code = (int32_t)PyLong_AsLong(value);
  return PyErr_Occurred() ? -1 : 1;
}

/* 1 with `t`'s device when it is a CPU or CUDA device, 0 for any other, -1 on error. */
static int tensor_device(PyObject *t, int32_t *type, int32_t *index) {
  PyObject *is_cuda = PyObject_GetAttr(t, str_is_cuda);
  if (is_cuda == NULL)
    return -1;
  Py_DECREF(is_cuda);
  if (is_cuda == Py_True) {
    PyObject *device = PyObject_CallMethodNoArgs(t, str_get_device);
    if (device == NULL)
      return -1;
    *index = (int32_t)PyLong_AsLong(device);
    Py_DECREF(device);
    *type = device_type_cuda;
    return PyErr_Occurred() ? -1 : 1;
  }
  PyObject *is_cpu = PyObject_GetAttr(t, str_is_cpu);
  if (is_cpu == NULL)
    return -1;
  Py_DECREF(is_cpu);
  *type = device_type_cpu;
  *index = -1;
  return is_cpu == Py_True;
}

/* 1 with the n sizes of `items` in `sizes`, 0 when one is not an int (bool aside) or is negative,
   -1 on error. */
static int read_sizes(PyObject *const *items, Py_ssize_t n, int64_t *sizes) {
  for (Py_ssize_t i = 0; i < n; i++) {
    if (!PyLong_CheckExact(items[i]))
      return 0;
    sizes[i] = PyLong_AsLongLong(items[i]);
    if (sizes[i] == -1 && PyErr_Occurred())
      return -1;
    if (sizes[i] < 0)
      return 0;
  }
  return 1;
}

/* A new contiguous tensor from the shim; NULL with no error set when the shim cannot allocate it
   (sizes whose product overflows, a failure the shim reports), NULL with an error set when the
   tensor cannot be wrapped. */
static PyObject *allocate(const int64_t *sizes, Py_ssize_t n, int32_t dtype, int32_t type, int32_t index) {
  int64_t strides[MAX_DIMS], stride = 1;
  for (Py_ssize_t i = n - 1; i >= 0; i--) {
    strides[i] = stride;
    if (__builtin_mul_overflow(stride, sizes[i] > 1 ? sizes[i] : 1, &stride))
      return NULL;
  }
  TensorHandle handle = NULL;
  if (empty_strided(n, sizes, strides, dtype, type, index, &handle) != 0 || handle == NULL)
    return NULL;
  PyObject *tensor = wrap_tensor(handle);
  delete_tensor(handle);
  return tensor;
}

static PyObject *new_empty(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc < 3 || !PyTuple_CheckExact(argv[0]) || PyTuple_GET_SIZE(argv[0]) != AL_SIZE) {
    PyErr_SetString(PyExc_TypeError, "new_empty(alloc, tensor, dtype, *sizes)");
    return NULL;
  }
  if (empty_strided == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "native allocation used before alloc_init found libtorch's shim");
    return NULL;
  }
  PyObject **alloc = &PyTuple_GET_ITEM(argv[0], 0);
  PyObject *t = argv[1];
  PyObject *const *items = argv + 3;
  Py_ssize_t n = argc - 3;
  if (n == 1 && PyTuple_Check(items[0])) { /* the sizes as one tuple (torch.Size included) */
    n = PyTuple_GET_SIZE(items[0]);
    items = &PyTuple_GET_ITEM(items[0], 0);
  }
  /* a subclass, a replaced Tensor.new_empty or a torch function mode gets torch's call; torch
     requires a size */
  int ok = Py_TYPE(t) == (PyTypeObject *)alloc[AL_TENSOR] && argc > 3 && n <= MAX_DIMS;
  if (ok) {
    PyObject *current = PyObject_GetAttr(alloc[AL_TENSOR], str_new_empty);
    if (current == NULL)
      return NULL;
    Py_DECREF(current);
    ok = current == alloc[AL_NEW_EMPTY];
  }
  if (ok) {
    PyObject *mode = PyObject_CallNoArgs(alloc[AL_FUNCTION_MODE]);
    if (mode == NULL)
      return NULL;
    Py_DECREF(mode);
    ok = mode == Py_False;
  }
  int32_t dtype = 0, type = 0, index = 0;
  int64_t sizes[MAX_DIMS];
  if (ok > 0)
    ok = dtype_code(alloc, argv[2], &dtype);
  if (ok > 0)
    ok = tensor_device(t, &type, &index);
  if (ok > 0)
    ok = read_sizes(items, n, sizes);
  if (ok < 0)
    return NULL;
  PyObject *result = ok ? allocate(sizes, n, dtype, type, index) : NULL;
  if (result != NULL || PyErr_Occurred())
    return result;
  return PyObject_Vectorcall(alloc[AL_FALLBACK], argv + 1, argc - 1, NULL);
}

"""

_MODULE = r"""
static PyMethodDef methods[] = {
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "launch(state, kernel, grid, args, constants, num_warps, num_stages)"},
    {"alloc_init", (PyCFunction)(void (*)(void))alloc_init, METH_FASTCALL,
     "alloc_init(libtorch_cpu path, libtorch_python path) -> [(dtype name, code)] or None"},
    {"new_empty", (PyCFunction)(void (*)(void))new_empty, METH_FASTCALL, "new_empty(alloc, tensor, dtype, *sizes)"},
    REPLAY_METHODS
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "hk_native_launch", NULL, -1, methods};

PyMODINIT_FUNC PyInit_hk_native_launch(void) {
  str_dtype = PyUnicode_InternFromString("dtype");
  str_data_ptr = PyUnicode_InternFromString("data_ptr");
  str_is_cuda = PyUnicode_InternFromString("is_cuda");
  str_debug = PyUnicode_InternFromString("debug");
  str_instrumentation_mode = PyUnicode_InternFromString("instrumentation_mode");
  str_launch_enter_hook = PyUnicode_InternFromString("launch_enter_hook");
  str_launch_exit_hook = PyUnicode_InternFromString("launch_exit_hook");
  str_calls = PyUnicode_InternFromString("calls");
  str_pre_run_hooks = PyUnicode_InternFromString("pre_run_hooks");
  str_is_cpu = PyUnicode_InternFromString("is_cpu");
  str_get_device = PyUnicode_InternFromString("get_device");
  str_new_empty = PyUnicode_InternFromString("new_empty");
  str_requires_grad = PyUnicode_InternFromString("requires_grad");
  str_empty_like = PyUnicode_InternFromString("empty_like");
  str_empty = PyUnicode_InternFromString("empty");
  if (!str_dtype || !str_data_ptr || !str_is_cuda || !str_debug || !str_instrumentation_mode ||
      !str_launch_enter_hook || !str_launch_exit_hook || !str_calls || !str_pre_run_hooks || !str_is_cpu ||
      !str_get_device || !str_new_empty || !str_requires_grad || !str_empty_like || !str_empty)
    return NULL;
  return PyModule_Create(&module);
}
"""

SOURCE = _LAUNCH_AND_ALLOCATION + native_replay.SOURCE + _MODULE.replace("    REPLAY_METHODS\n", native_replay.METHODS.lstrip("\n"))
