"""The C source of the native replay of recorded direct calls: `SOURCE` is compiled into the same
module as `native_launch`'s (it uses that file's driver entry points, launch descriptors and
allocation through libtorch's AOTI shim) and carried into every generated module with it.

A direct call of the public API (see helion_kernels/_direct) whose launcher only computes sizes,
allocates and launches is, for one set of argument properties, the same sequence every time: the
same allocations, and the same kernels launched on the same grids with the same scalar arguments,
only the pointers differ. launch_helpers' `_record` runs such a call once with recording wrappers;
`replay_plan` turns what it saw into a plan, and `replay` runs the plan from C:

    replay_init(probe tensor, probe._cdata, libtorch_cpu path, libtorch_cuda path) -> bool
        resolves the shim's tensor getters (`aoti_torch_get_sizes` ...), its grad-mode query and,
        where present, `aoti_torch_get_current_cuda_stream`; and finds where a torch.Tensor
        object holds its at::Tensor (the shim's tensor handle) by matching the probe's `_cdata`
        (its TensorImpl address) and checking the getters against the probe. False where a
        symbol is missing or the layout is not found (no plan is then made).
    replay_plan(state, args, allocations, launches, outputs, device, debug, instrumentation, kernels,
                buffers, stream)
        -> a plan (a capsule), or None when the call cannot be replayed: `args` are the call's
        arguments (tensors, None, other values), `allocations` the tensors it allocated in order,
        `launches` (descriptor, grid, values) per launch (`values` the launch's args then
        constants, `descriptor` native_launch's), `outputs` the index of the allocation the call
        returned or a tuple of such, `device` the current CUDA device, `debug` and
        `instrumentation` Triton's settings the launches were keyed with, `kernels` the launched
        kernels, `buffers` the persistent buffers of the current `stream` it used (the counters of
        split-K launches, which every launch leaves zeroed; the plan holds them). Every tensor a
        launch passes must be an argument, an allocation or a buffer (by identity).
    replay(state, table, tag, *args) -> the outputs, or state's MISSING
        finds the plans of `tag` in `table` (a dict of lists of plans, most recently used first)
        and the first that matches, which it moves to the list's front. A plan matches where the
        arguments do (the same number; None where None was; a value of the same type equal to
        the recorded one; a torch.Tensor or nn.Parameter (exactly) with the recorded dtype,
        device, sizes, strides and 16-byte alignment, strided) and, for a plan with buffers, the
        current stream is the buffers' and is not being captured into a CUDA graph (the graph
        needs buffers it owns). Then, unless a check sends the call back (MISSING), it
        allocates, launches each kernel on the current stream with the pointers filled in, and
        returns the outputs. MISSING comes back for: no matching plan, an unhashable tag, a
        tensor that requires grad while grad mode is on, an active functorch transform or torch
        function mode, a replaced `Tensor.new_empty`, `torch.empty_like` or `torch.empty` (a
        test's poisoned allocation, a memory tracer), a Triton launch hook or a kernel's pre-run
        hook, other Triton debug or instrumentation settings, another current CUDA context than
        the recorded one, and a failed allocation (the caller's path then allocates and reports
        torch's error). A CUDA error from a launch raises RuntimeError.

`state` is a tuple: (MISSING, torch.Tensor, torch.nn.Parameter,
torch._C._are_functorch_transforms_active, torch._C._is_torch_function_mode_enabled, torch,
torch's Tensor.new_empty, torch.empty_like, torch.empty, Triton's runtime knobs, its compilation
knobs, triton.knobs.HookChain, get_stream(device) for hosts without the shim's stream query).
"""

SOURCE = r"""
/* ---- replay of recorded direct calls (native_replay) ---- */
#define MAX_PLAN_ARGS 8
#define MAX_PLAN_ALLOCS 16
#define MAX_PLAN_LAUNCHES 16
#define MAX_PLAN_OUTPUTS 8
#define MAX_PLAN_BUFFERS 4
/* a launch slot's source: argument i is i, allocation j is ALLOC_SOURCE + j, buffer b BUFFER_SOURCE + b */
#define ALLOC_SOURCE 1000
#define BUFFER_SOURCE 2000

typedef int32_t (*GetPointer)(TensorHandle, void **);
typedef int32_t (*GetInt64)(TensorHandle, int64_t *);
typedef int32_t (*GetInt64s)(TensorHandle, int64_t **);
typedef int32_t (*GetInt32)(TensorHandle, int32_t *);
typedef _Bool (*GradModeEnabled)(void);
typedef int32_t (*CurrentStream)(int32_t, void **);

static GetPointer get_data_ptr = NULL;
static GetInt64 get_dim = NULL;
static GetInt64s get_sizes = NULL, get_strides = NULL;
static GetInt32 get_dtype = NULL, get_device_type = NULL, get_device_index = NULL, get_layout = NULL;
static GradModeEnabled grad_mode_enabled = NULL;
static CurrentStream current_cuda_stream = NULL;
static int32_t layout_strided;
static Py_ssize_t handle_offset = -1;
static PyObject *str_requires_grad, *str_empty_like, *str_empty;
static const char *const plan_name = "helion_kernels.replay_plan";

enum { RS_MISSING, RS_TENSOR, RS_PARAMETER, RS_FUNCTORCH, RS_FUNCTION_MODE, RS_TORCH, RS_NEW_EMPTY,
       RS_EMPTY_LIKE, RS_EMPTY, RS_RUNTIME, RS_COMPILATION, RS_HOOK_CHAIN, RS_GET_STREAM, RS_SIZE };
enum { PA_NONE, PA_TENSOR, PA_VALUE };

typedef struct {
  int32_t dtype, device_type, device_index, aligned;
  int64_t dim;
  int64_t sizes[MAX_DIMS], strides[MAX_DIMS];
} TensorMeta;

typedef struct {
  int kind;
  PyObject *value; /* PA_VALUE: the recorded value (owned) */
  TensorMeta meta; /* PA_TENSOR */
} PlanArg;

typedef struct {
  uint64_t function;
  unsigned grid[3];
  uint32_t block, shared;
  int n_params;
  uint64_t storage[MAX_ARGS + 2];
  int source[MAX_ARGS + 2]; /* -1: the constant in storage; else an argument or ALLOC_SOURCE + j */
} PlanLaunch;

typedef struct {
  CUcontext context;
  int32_t device;
  PyObject *debug, *instrumentation, *kernels, *buffers; /* owned */
  void *stream; /* the stream the buffers belong to */
  uint64_t buffer_pointers[MAX_PLAN_BUFFERS];
  int n_args, n_allocs, n_launches, n_outputs, tuple_output, n_buffers;
  PlanArg args[MAX_PLAN_ARGS];
  TensorMeta allocs[MAX_PLAN_ALLOCS];
  PlanLaunch launches[MAX_PLAN_LAUNCHES];
  int outputs[MAX_PLAN_OUTPUTS];
} Plan;

static TensorHandle tensor_handle(PyObject *t) { return (TensorHandle)((char *)t + handle_offset); }

/* 1 with the metadata of strided tensor `t` (a torch.Tensor object) and its data pointer, 0 when
   the shim cannot tell them or it is not strided. */
static int read_meta(PyObject *t, TensorMeta *meta, void **pointer) {
  TensorHandle h = tensor_handle(t);
  int32_t layout;
  int64_t *sizes, *strides;
  if (get_layout(h, &layout) != 0 || layout != layout_strided || get_dim(h, &meta->dim) != 0 ||
      meta->dim > MAX_DIMS || get_sizes(h, &sizes) != 0 || get_strides(h, &strides) != 0 ||
      get_dtype(h, &meta->dtype) != 0 || get_device_type(h, &meta->device_type) != 0 ||
      get_device_index(h, &meta->device_index) != 0 || get_data_ptr(h, pointer) != 0)
    return 0;
  memcpy(meta->sizes, sizes, (size_t)meta->dim * 8);
  memcpy(meta->strides, strides, (size_t)meta->dim * 8);
  meta->aligned = (uintptr_t)*pointer % 16 == 0;
  return 1;
}

static int same_meta(const TensorMeta *a, const TensorMeta *b) {
  return a->dtype == b->dtype && a->device_type == b->device_type && a->device_index == b->device_index &&
         a->aligned == b->aligned && a->dim == b->dim && memcmp(a->sizes, b->sizes, (size_t)a->dim * 8) == 0 &&
         memcmp(a->strides, b->strides, (size_t)a->dim * 8) == 0;
}

static PyObject *replay_init(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 4 || !PyUnicode_Check(argv[2]) || !PyUnicode_Check(argv[3])) {
    PyErr_SetString(PyExc_TypeError, "replay_init(probe, probe._cdata, libtorch_cpu path, libtorch_cuda path)");
    return NULL;
  }
  if (empty_strided == NULL)
    Py_RETURN_FALSE; /* alloc_init found no shim */
  void *impl = PyLong_AsVoidPtr(argv[1]);
  if (impl == NULL && PyErr_Occurred())
    return NULL;
  const char *cpu_path = PyUnicode_AsUTF8(argv[2]), *cuda_path = PyUnicode_AsUTF8(argv[3]);
  if (cpu_path == NULL || cuda_path == NULL)
    return NULL;
  void *cpu = dlopen(cpu_path, RTLD_NOW | RTLD_NOLOAD);
  if (cpu == NULL)
    Py_RETURN_FALSE;
  GetPointer data_ptr = (GetPointer)dlsym(cpu, "aoti_torch_get_data_ptr");
  GetInt64 dim = (GetInt64)dlsym(cpu, "aoti_torch_get_dim");
  GetInt64s sizes = (GetInt64s)dlsym(cpu, "aoti_torch_get_sizes");
  GetInt64s strides = (GetInt64s)dlsym(cpu, "aoti_torch_get_strides");
  GetInt32 dtype = (GetInt32)dlsym(cpu, "aoti_torch_get_dtype");
  GetInt32 device_type = (GetInt32)dlsym(cpu, "aoti_torch_get_device_type");
  GetInt32 device_index = (GetInt32)dlsym(cpu, "aoti_torch_get_device_index");
  GetInt32 layout = (GetInt32)dlsym(cpu, "aoti_torch_get_layout");
  ShimCode strided = (ShimCode)dlsym(cpu, "aoti_torch_layout_strided");
  GradModeEnabled grad = (GradModeEnabled)dlsym(cpu, "aoti_torch_grad_mode_is_enabled");
  if (!data_ptr || !dim || !sizes || !strides || !dtype || !device_type || !device_index || !layout || !strided ||
      !grad)
    Py_RETURN_FALSE;
  /* the at::Tensor inside the probe's Python object: the word holding its TensorImpl address */
  Py_ssize_t offset = -1;
  for (Py_ssize_t at = (Py_ssize_t)sizeof(PyObject); at <= (Py_ssize_t)sizeof(PyObject) + 16; at += 8) {
    void *word;
    memcpy(&word, (char *)argv[0] + at, sizeof(word));
    if (word == impl) {
      offset = at;
      break;
    }
  }
  if (offset < 0)
    Py_RETURN_FALSE;
  TensorHandle h = (TensorHandle)((char *)argv[0] + offset);
  int64_t n = -1;
  void *pointer = NULL;
  int32_t probe_layout = -1;
  if (dim(h, &n) != 0 || n < 0 || data_ptr(h, &pointer) != 0 || layout(h, &probe_layout) != 0 ||
      probe_layout != strided())
    Py_RETURN_FALSE;
  void *cuda = dlopen(cuda_path, RTLD_NOW | RTLD_NOLOAD);
  current_cuda_stream = cuda == NULL ? NULL : (CurrentStream)dlsym(cuda, "aoti_torch_get_current_cuda_stream");
  get_data_ptr = data_ptr;
  get_dim = dim;
  get_sizes = sizes;
  get_strides = strides;
  get_dtype = dtype;
  get_device_type = device_type;
  get_device_index = device_index;
  get_layout = layout;
  layout_strided = strided();
  grad_mode_enabled = grad;
  handle_offset = offset;
  Py_RETURN_TRUE;
}

static void plan_free(PyObject *capsule) {
  Plan *plan = (Plan *)PyCapsule_GetPointer(capsule, plan_name);
  if (plan == NULL)
    return;
  for (int i = 0; i < plan->n_args; i++)
    Py_XDECREF(plan->args[i].value);
  Py_XDECREF(plan->debug);
  Py_XDECREF(plan->instrumentation);
  Py_XDECREF(plan->kernels);
  Py_XDECREF(plan->buffers);
  PyMem_Free(plan);
}

/* The slot source of a launch's tensor `value`: an argument, an allocation or a buffer of the
   plan, -1 when it is none of them. */
static int tensor_source(PyObject *value, PyObject *args, PyObject *allocations, PyObject *buffers) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
    if (PyTuple_GET_ITEM(args, i) == value)
      return (int)i;
  for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(allocations); j++)
    if (PyTuple_GET_ITEM(allocations, j) == value)
      return ALLOC_SOURCE + (int)j;
  for (Py_ssize_t b = 0; b < PyTuple_GET_SIZE(buffers); b++)
    if (PyTuple_GET_ITEM(buffers, b) == value)
      return BUFFER_SOURCE + (int)b;
  return -1;
}

/* 1 when `launch` (descriptor, grid, values) is recorded into `out`, 0 when it cannot be replayed,
   -1 on error. */
static int plan_launch(PyObject **rs, PyObject *launch, PyObject *args, PyObject *allocations, PyObject *buffers,
                       PlanLaunch *out) {
  if (!PyTuple_CheckExact(launch) || PyTuple_GET_SIZE(launch) != 3)
    return 0;
  PyObject *descriptor = PyTuple_GET_ITEM(launch, 0), *grid = PyTuple_GET_ITEM(launch, 1),
           *values = PyTuple_GET_ITEM(launch, 2);
  if (!PyBytes_CheckExact(descriptor) || !PyTuple_CheckExact(grid) || PyTuple_GET_SIZE(grid) != 3 ||
      !PyTuple_CheckExact(values) || PyBytes_GET_SIZE(descriptor) < HEADER_BYTES)
    return 0;
  const char *bytes = PyBytes_AS_STRING(descriptor);
  uint32_t declared;
  memcpy(&out->function, bytes, 8);
  memcpy(&out->block, bytes + 8, 4);
  memcpy(&out->shared, bytes + 12, 4);
  memcpy(&declared, bytes + 16, 4);
  Py_ssize_t count = PyTuple_GET_SIZE(values);
  if ((Py_ssize_t)declared != count || count > MAX_ARGS || PyBytes_GET_SIZE(descriptor) != HEADER_BYTES + count)
    return 0;
  for (int d = 0; d < 3; d++) {
    long size = PyLong_AsLong(PyTuple_GET_ITEM(grid, d));
    if (size == -1 && PyErr_Occurred())
      return -1;
    if (size <= 0 || size > 0x7fffffffL)
      return 0;
    out->grid[d] = (unsigned)size;
  }
  const char *codes = bytes + HEADER_BYTES;
  int n = 0;
  for (Py_ssize_t i = 0; i < count; i++) {
    const char code = codes[i];
    PyObject *value = PyTuple_GET_ITEM(values, i);
    if (code == 'c')
      continue;
    out->storage[n] = 0;
    out->source[n] = -1;
    if (code == 'p' && PyObject_TypeCheck(value, (PyTypeObject *)rs[RS_TENSOR])) {
      if ((out->source[n] = tensor_source(value, args, allocations, buffers)) < 0)
        return 0;
    } else if (code == 'p') {
      if (value != Py_None && store_int('8', value, &out->storage[n]) < 0)
        return -1;
    } else if (code == 'h' || code == 'b' || code == 'f' || code == 'd') {
      if (store_float(code, value, &out->storage[n]) < 0)
        return -1;
    } else if (store_int(code, value, &out->storage[n]) < 0) {
      return -1;
    }
    n++;
  }
  out->storage[n] = 0; /* Triton 3.6's scratch pointers, as native_launch passes them */
  out->source[n] = -1;
  out->storage[n + 1] = 0;
  out->source[n + 1] = -1;
  out->n_params = n + 2;
  return 1;
}

/* 1 when `t` (an argument or allocation of the plan being made) is described in `meta`, 0 when it
   cannot be replayed. */
static int plan_tensor(PyObject **rs, PyObject *t, TensorMeta *meta) {
  PyTypeObject *type = Py_TYPE(t);
  if (type != (PyTypeObject *)rs[RS_TENSOR] && type != (PyTypeObject *)rs[RS_PARAMETER])
    return 0;
  void *pointer = NULL;
  return read_meta(t, meta, &pointer);
}

static PyObject *replay_plan(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc != 11 || !PyTuple_CheckExact(argv[0]) || PyTuple_GET_SIZE(argv[0]) != RS_SIZE ||
      !PyTuple_CheckExact(argv[1]) || !PyTuple_CheckExact(argv[2]) || !PyTuple_CheckExact(argv[3]) ||
      !PyTuple_CheckExact(argv[8]) || !PyTuple_CheckExact(argv[9])) {
    PyErr_SetString(PyExc_TypeError, "replay_plan(state, args: tuple, allocations: tuple, launches: tuple, outputs, "
                                     "device, debug, instrumentation, kernels: tuple, buffers: tuple, stream)");
    return NULL;
  }
  if (handle_offset < 0 || load_driver() < 0) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  PyObject **rs = &PyTuple_GET_ITEM(argv[0], 0);
  PyObject *args = argv[1], *allocations = argv[2], *launches = argv[3], *outputs = argv[4], *buffers = argv[9];
  if (PyTuple_GET_SIZE(args) > MAX_PLAN_ARGS || PyTuple_GET_SIZE(allocations) > MAX_PLAN_ALLOCS ||
      PyTuple_GET_SIZE(launches) > MAX_PLAN_LAUNCHES || PyTuple_GET_SIZE(launches) == 0 ||
      PyTuple_GET_SIZE(buffers) > MAX_PLAN_BUFFERS || (PyTuple_GET_SIZE(buffers) && cu_stream_is_capturing == NULL))
    Py_RETURN_NONE;
  Plan *plan = (Plan *)PyMem_Calloc(1, sizeof(Plan));
  if (plan == NULL)
    return PyErr_NoMemory();
  PyObject *capsule = PyCapsule_New(plan, plan_name, plan_free);
  if (capsule == NULL) {
    PyMem_Free(plan);
    return NULL;
  }
  int ok = 1;
  plan->device = (int32_t)PyLong_AsLong(argv[5]);
  if (PyErr_Occurred() || cu_ctx_get_current(&plan->context) != 0 || plan->context == NULL)
    goto fail;
  plan->debug = Py_NewRef(argv[6]);
  plan->instrumentation = Py_NewRef(argv[7]);
  plan->kernels = Py_NewRef(argv[8]);
  plan->buffers = Py_NewRef(buffers);
  plan->stream = PyLong_AsVoidPtr(argv[10]);
  if (PyErr_Occurred())
    goto fail;
  for (Py_ssize_t b = 0; ok && b < PyTuple_GET_SIZE(buffers); b++) {
    TensorMeta meta;
    ok = plan_tensor(rs, PyTuple_GET_ITEM(buffers, b), &meta) && meta.device_type == device_type_cuda;
    void *pointer = NULL;
    if (ok)
      get_data_ptr(tensor_handle(PyTuple_GET_ITEM(buffers, b)), &pointer);
    plan->buffer_pointers[plan->n_buffers++] = (uint64_t)(uintptr_t)pointer;
  }
  for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(args); i++) {
    PyObject *arg = PyTuple_GET_ITEM(args, i);
    PlanArg *spec = &plan->args[plan->n_args++];
    if (arg == Py_None) {
      spec->kind = PA_NONE;
    } else if (PyObject_TypeCheck(arg, (PyTypeObject *)rs[RS_TENSOR])) {
      spec->kind = PA_TENSOR;
      ok = plan_tensor(rs, arg, &spec->meta) && spec->meta.device_type == device_type_cuda;
    } else {
      spec->kind = PA_VALUE;
      spec->value = Py_NewRef(arg);
    }
  }
  for (Py_ssize_t j = 0; ok && j < PyTuple_GET_SIZE(allocations); j++) {
    ok = plan_tensor(rs, PyTuple_GET_ITEM(allocations, j), &plan->allocs[j]) &&
         plan->allocs[j].device_type == device_type_cuda && plan->allocs[j].aligned;
    plan->n_allocs++;
  }
  for (Py_ssize_t k = 0; ok && k < PyTuple_GET_SIZE(launches); k++) {
    ok = plan_launch(rs, PyTuple_GET_ITEM(launches, k), args, allocations, buffers, &plan->launches[k]);
    if (ok < 0)
      goto fail;
    plan->n_launches++;
  }
  if (ok && PyLong_CheckExact(outputs)) {
    plan->n_outputs = 1;
    plan->outputs[0] = (int)PyLong_AsLong(outputs);
  } else if (ok && PyTuple_CheckExact(outputs) && PyTuple_GET_SIZE(outputs) <= MAX_PLAN_OUTPUTS) {
    plan->tuple_output = 1;
    plan->n_outputs = (int)PyTuple_GET_SIZE(outputs);
    for (int i = 0; i < plan->n_outputs; i++)
      plan->outputs[i] = (int)PyLong_AsLong(PyTuple_GET_ITEM(outputs, i));
  } else {
    ok = 0;
  }
  if (PyErr_Occurred())
    goto fail;
  for (int i = 0; ok && i < plan->n_outputs; i++)
    ok = plan->outputs[i] >= 0 && plan->outputs[i] < plan->n_allocs;
  if (ok)
    return capsule;
  Py_DECREF(capsule);
  Py_RETURN_NONE;
fail:
  Py_DECREF(capsule);
  return NULL;
}

/* 1 when the call's arguments match `plan` (their kinds and metadata in `kinds` / `metas`), else 0. */
static int plan_matches(const Plan *plan, PyObject *const *args, Py_ssize_t n, const int *kinds,
                        const TensorMeta *metas) {
  if (plan->n_args != n)
    return 0;
  for (Py_ssize_t i = 0; i < n; i++) {
    const PlanArg *spec = &plan->args[i];
    if (spec->kind != kinds[i])
      return 0;
    if (spec->kind == PA_TENSOR && !same_meta(&spec->meta, &metas[i]))
      return 0;
    if (spec->kind == PA_VALUE && spec->value != args[i]) {
      if (Py_TYPE(spec->value) != Py_TYPE(args[i]))
        return 0;
      int equal = PyObject_RichCompareBool(spec->value, args[i], Py_EQ);
      if (equal <= 0) {
        PyErr_Clear();
        return 0;
      }
    }
  }
  return 1;
}

/* 1 when nothing set since recording asks for Python's path (see the module docstring), 0 when
   something does, -1 on error. */
static int replay_allowed(PyObject **rs, const Plan *plan) {
  PyObject *flag = PyObject_CallNoArgs(rs[RS_FUNCTORCH]);
  if (flag == NULL)
    return -1;
  Py_DECREF(flag);
  if (flag != Py_False)
    return 0;
  if ((flag = PyObject_CallNoArgs(rs[RS_FUNCTION_MODE])) == NULL)
    return -1;
  Py_DECREF(flag);
  if (flag != Py_False)
    return 0;
  PyObject *current[3] = {PyObject_GetAttr(rs[RS_TENSOR], str_new_empty),
                          PyObject_GetAttr(rs[RS_TORCH], str_empty_like), PyObject_GetAttr(rs[RS_TORCH], str_empty)};
  int same = current[0] == rs[RS_NEW_EMPTY] && current[1] == rs[RS_EMPTY_LIKE] && current[2] == rs[RS_EMPTY];
  int failed = current[0] == NULL || current[1] == NULL || current[2] == NULL;
  for (int i = 0; i < 3; i++)
    Py_XDECREF(current[i]);
  if (failed)
    return -1;
  if (!same)
    return 0;
  for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(plan->kernels); k++) {
    PyObject *state[ST_SIZE] = {NULL};
    state[ST_RUNTIME] = rs[RS_RUNTIME];
    state[ST_HOOK_CHAIN] = rs[RS_HOOK_CHAIN];
    int hook = hooked(state, PyTuple_GET_ITEM(plan->kernels, k));
    if (hook != 0)
      return hook < 0 ? -1 : 0;
  }
  PyObject *debug = PyObject_GetAttr(rs[RS_RUNTIME], str_debug);
  if (debug == NULL)
    return -1;
  int equal = PyObject_RichCompareBool(debug, plan->debug, Py_EQ);
  Py_DECREF(debug);
  if (equal <= 0)
    return equal;
  PyObject *mode = PyObject_GetAttr(rs[RS_COMPILATION], str_instrumentation_mode);
  if (mode == NULL)
    return -1;
  equal = PyObject_RichCompareBool(mode, plan->instrumentation, Py_EQ);
  Py_DECREF(mode);
  if (equal <= 0)
    return equal;
  CUcontext context = NULL;
  return cu_ctx_get_current(&context) == 0 && context == plan->context;
}

/* 1 with the current stream of `plan`'s device in `stream` when the plan may run on it (a plan's
   buffers serve their own stream, outside graph capture), 0 when it may not or the stream is not
   known, -1 on error. */
static int plan_stream(PyObject **rs, const Plan *plan, void **stream) {
  *stream = NULL;
  if (current_cuda_stream != NULL) {
    if (current_cuda_stream(plan->device, stream) != 0)
      return 0;
  } else {
    PyObject *device = PyLong_FromLong(plan->device);
    PyObject *value = device == NULL ? NULL : PyObject_CallOneArg(rs[RS_GET_STREAM], device);
    Py_XDECREF(device);
    if (value == NULL)
      return -1;
    *stream = PyLong_AsVoidPtr(value);
    Py_DECREF(value);
    if (*stream == NULL && PyErr_Occurred())
      return -1;
  }
  if (plan->n_buffers > 0) {
    int capturing = 1;
    if (*stream != plan->stream || cu_stream_is_capturing((CUstream)*stream, &capturing) != 0 || capturing != 0)
      return 0;
  }
  return 1;
}

/* Allocate, launch on `stream` and return `plan`'s outputs for the arguments' data `pointers`;
   MISSING where an allocation fails or is not aligned as recorded, NULL on error. */
static PyObject *run_plan(PyObject **rs, const Plan *plan, const uint64_t *pointers, void *stream) {
  uint64_t alloc_pointers[MAX_PLAN_ALLOCS] = {0};
  PyObject *allocated[MAX_PLAN_ALLOCS] = {NULL};
  PyObject *result = NULL;
  int j = 0;
  for (; j < plan->n_allocs; j++) {
    const TensorMeta *meta = &plan->allocs[j];
    TensorHandle handle = NULL;
    void *pointer = NULL;
    if (empty_strided(meta->dim, meta->sizes, meta->strides, meta->dtype, meta->device_type, meta->device_index,
                      &handle) != 0 || handle == NULL)
      break;
    get_data_ptr(handle, &pointer);
    alloc_pointers[j] = (uint64_t)(uintptr_t)pointer;
    allocated[j] = wrap_tensor(handle);
    delete_tensor(handle);
    if (allocated[j] == NULL)
      goto done;
    if ((uintptr_t)pointer % 16 != 0)
      break;
  }
  if (j < plan->n_allocs) {
    result = Py_NewRef(rs[RS_MISSING]);
    goto done;
  }
  for (int k = 0; k < plan->n_launches; k++) {
    const PlanLaunch *launch = &plan->launches[k];
    uint64_t storage[MAX_ARGS + 2];
    void *params[MAX_ARGS + 2];
    for (int s = 0; s < launch->n_params; s++) {
      int source = launch->source[s];
      storage[s] = source < 0                ? launch->storage[s]
                   : source >= BUFFER_SOURCE ? plan->buffer_pointers[source - BUFFER_SOURCE]
                   : source >= ALLOC_SOURCE  ? alloc_pointers[source - ALLOC_SOURCE]
                                             : pointers[source];
      params[s] = &storage[s];
    }
    CUresult status = cu_launch_kernel((CUfunction)(uintptr_t)launch->function, launch->grid[0], launch->grid[1],
                                       launch->grid[2], launch->block, 1, 1, launch->shared, (CUstream)stream, params,
                                       NULL);
    if (status != 0) {
      const char *message = NULL;
      cu_get_error_string(status, &message);
      PyErr_Format(PyExc_RuntimeError, "CUDA error %d launching a generated kernel: %s", status,
                   message ? message : "unknown");
      goto done;
    }
  }
  if (!plan->tuple_output) {
    result = Py_NewRef(allocated[plan->outputs[0]]);
  } else if ((result = PyTuple_New(plan->n_outputs)) != NULL) {
    for (int i = 0; i < plan->n_outputs; i++)
      PyTuple_SET_ITEM(result, i, Py_NewRef(allocated[plan->outputs[i]]));
  }
done:
  for (int i = 0; i < plan->n_allocs; i++)
    Py_XDECREF(allocated[i]);
  return result;
}

static PyObject *replay(PyObject *self, PyObject *const *argv, Py_ssize_t argc) {
  (void)self;
  if (argc < 3 || !PyTuple_CheckExact(argv[0]) || PyTuple_GET_SIZE(argv[0]) != RS_SIZE ||
      !PyDict_CheckExact(argv[1])) {
    PyErr_SetString(PyExc_TypeError, "replay(state, table: dict, tag, *args)");
    return NULL;
  }
  PyObject **rs = &PyTuple_GET_ITEM(argv[0], 0);
  PyObject *entries = PyDict_GetItemWithError(argv[1], argv[2]); /* borrowed */
  if (entries == NULL) {
    if (PyErr_Occurred()) {
      if (!PyErr_ExceptionMatches(PyExc_TypeError))
        return NULL;
      PyErr_Clear(); /* an unhashable tag has no plan */
    }
    return Py_NewRef(rs[RS_MISSING]);
  }
  PyObject *const *args = argv + 3;
  Py_ssize_t n = argc - 3;
  if (!PyList_CheckExact(entries) || n > MAX_PLAN_ARGS || handle_offset < 0)
    return Py_NewRef(rs[RS_MISSING]);
  int kinds[MAX_PLAN_ARGS];
  TensorMeta metas[MAX_PLAN_ARGS];
  uint64_t pointers[MAX_PLAN_ARGS] = {0};
  int grad = grad_mode_enabled();
  for (Py_ssize_t i = 0; i < n; i++) {
    PyObject *arg = args[i];
    PyTypeObject *type = Py_TYPE(arg);
    if (arg == Py_None) {
      kinds[i] = PA_NONE;
    } else if (type == (PyTypeObject *)rs[RS_TENSOR] || type == (PyTypeObject *)rs[RS_PARAMETER]) {
      kinds[i] = PA_TENSOR;
      void *pointer = NULL;
      if (!read_meta(arg, &metas[i], &pointer))
        return Py_NewRef(rs[RS_MISSING]);
      pointers[i] = (uint64_t)(uintptr_t)pointer;
      if (grad) {
        PyObject *requires = PyObject_GetAttr(arg, str_requires_grad);
        if (requires == NULL)
          return NULL;
        Py_DECREF(requires);
        if (requires != Py_False)
          return Py_NewRef(rs[RS_MISSING]);
      }
    } else if (PyObject_TypeCheck(arg, (PyTypeObject *)rs[RS_TENSOR])) {
      return Py_NewRef(rs[RS_MISSING]); /* a subclass: the custom op's path */
    } else {
      kinds[i] = PA_VALUE;
    }
  }
  /* the list and the chosen plan are held while Python code may run (comparisons, wrapping) */
  Py_INCREF(entries);
  PyObject *capsule = NULL;
  const Plan *plan = NULL;
  void *stream = NULL;
  Py_ssize_t found = 0;
  int usable = 0;
  for (Py_ssize_t e = 0; plan == NULL && e < PyList_GET_SIZE(entries); e++) {
    PyObject *candidate = Py_NewRef(PyList_GET_ITEM(entries, e));
    const Plan *described = (const Plan *)PyCapsule_GetPointer(candidate, plan_name);
    usable = described != NULL && plan_matches(described, args, n, kinds, metas)
                 ? plan_stream(rs, described, &stream)
                 : 0;
    if (usable > 0) {
      capsule = candidate;
      plan = described;
      found = e;
    } else {
      Py_DECREF(candidate);
      if (described == NULL || usable < 0)
        break;
    }
  }
  /* move to front: the next call of a shape in use scans only the shapes used since. Rotating
     the list's references keeps their counts; a comparison's Python code may have changed the
     list, so the plan must still be where it was found. */
  if (found > 0 && found < PyList_GET_SIZE(entries) && PyList_GET_ITEM(entries, found) == capsule) {
    for (Py_ssize_t e = found; e > 0; e--)
      PyList_SET_ITEM(entries, e, PyList_GET_ITEM(entries, e - 1));
    PyList_SET_ITEM(entries, 0, capsule);
  }
  Py_DECREF(entries);
  if (plan == NULL)
    return PyErr_Occurred() ? NULL : Py_NewRef(rs[RS_MISSING]);
  int allowed = replay_allowed(rs, plan);
  PyObject *result = allowed < 0 ? NULL : allowed == 0 ? Py_NewRef(rs[RS_MISSING]) : run_plan(rs, plan, pointers, stream);
  Py_DECREF(capsule);
  return result;
}
"""

METHODS = r"""
    {"replay_init", (PyCFunction)(void (*)(void))replay_init, METH_FASTCALL,
     "replay_init(probe, probe._cdata, libtorch_cpu path, libtorch_cuda path) -> bool"},
    {"replay_plan", (PyCFunction)(void (*)(void))replay_plan, METH_FASTCALL,
     "replay_plan(state, args, allocations, launches, outputs, device, debug, instrumentation, kernels)"},
    {"replay", (PyCFunction)(void (*)(void))replay, METH_FASTCALL, "replay(state, table, tag, *args)"},
"""

STRINGS = ("requires_grad", "empty_like", "empty")
