/* The compiled launch path of `kernel[grid](...)`: runtime/native_launch.py builds this file with the host's C
 * compiler and Python's headers on first use (cached on disk) and explains why it exists.
 *
 * A `Table` (one per kernel) holds launch plans, each found by the facts of one call: per parameter its kind
 * (a CuPy array, a torch tensor, an int, a float, a bool, None, a constexpr), its type, and what the launch key
 * reads from it (an array's element type, device and address alignment; an int's C type, whether it is 1 and its
 * low bits; a constexpr's value or, for strings and the types the table is told are immutable, the object), then
 * num_warps, num_stages, the code-changing environment's token (`options.ENVIRONMENT[0]`) and the device. The
 * Python launch key (`launch_key.py`) is a function of exactly these facts, so equal facts select the launcher
 * the Python path would use; the facts are finer than the key in places (the object's identity for a constexpr
 * string), which can only make a plan be learned twice. A plan is learned from Python (`learn`, which runs the
 * kernel's binder and looks the launcher up) and holds the CUfunction, its context, block, dynamic shared memory,
 * the parameters' C types (`struct` codes), a row loop's blocks, the stream provider and the driver's functions.
 *
 * A `GridLaunch` (one per kernel and tuple grid, what `kernel[grid]` returns; for a callable grid one per
 * `kernel[grid]`, the grid asked at each launch as `Kernel._grid` asks it) takes a call: it binds the
 * arguments (by position, then parameters and launch options by keyword), computes the facts, finds the plan,
 * packs the parameters into a buffer on the stack and calls cuLaunchKernel (the GIL released during the call, as
 * CuPy's binding does; the caller's context put back when the arrays' device is another one) on the explicit
 * `stream=` (an int, a CuPy stream, a torch stream: read as `launcher.stream_handle` reads it) or else the current
 * stream the plan's provider answers (CuPy's per thread, torch's). Tables are shared by threads: the GIL guards
 * them, and no Python code runs between finding a plan and copying what the launch needs out of it. Anything else --
 * an argument of another type, an unknown keyword, a value that does not fit its C type, no plan yet, a launcher
 * the compiled path does not take (debug mode, TMA tensor maps, by-value parameters), a driver error -- calls the
 * Python launch function (`fallback`) with the call's own arguments, which launches or raises the located error.
 * A failed cuLaunchKernel launched nothing, so the Python path redoing it launches at most once. A callable grid
 * is called after the plan is found; one answering other than 1-3 positive ints within the limits is called
 * again by the Python path, which converts, refuses or skips (a zero) as it always does.
 *
 * No CUDA header is needed: the three driver functions are declared here and their addresses come from Python
 * (ctypes over libcuda, or a test's fakes). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shared, void *stream, void **params, void **extra);
typedef int (*ctx_get_fn)(void **ctx);
typedef int (*ctx_set_fn)(void *ctx);

#define MAX_PARAMS 64        /* kernels with more parameters launch through the Python path */
#define MAX_SLOTS (MAX_PARAMS + 1)
#define MAX_ENTRIES 16       /* plans per kernel; the least recently used one is dropped past this */
#define NO_ROW_LOOP (-2)
#define EVERY_BLOCK (-1)
#define INT32_MAX_GRID 2147483647LL
/* The rows a row loop computes ahead of the last one it runs, at most (runtime/launcher.py RowLoopLauncher
   ROWS_AHEAD, transpiler/targets.py MAX_ROWS_AHEAD): `row + ROWS_AHEAD x programs` must stay an int. */
#define ROWS_AHEAD 3LL

enum { K_CUPY = 1, K_TORCH, K_INT, K_FLOAT, K_BOOL, K_NONE,
       C_INT, C_FLOAT, C_BOOL, C_NONE, C_OBJECT };   /* runtime parameters, then constexprs */

typedef struct {
    PyObject *type;     /* the argument's type (borrowed in a call's facts, owned in a plan) */
    PyObject *object;   /* an array's dtype, an identity-compared constexpr (same ownership) or NULL */
    long long bits;     /* what the key reads besides: see `facts_of` */
    int kind;
} Fact;

/* What a launch needs from its plan (copied out of the plan for each launch). */
typedef struct {
    int python_only;               /* a launcher exists, but the Python path launches it */
    void *function, *context;
    unsigned block, shared;
    int n_slots;
    char codes[MAX_SLOTS + 1];     /* struct codes of the slots, a row loop's grid-x slot last */
    long long row_blocks, per_block;
    PyObject *name, *stream_fn;    /* the kernel's name (for recent_launches), the stream provider */
    int stream_ptr_attr;           /* the provider returns a stream object: take its `.ptr` */
    launch_fn launch;
    ctx_get_fn ctx_get;
    ctx_set_fn ctx_set;
} How;

typedef struct {
    Fact facts[MAX_PARAMS];
    long num_warps, num_stages;
    long long environment, device;
    How how;
} Plan;

typedef struct {
    PyObject_HEAD
    int n_params;
    unsigned char constexpr_mask[MAX_PARAMS];
    PyObject *names;          /* tuple of interned parameter names */
    PyObject *learn;          /* learn(args in parameter order, num_warps, num_stages) -> plan tuple or None */
    PyObject *environment;    /* options.ENVIRONMENT: [token or None] */
    PyObject *record;         /* recent_launches.append */
    PyObject *cupy_type, *torch_type, *immutable_types;
    PyObject *types_from;     /* launch_key's globals, where those two types are learned */
    PyObject *grid_fallback;  /* grid_fallback(grid, *args, **kwargs): the Python launch for a callable grid */
    Plan *plans[MAX_ENTRIES];
    int n_plans;
    unsigned long long compiled, handed_over, learned;
} Table;

typedef struct {
    PyObject_HEAD
    Table *table;
    PyObject *fallback;
    unsigned gx, gy, gz;      /* a tuple grid, checked when the object was made */
    PyObject *grid_fn;        /* or a callable grid (Triton's `lambda meta: ...`), called at each launch */
    int grid_first;           /* the fallback takes the grid before the call's arguments (the table's own) */
    vectorcallfunc vectorcall;
} GridLaunch;

static PyObject *s_num_warps, *s_num_stages, *s_stream, *s_data, *s_ptr, *s_device_id, *s_dtype, *s_data_ptr,
                *s_get_device, *s_cuda_stream;

static inline long long low_pow2(unsigned long long bits) {
    unsigned b = (unsigned)(bits & 15);
    return b ? (long long)(b & (0u - b)) : 16;
}

/* Takes CuPy's array type and torch's tensor type from launch_key's globals (`_cupy_ndarray`, `_torch_tensor`:
 * set there when one is first seen, replaced by tests); 1 when either changed. */
static int learn_types(Table *t) {
    static const char *names[2] = {"_cupy_ndarray", "_torch_tensor"};
    PyObject **slots[2] = {&t->cupy_type, &t->torch_type};
    int changed = 0;
    for (int k = 0; k < 2; k++) {
        PyObject *tp = PyDict_GetItemString(t->types_from, names[k]);
        if (tp && tp != *slots[k]) {
            Py_INCREF(tp);
            Py_SETREF(*slots[k], tp);
            changed = 1;
        }
    }
    return changed;
}

/* ---- the facts of one call ------------------------------------------------------------------------------ */

/* Fills facts[i], values[i] (a slot's raw 64 bits) and floats[i] for the call's arguments; returns 0, or -1 for
 * a call the Python path takes (no Python error left set). `refs` collects the new references taken. */
static int facts_of(Table *t, PyObject **args, Fact *facts, unsigned long long *values, double *floats,
                    long long *device, int *torch, PyObject **refs, int *n_refs) {
    *device = -1;
    *torch = 0;
    for (int i = 0; i < t->n_params; i++) {
        PyObject *a = args[i];
        PyObject *tp = (PyObject *)Py_TYPE(a);
        Fact *f = &facts[i];
        f->type = tp;
        f->object = NULL;
        f->bits = 0;
        if (t->constexpr_mask[i]) {
            if (tp == (PyObject *)&PyLong_Type) {
                int overflow;
                f->bits = PyLong_AsLongLongAndOverflow(a, &overflow);
                if (overflow || (f->bits == -1 && PyErr_Occurred())) { PyErr_Clear(); return -1; }
                f->kind = C_INT;
            } else if (tp == (PyObject *)&PyBool_Type) {
                f->kind = C_BOOL;
                f->bits = a == Py_True;
            } else if (tp == (PyObject *)&PyFloat_Type) {
                double d = PyFloat_AS_DOUBLE(a);
                memcpy(&f->bits, &d, sizeof d);
                f->kind = C_FLOAT;
            } else if (a == Py_None) {
                f->kind = C_NONE;
            } else if (tp == (PyObject *)&PyUnicode_Type ||
                       (t->immutable_types && PySequence_Contains(t->immutable_types, tp) == 1)) {
                f->kind = C_OBJECT;
                f->object = a;
            } else {
                PyErr_Clear();
                return -1;
            }
            continue;
        }
        if (tp == t->cupy_type) {
            PyObject *data = PyObject_GetAttr(a, s_data);
            if (!data) { PyErr_Clear(); return -1; }
            PyObject *ptr = PyObject_GetAttr(data, s_ptr), *dev = PyObject_GetAttr(data, s_device_id);
            Py_DECREF(data);
            PyObject *dtype = PyObject_GetAttr(a, s_dtype);
            if (dtype) refs[(*n_refs)++] = dtype;
            if (!ptr || !dev || !dtype) { Py_XDECREF(ptr); Py_XDECREF(dev); PyErr_Clear(); return -1; }
            unsigned long long p = PyLong_AsUnsignedLongLong(ptr);
            long long d = PyLong_AsLongLong(dev);
            Py_DECREF(ptr);
            Py_DECREF(dev);
            if (PyErr_Occurred() || d < 0) { PyErr_Clear(); return -1; }
            f->kind = K_CUPY;
            f->object = dtype;
            f->bits = d * 32 + low_pow2(p);
            values[i] = p;
            if (*device >= 0 && d != *device) return -1;     /* two devices: the Python path says which */
            *device = d;
        } else if (tp == (PyObject *)&PyLong_Type) {
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(a, &overflow);
            unsigned long long u = (unsigned long long)v;
            int cls;                               /* 0 int32, 1 int64, 2 uint64: launch_key.integer_dtype */
            if (overflow > 0) {
                u = PyLong_AsUnsignedLongLong(a);
                if (PyErr_Occurred()) { PyErr_Clear(); return -1; }
                cls = 2;
            } else if (overflow < 0 || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return -1;
            } else {
                cls = (v >= -2147483648LL && v <= 2147483647LL) ? 0 : 1;
            }
            f->kind = K_INT;
            f->bits = cls * 64 + (cls == 0 && v == 1) * 32 + low_pow2(u);
            values[i] = u;
        } else if (tp == (PyObject *)&PyFloat_Type) {
            f->kind = K_FLOAT;
            floats[i] = PyFloat_AS_DOUBLE(a);
        } else if (tp == (PyObject *)&PyBool_Type) {
            f->kind = K_BOOL;                      /* the key says int1 whatever the value */
            values[i] = a == Py_True;
        } else if (a == Py_None) {
            f->kind = K_NONE;
            values[i] = 0;
        } else if (tp == t->torch_type) {
            PyObject *ptr = PyObject_CallMethodNoArgs(a, s_data_ptr);
            PyObject *dev = ptr ? PyObject_CallMethodNoArgs(a, s_get_device) : NULL;
            PyObject *dtype = dev ? PyObject_GetAttr(a, s_dtype) : NULL;
            if (dtype) refs[(*n_refs)++] = dtype;
            if (!ptr || !dev || !dtype) { Py_XDECREF(ptr); Py_XDECREF(dev); PyErr_Clear(); return -1; }
            unsigned long long p = PyLong_AsUnsignedLongLong(ptr);
            long long d = PyLong_AsLongLong(dev);
            Py_DECREF(ptr);
            Py_DECREF(dev);
            if (PyErr_Occurred()) { PyErr_Clear(); return -1; }
            if (d < 0) return -1;                  /* host memory: refused by the Python path */
            f->kind = K_TORCH;
            f->object = dtype;
            f->bits = d * 32 + low_pow2(p);
            values[i] = p;
            *torch = 1;
            if (*device >= 0 && d != *device) return -1;
            *device = d;
        } else if (learn_types(t)) {
            i--;                                   /* launch_key has met CuPy's or torch's type since: again */
        } else {
            return -1;
        }
    }
    return *device >= 0 ? 0 : -1;    /* no array: the Python path asks for the current device */
}

static int same_facts(const Fact *a, const Fact *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i].kind != b[i].kind || a[i].type != b[i].type || a[i].object != b[i].object ||
            a[i].bits != b[i].bits)
            return 0;
    return 1;
}

/* ---- packing -------------------------------------------------------------------------------------------- */

/* Writes one slot of struct code `code` from an integer (`is_int`) or a float; 0, or -1 where `struct` would
 * refuse the value (the Python path then names the argument); `unsigned64`: `bits` is an unsigned value past
 * int64's range (a uint64 argument). */
static int pack_slot(char code, int kind, int unsigned64, unsigned long long bits, double d,
                     unsigned long long *slot) {
    *slot = 0;
    long long v = (long long)bits;
    switch (code) {
    case 'Q':
        if (kind == K_CUPY || kind == K_TORCH || kind == K_NONE || (kind == K_INT && (unsigned64 || v >= 0))) {
            *slot = bits;
            return 0;
        }
        return -1;
    case 'q':
        if (kind != K_INT || unsigned64) return -1;
        *slot = bits;
        return 0;
    case 'i': case 'I': case 'h': case 'H': case 'b': case 'B': {
        if (kind != K_INT || unsigned64) return -1;
        long long lo, hi;
        switch (code) {
        case 'i': lo = -2147483648LL; hi = 2147483647LL; break;
        case 'I': lo = 0; hi = 4294967295LL; break;
        case 'h': lo = -32768; hi = 32767; break;
        case 'H': lo = 0; hi = 65535; break;
        case 'b': lo = -128; hi = 127; break;
        default: lo = 0; hi = 255; break;
        }
        if (v < lo || v > hi) return -1;
        if (code == 'i' || code == 'I') { uint32_t x = (uint32_t)v; memcpy(slot, &x, 4); }
        else if (code == 'h' || code == 'H') { uint16_t x = (uint16_t)v; memcpy(slot, &x, 2); }
        else { uint8_t x = (uint8_t)v; memcpy(slot, &x, 1); }
        return 0;
    }
    case '?':
        if (kind != K_BOOL) return -1;
        *slot = bits ? 1 : 0;
        return 0;
    case 'd':
        if (kind != K_FLOAT) return -1;
        memcpy(slot, &d, 8);
        return 0;
    case 'f': {
        if (kind != K_FLOAT) return -1;
        float x = (float)d;
        if (isinf(x) && !isinf(d)) return -1;          /* as PyFloat_Pack4: too large for a float */
        memcpy(slot, &x, 4);
        return 0;
    }
    case 'e':
        if (kind != K_FLOAT) return -1;
        if (PyFloat_Pack2(d, (char *)slot, 1) < 0) { PyErr_Clear(); return -1; }
        return 0;
    default:
        return -1;
    }
}

/* ---- learning a plan ------------------------------------------------------------------------------------ */

static void plan_free(Plan *p, int n_params) {
    for (int i = 0; i < n_params; i++) {
        Py_XDECREF(p->facts[i].type);
        Py_XDECREF(p->facts[i].object);
    }
    Py_XDECREF(p->how.name);
    Py_XDECREF(p->how.stream_fn);
    PyMem_Free(p);
}

static unsigned long long as_address(PyObject *o, int *error) {
    if (o == Py_None) return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(o);
    if (PyErr_Occurred()) *error = 1;
    return v;
}

/* The plan `learn` answered (a tuple, see native_launch.py's `plan_tuple`), or NULL (no Python error set) when
 * it answered None or the facts it saw are not these. */
static Plan *learn_plan(Table *t, PyObject **args, PyObject *num_warps, PyObject *num_stages, const Fact *facts,
                        long nw, long ns, long long environment, long long device) {
    PyObject *ordered = PyTuple_New(t->n_params);
    if (!ordered) { PyErr_Clear(); return NULL; }
    for (int i = 0; i < t->n_params; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(ordered, i, args[i]);
    }
    PyObject *r = PyObject_CallFunctionObjArgs(t->learn, ordered, num_warps, num_stages, NULL);
    Py_DECREF(ordered);
    if (!r) { PyErr_Clear(); return NULL; }
    if (r == Py_None) { Py_DECREF(r); return NULL; }
    Plan *p = NULL;
    long long env, dev, python_only, block, shared, row_blocks, per_block, stream_ptr_attr;
    PyObject *function, *context, *codes, *name, *stream_fn, *launch, *ctx_get, *ctx_set;
    if (!PyArg_ParseTuple(r, "LLLOOLLUULLOLOOO", &env, &dev, &python_only, &function, &context, &block, &shared,
                          &codes, &name, &row_blocks, &per_block, &stream_fn, &stream_ptr_attr, &launch, &ctx_get,
                          &ctx_set))
        goto fail;
    if (env != environment || dev != device) goto fail;       /* the environment changed meanwhile */
    Py_ssize_t n_codes = PyUnicode_GetLength(codes);
    if (n_codes > MAX_SLOTS) goto fail;
    p = PyMem_Calloc(1, sizeof(Plan));
    if (!p) goto fail;
    memcpy(p->facts, facts, sizeof(Fact) * t->n_params);
    for (int i = 0; i < t->n_params; i++) {
        Py_XINCREF(p->facts[i].type);
        Py_XINCREF(p->facts[i].object);
    }
    p->num_warps = nw;
    p->num_stages = ns;
    p->environment = environment;
    p->device = device;
    p->how.python_only = (int)python_only;
    int error = 0;
    p->how.function = (void *)(uintptr_t)as_address(function, &error);
    p->how.context = (void *)(uintptr_t)as_address(context, &error);
    p->how.launch = (launch_fn)(uintptr_t)as_address(launch, &error);
    p->how.ctx_get = (ctx_get_fn)(uintptr_t)as_address(ctx_get, &error);
    p->how.ctx_set = (ctx_set_fn)(uintptr_t)as_address(ctx_set, &error);
    if (error) { PyErr_Clear(); plan_free(p, t->n_params); p = NULL; goto fail; }
    p->how.block = (unsigned)block;
    p->how.shared = (unsigned)shared;
    p->how.n_slots = (int)n_codes;
    const char *c = PyUnicode_AsUTF8(codes);
    if (!c) { PyErr_Clear(); plan_free(p, t->n_params); p = NULL; goto fail; }
    memcpy(p->how.codes, c, (size_t)n_codes);
    p->how.row_blocks = row_blocks;
    p->how.per_block = per_block > 0 ? per_block : 1;
    p->how.stream_ptr_attr = (int)stream_ptr_attr;
    Py_INCREF(name);
    p->how.name = name;
    Py_INCREF(stream_fn);
    p->how.stream_fn = stream_fn;
    if (!p->how.python_only && (!p->how.launch || !p->how.ctx_get || !p->how.ctx_set)) p->how.python_only = 1;
    Py_DECREF(r);
    return p;
fail:
    PyErr_Clear();
    Py_DECREF(r);
    return NULL;
}

/* Puts `p` first; returns the plan it displaced past MAX_ENTRIES (or NULL), for the caller to free once it has
 * copied what it launches with: freeing drops references, which may run Python code, during which another
 * thread may change the table. */
static Plan *add_plan(Table *t, Plan *p) {
    Plan *dropped = NULL;
    if (t->n_plans == MAX_ENTRIES) dropped = t->plans[--t->n_plans];
    memmove(&t->plans[1], &t->plans[0], sizeof(Plan *) * t->n_plans);
    t->plans[0] = p;
    t->n_plans++;
    t->learned++;
    return dropped;
}

/* Whether a plan for these facts exists; it is then first (most recently used first). No Python code runs. */
static int find_plan(Table *t, const Fact *facts, long nw, long ns, long long environment, long long device) {
    for (int k = 0; k < t->n_plans; k++) {
        Plan *p = t->plans[k];
        if (p->num_warps == nw && p->num_stages == ns && p->environment == environment && p->device == device &&
            same_facts(p->facts, facts, t->n_params)) {
            if (k) {
                memmove(&t->plans[1], &t->plans[0], sizeof(Plan *) * k);
                t->plans[0] = p;
            }
            return 1;
        }
    }
    return 0;
}

/* ---- the call ------------------------------------------------------------------------------------------- */

static PyObject *hand_over(GridLaunch *g, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    g->table->handed_over++;
    if (!g->grid_first) return PyObject_Vectorcall(g->fallback, args, nargsf, kwnames);
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[16];
    PyObject **stack = total < 16 ? small : PyMem_Malloc(sizeof(PyObject *) * (size_t)(total + 1));
    if (!stack) return PyErr_NoMemory();
    stack[0] = g->grid_fn;
    memcpy(stack + 1, args, sizeof(PyObject *) * (size_t)total);
    PyObject *r = PyObject_Vectorcall(g->fallback, stack, (size_t)nargs + 1, kwnames);
    if (stack != small) PyMem_Free(stack);
    return r;
}

static int name_index(Table *t, PyObject *name) {
    for (int i = 0; i < t->n_params; i++)
        if (PyTuple_GET_ITEM(t->names, i) == name) return i;
    return -1;
}

static int equal_names(PyObject *a, PyObject *b) {
    return a == b || (PyUnicode_Check(a) && PyUnicode_Compare(a, b) == 0);
}

/* `obj.name` when it is there, else NULL with no error set (no AttributeError made and dropped: a torch stream
 * has no `.ptr`, and making the exception would cost more than the rest of the lookup). */
static PyObject *optional_attr(PyObject *obj, PyObject *name) {
    PyObject *value = NULL;
#if PY_VERSION_HEX >= 0x030D0000
    if (PyObject_GetOptionalAttr(obj, name, &value) < 0) PyErr_Clear();
#else
    if (_PyObject_LookupAttr(obj, name, &value) < 0) PyErr_Clear();
#endif
    return value;
}

/* An explicit `stream=` as runtime/launcher.py's `stream_handle` reads it: an int, else the int `.ptr` of a CuPy
 * stream (`Stream`, `ExternalStream`), else the int `.cuda_stream` of a torch stream. 0, or -1 for anything
 * else (an int subclass, a negative or too large int, an object with neither): the Python path converts it or
 * refuses it with its located error. */
static int explicit_stream_handle(PyObject *stream, unsigned long long *handle) {
    PyObject *h = NULL;
    if (PyLong_CheckExact(stream)) {
        Py_INCREF(stream);
        h = stream;
    } else if (!PyLong_Check(stream)) {
        PyObject *names[2] = {s_ptr, s_cuda_stream};
        for (int k = 0; k < 2 && !h; k++) {
            h = optional_attr(stream, names[k]);
            if (h && PyLong_Check(h) && !PyLong_CheckExact(h)) { Py_DECREF(h); return -1; }  /* Python's to take */
            if (h && !PyLong_Check(h)) Py_CLEAR(h);        /* not a handle: the next name, as the Python path */
        }
    }
    if (!h) return -1;
    *handle = PyLong_AsUnsignedLongLong(h);
    Py_DECREF(h);
    if (PyErr_Occurred()) { PyErr_Clear(); return -1; }
    return 0;
}

static const unsigned long long MAX_GRID[3] = {2147483647ull, 65535ull, 65535ull};   /* every device since sm_30 */

/* A callable grid's answer for these arguments, as `Kernel._grid` asks it: meta = {parameter: value, num_warps,
 * num_stages}. 1: `grid` holds positive ints within the limits; 0: another answer (an int or tuple the Python
 * path converts, a zero, a dimension past the limit: it calls the grid again and acts on it); -1: the grid
 * raised (the error is set and propagates as on the Python path). */
static int call_grid(GridLaunch *g, PyObject **ordered, long nw, long ns, unsigned grid[3]) {
    Table *t = g->table;
    PyObject *meta = PyDict_New();
    if (!meta) return -1;
    for (int i = 0; i < t->n_params; i++)
        if (PyDict_SetItem(meta, PyTuple_GET_ITEM(t->names, i), ordered[i]) < 0) { Py_DECREF(meta); return -1; }
    PyObject *w = PyLong_FromLong(nw), *st = PyLong_FromLong(ns);
    int bad = !w || !st || PyDict_SetItem(meta, s_num_warps, w) < 0 || PyDict_SetItem(meta, s_num_stages, st) < 0;
    Py_XDECREF(w);
    Py_XDECREF(st);
    if (bad) { Py_DECREF(meta); return -1; }
    PyObject *r = PyObject_CallOneArg(g->grid_fn, meta);
    Py_DECREF(meta);
    if (!r) return -1;
    PyObject *items[3] = {r, NULL, NULL};
    Py_ssize_t n = 1;
    if (PyTuple_CheckExact(r)) {
        n = PyTuple_GET_SIZE(r);
        for (Py_ssize_t k = 0; k < n && k < 3; k++) items[k] = PyTuple_GET_ITEM(r, k);
    }
    int ok = n >= 1 && n <= 3;
    for (Py_ssize_t k = 0; ok && k < 3; k++) {
        if (k >= n) { grid[k] = 1; continue; }
        if (!PyLong_CheckExact(items[k])) { ok = 0; break; }
        unsigned long long v = PyLong_AsUnsignedLongLong(items[k]);
        if (PyErr_Occurred()) { PyErr_Clear(); ok = 0; break; }
        if (v == 0 || v > MAX_GRID[k]) { ok = 0; break; }
        grid[k] = (unsigned)v;
    }
    Py_DECREF(r);
    return ok;
}

static PyObject *grid_launch_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    GridLaunch *g = (GridLaunch *)self;
    Table *t = g->table;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int n = t->n_params;
    if (nargs > n) return hand_over(g, args, nargsf, kwnames);
    PyObject *ordered[MAX_PARAMS];
    memset(ordered, 0, sizeof(PyObject *) * n);
    for (Py_ssize_t i = 0; i < nargs; i++) ordered[i] = args[i];
    PyObject *num_warps = NULL, *num_stages = NULL, *stream = NULL;
    Py_ssize_t n_kw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t j = 0; j < n_kw; j++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, j), *value = args[nargs + j];
        /* The launch options first, as the Python launch function's signature takes them; names compared by
         * pointer (interned), then by value for a name that is not the interned one. */
        PyObject **option = key == s_num_warps ? &num_warps : key == s_num_stages ? &num_stages
                          : key == s_stream ? &stream : NULL;
        int i = option ? -1 : name_index(t, key);
        if (!option && i < 0) {
            option = equal_names(key, s_num_warps) ? &num_warps : equal_names(key, s_num_stages) ? &num_stages
                   : equal_names(key, s_stream) ? &stream : NULL;
            for (int k = 0; k < n && i < 0 && !option; k++)
                if (equal_names(key, PyTuple_GET_ITEM(t->names, k))) i = k;
        }
        if (option) { *option = value; continue; }
        if (i < 0) return hand_over(g, args, nargsf, kwnames);
        if (ordered[i]) return hand_over(g, args, nargsf, kwnames);      /* given twice */
        ordered[i] = value;
    }
    for (int i = 0; i < n; i++)
        if (!ordered[i]) return hand_over(g, args, nargsf, kwnames);     /* a default: the Python path */
    long nw = 4, ns = 3;
    if (num_warps) {
        if (Py_TYPE(num_warps) != &PyLong_Type) return hand_over(g, args, nargsf, kwnames);
        nw = PyLong_AsLong(num_warps);
        if (nw == -1 && PyErr_Occurred()) { PyErr_Clear(); return hand_over(g, args, nargsf, kwnames); }
    }
    if (num_stages) {
        if (Py_TYPE(num_stages) != &PyLong_Type) return hand_over(g, args, nargsf, kwnames);
        ns = PyLong_AsLong(num_stages);
        if (ns == -1 && PyErr_Occurred()) { PyErr_Clear(); return hand_over(g, args, nargsf, kwnames); }
    }
    unsigned long long stream_handle = 0;
    int explicit_stream = 0;
    if (stream && stream != Py_None) {
        if (explicit_stream_handle(stream, &stream_handle) < 0) return hand_over(g, args, nargsf, kwnames);
        explicit_stream = 1;
    }
    PyObject *token = PyList_GET_ITEM(t->environment, 0);
    if (Py_TYPE(token) != &PyLong_Type) return hand_over(g, args, nargsf, kwnames);   /* not computed yet */
    long long environment = PyLong_AsLongLong(token);

    Fact facts[MAX_PARAMS];
    unsigned long long values[MAX_PARAMS];
    double floats[MAX_PARAMS];
    PyObject *refs[MAX_PARAMS];
    int n_refs = 0, torch;
    long long device;
    PyObject *result = NULL;
    How plan = {0};
    Plan *dropped = NULL;     /* a plan to free once `plan` is copied */
    int found = facts_of(t, ordered, facts, values, floats, &device, &torch, refs, &n_refs) == 0;
    if (found) {
        found = find_plan(t, facts, nw, ns, environment, device);
        if (!found) {
            PyObject *nw_obj = num_warps ? (Py_INCREF(num_warps), num_warps) : PyLong_FromLong(nw);
            PyObject *ns_obj = num_stages ? (Py_INCREF(num_stages), num_stages) : PyLong_FromLong(ns);
            Plan *p = (nw_obj && ns_obj) ? learn_plan(t, ordered, nw_obj, ns_obj, facts, nw, ns, environment, device)
                                         : NULL;
            Py_XDECREF(nw_obj);
            Py_XDECREF(ns_obj);
            PyErr_Clear();
            /* `learn` ran Python code, during which another thread may have learned the same plan: one kept. */
            if (p) dropped = find_plan(t, facts, nw, ns, environment, device) ? p : add_plan(t, p);
            found = p != NULL;
        }
    }
    if (found) {
        /* A copy: the stream provider below runs Python code, during which another thread may drop the plan. */
        plan = t->plans[0]->how;
        Py_INCREF(plan.name);
        Py_INCREF(plan.stream_fn);
    }
    if (dropped) plan_free(dropped, n);
    for (int k = 0; k < n_refs; k++) Py_DECREF(refs[k]);
    if (!found || plan.python_only) {
        if (found) { Py_DECREF(plan.name); Py_DECREF(plan.stream_fn); }
        return hand_over(g, args, nargsf, kwnames);
    }

    if (!explicit_stream) {
        PyObject *dev = PyLong_FromLongLong(device);
        PyObject *s = dev ? PyObject_CallOneArg(plan.stream_fn, dev) : NULL;
        Py_XDECREF(dev);
        if (s && plan.stream_ptr_attr) Py_SETREF(s, PyObject_GetAttr(s, s_ptr));
        if (s) stream_handle = PyLong_AsUnsignedLongLong(s);
        Py_XDECREF(s);
        if (!s || PyErr_Occurred()) { PyErr_Clear(); goto python; }
    }
    unsigned grid[3] = {g->gx, g->gy, g->gz};
    if (g->grid_fn) {
        int answered = call_grid(g, ordered, nw, ns, grid);
        if (answered < 0) {
            Py_DECREF(plan.name);
            Py_DECREF(plan.stream_fn);
            return NULL;
        }
        if (!answered) goto python;
    }
    unsigned launch_gx = grid[0];
    int n_runtime = 0;
    unsigned long long slots[MAX_SLOTS];
    void *params[MAX_SLOTS];
    for (int i = 0; i < n; i++) {
        if (t->constexpr_mask[i]) continue;
        if (n_runtime >= plan.n_slots ||
            pack_slot(plan.codes[n_runtime], facts[i].kind, facts[i].kind == K_INT && facts[i].bits >= 128,
                      values[i], floats[i], &slots[n_runtime]) < 0)
            goto python;
        n_runtime++;
    }
    if (plan.row_blocks != NO_ROW_LOOP) {       /* runtime/launcher.py's RowLoopLauncher, the same rule */
        long long needed = ((long long)grid[0] + plan.per_block - 1) / plan.per_block;
        long long blocks = plan.row_blocks == EVERY_BLOCK || needed < plan.row_blocks ? needed : plan.row_blocks;
        if (grid[0] + blocks * plan.per_block * ROWS_AHEAD > INT32_MAX_GRID || n_runtime >= plan.n_slots ||
            pack_slot(plan.codes[n_runtime], K_INT, 0, grid[0], 0.0, &slots[n_runtime]) < 0)
            goto python;
        n_runtime++;
        launch_gx = (unsigned)blocks;
    }
    if (n_runtime != plan.n_slots) goto python;
    for (int j = 0; j < n_runtime; j++) params[j] = &slots[j];

    void *current = NULL;
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    status = plan.ctx_get(&current);
    if (status == 0) {
        if (current == plan.context) {
            status = plan.launch(plan.function, launch_gx, grid[1], grid[2], plan.block, 1, 1, plan.shared,
                                 (void *)(uintptr_t)stream_handle, params, NULL);
        } else if ((status = plan.ctx_set(plan.context)) == 0) {
            /* The arrays live on another device than the current one (or this thread has no context yet). */
            status = plan.launch(plan.function, launch_gx, grid[1], grid[2], plan.block, 1, 1, plan.shared,
                                 (void *)(uintptr_t)stream_handle, params, NULL);
            plan.ctx_set(current);
        }
    }
    Py_END_ALLOW_THREADS
    if (status != 0) goto python;        /* nothing was launched: the Python path launches or words the error */
    t->compiled++;
    PyObject *item = Py_BuildValue("(OIII)", plan.name, launch_gx, grid[1], grid[2]);
    PyObject *recorded = item ? PyObject_CallOneArg(t->record, item) : NULL;
    Py_XDECREF(item);
    if (recorded) {
        Py_DECREF(recorded);
        Py_INCREF(Py_None);
        result = Py_None;
    }
    Py_DECREF(plan.name);
    Py_DECREF(plan.stream_fn);
    return result;
python:
    Py_DECREF(plan.name);
    Py_DECREF(plan.stream_fn);
    return hand_over(g, args, nargsf, kwnames);
}

/* ---- the types ------------------------------------------------------------------------------------------ */

static void table_clear_plans(Table *t) {
    for (int k = 0; k < t->n_plans; k++) plan_free(t->plans[k], t->n_params);
    t->n_plans = 0;
}

static int table_init(Table *t, PyObject *args, PyObject *kw) {
    PyObject *names, *mask, *learn, *environment, *record, *immutable, *types_from, *grid_fallback = Py_None;
    static char *kwlist[] = {"names", "constexpr_mask", "learn", "environment", "record", "immutable_types",
                             "types_from", "grid_fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!O!OO!OOO!|O", kwlist, &PyTuple_Type, &names, &PyTuple_Type,
                                     &mask, &learn, &PyList_Type, &environment, &record, &immutable, &PyDict_Type,
                                     &types_from, &grid_fallback))
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(names);
    if (n > MAX_PARAMS || PyTuple_GET_SIZE(mask) != n || PyList_GET_SIZE(environment) != 1) {
        PyErr_SetString(PyExc_ValueError, "names and constexpr_mask of one kernel of at most 64 parameters");
        return -1;
    }
    PyObject *interned = PyTuple_New(n);
    if (!interned) return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(names, i);
        if (!PyUnicode_Check(s)) { Py_DECREF(interned); PyErr_SetString(PyExc_TypeError, "names"); return -1; }
        Py_INCREF(s);
        PyUnicode_InternInPlace(&s);
        PyTuple_SET_ITEM(interned, i, s);
        t->constexpr_mask[i] = (unsigned char)PyObject_IsTrue(PyTuple_GET_ITEM(mask, i));
    }
    table_clear_plans(t);
    t->n_params = (int)n;
    Py_XSETREF(t->names, interned);
    PyObject **fields[] = {&t->learn, &t->environment, &t->record, &t->immutable_types, &t->types_from,
                           &t->cupy_type, &t->torch_type, &t->grid_fallback};
    PyObject *values[] = {learn, environment, record, immutable, types_from, Py_None, Py_None, grid_fallback};
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        Py_INCREF(values[k]);
        Py_XSETREF(*fields[k], values[k]);
    }
    return 0;
}

static int table_traverse(Table *t, visitproc visit, void *arg) {
    Py_VISIT(t->names);
    Py_VISIT(t->learn);
    Py_VISIT(t->environment);
    Py_VISIT(t->record);
    Py_VISIT(t->cupy_type);
    Py_VISIT(t->torch_type);
    Py_VISIT(t->immutable_types);
    Py_VISIT(t->types_from);
    Py_VISIT(t->grid_fallback);
    for (int k = 0; k < t->n_plans; k++) {
        Plan *p = t->plans[k];
        Py_VISIT(p->how.name);
        Py_VISIT(p->how.stream_fn);
        for (int i = 0; i < t->n_params; i++) {
            Py_VISIT(p->facts[i].type);
            Py_VISIT(p->facts[i].object);
        }
    }
    return 0;
}

static int table_clear(Table *t) {
    table_clear_plans(t);
    Py_CLEAR(t->names);
    Py_CLEAR(t->learn);
    Py_CLEAR(t->environment);
    Py_CLEAR(t->record);
    Py_CLEAR(t->cupy_type);
    Py_CLEAR(t->torch_type);
    Py_CLEAR(t->immutable_types);
    Py_CLEAR(t->types_from);
    Py_CLEAR(t->grid_fallback);
    return 0;
}

static void table_dealloc(Table *t) {
    PyObject_GC_UnTrack(t);
    table_clear(t);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

static PyObject *table_counts(Table *t, PyObject *unused) {
    return Py_BuildValue("{sKsKsKsi}", "compiled", t->compiled, "handed_over", t->handed_over, "learned",
                         t->learned, "plans", t->n_plans);
}

static PyObject *table_forget(Table *t, PyObject *unused) {
    table_clear_plans(t);
    Py_RETURN_NONE;
}

static PyObject *table_plans(Table *t, PyObject *unused) {
    PyObject *list = PyList_New(0);
    for (int k = 0; list && k < t->n_plans; k++) {
        Plan *p = t->plans[k];
        const How *h = &p->how;
        PyObject *item = Py_BuildValue(
            "{sKsKsIsIss#sLsLsLsLsi}", "function", (unsigned long long)(uintptr_t)h->function,
            "context", (unsigned long long)(uintptr_t)h->context, "block", h->block, "shared", h->shared,
            "codes", h->codes, (Py_ssize_t)h->n_slots, "row_blocks", h->row_blocks, "per_block", h->per_block,
            "device", p->device, "environment", p->environment, "python_only", h->python_only);
        if (!item || PyList_Append(list, item) < 0) { Py_XDECREF(item); Py_CLEAR(list); break; }
        Py_DECREF(item);
    }
    return list;
}

static PyTypeObject GridLaunchType;
static PyObject *grid_launch_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames);

/* table.grid(grid_fn): `kernel[grid_fn]` for a callable grid, its fallback the table's `grid_fallback` (one
 * object made per `kernel[...]`, as Triton code writes a new lambda at each call). */
static PyObject *table_grid(Table *t, PyObject *grid_fn) {
    if (t->grid_fallback == Py_None || !PyCallable_Check(grid_fn)) {
        PyErr_SetString(PyExc_TypeError, "a callable grid, on a table made with grid_fallback");
        return NULL;
    }
    GridLaunch *g = (GridLaunch *)GridLaunchType.tp_alloc(&GridLaunchType, 0);
    if (!g) return NULL;
    Py_INCREF(t);
    g->table = t;
    Py_INCREF(t->grid_fallback);
    g->fallback = t->grid_fallback;
    Py_INCREF(grid_fn);
    g->grid_fn = grid_fn;
    g->grid_first = 1;
    g->gx = g->gy = g->gz = 1;
    g->vectorcall = grid_launch_call;
    return (PyObject *)g;
}

static PyMethodDef table_methods[] = {
    {"grid", (PyCFunction)table_grid, METH_O, "kernel[grid] for a callable grid"},
    {"counts", (PyCFunction)table_counts, METH_NOARGS, "launches made here, handed to Python, plans learned"},
    {"forget", (PyCFunction)table_forget, METH_NOARGS, "drop every plan"},
    {"plans", (PyCFunction)table_plans, METH_NOARGS, "the plans, most recently used first"},
    {NULL}};

static PyTypeObject TableType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_transpiler_launch.Table",
    .tp_basicsize = sizeof(Table),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,     /* a table and its kernel refer to each other */
    .tp_traverse = (traverseproc)table_traverse,
    .tp_clear = (inquiry)table_clear,
    .tp_doc = "a kernel's launch plans",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)table_init,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
};

static PyObject *grid_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *table, *fallback, *grid_fn = Py_None;
    unsigned long gx, gy, gz;
    static char *kwlist[] = {"table", "gx", "gy", "gz", "fallback", "grid_fn", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!kkkO|O", kwlist, &TableType, &table, &gx, &gy, &gz, &fallback,
                                     &grid_fn))
        return NULL;
    if (!gx || !gy || !gz || gx > MAX_GRID[0] || gy > MAX_GRID[1] || gz > MAX_GRID[2]) {
        PyErr_SetString(PyExc_ValueError, "a grid of positive ints within the hardware limits");
        return NULL;
    }
    GridLaunch *g = (GridLaunch *)type->tp_alloc(type, 0);
    if (!g) return NULL;
    Py_INCREF(table);
    g->table = (Table *)table;
    Py_INCREF(fallback);
    g->fallback = fallback;
    g->gx = (unsigned)gx;
    g->gy = (unsigned)gy;
    g->gz = (unsigned)gz;
    if (grid_fn != Py_None) {
        Py_INCREF(grid_fn);
        g->grid_fn = grid_fn;
    }
    g->vectorcall = grid_launch_call;
    return (PyObject *)g;
}

static int grid_traverse(GridLaunch *g, visitproc visit, void *arg) {
    Py_VISIT(g->table);
    Py_VISIT(g->fallback);
    Py_VISIT(g->grid_fn);
    return 0;
}

static int grid_clear(GridLaunch *g) {
    Py_CLEAR(g->table);
    Py_CLEAR(g->fallback);
    Py_CLEAR(g->grid_fn);
    return 0;
}

static void grid_dealloc(GridLaunch *g) {
    PyObject_GC_UnTrack(g);
    grid_clear(g);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

static PyObject *grid_get_fallback(GridLaunch *g, void *unused) {
    Py_INCREF(g->fallback);
    return g->fallback;
}

static PyObject *grid_get_table(GridLaunch *g, void *unused) {
    Py_INCREF(g->table);
    return (PyObject *)g->table;
}

static PyGetSetDef grid_getset[] = {
    {"fallback", (getter)grid_get_fallback, NULL, "the Python launch function for this grid", NULL},
    {"table", (getter)grid_get_table, NULL, "the kernel's plans", NULL},
    {NULL}};

static PyTypeObject GridLaunchType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_transpiler_launch.GridLaunch",
    .tp_basicsize = sizeof(GridLaunch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC,  /* kernel <-> grid object */
    .tp_traverse = (traverseproc)grid_traverse,
    .tp_clear = (inquiry)grid_clear,
    .tp_doc = "kernel[grid]: the compiled launch path",
    .tp_new = grid_new,
    .tp_dealloc = (destructor)grid_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(GridLaunch, vectorcall),
    .tp_getset = grid_getset,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_transpiler_launch", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__transpiler_launch(void) {
    if (PyType_Ready(&TableType) < 0 || PyType_Ready(&GridLaunchType) < 0) return NULL;
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_num_warps, "num_warps"}, {&s_num_stages, "num_stages"}, {&s_stream, "stream"}, {&s_data, "data"},
        {&s_ptr, "ptr"}, {&s_device_id, "device_id"}, {&s_dtype, "dtype"}, {&s_data_ptr, "data_ptr"},
        {&s_get_device, "get_device"}, {&s_cuda_stream, "cuda_stream"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(*names[i].slot = PyUnicode_InternFromString(names[i].text))) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&TableType);
    Py_INCREF(&GridLaunchType);
    if (PyModule_AddObject(m, "Table", (PyObject *)&TableType) < 0 ||
        PyModule_AddObject(m, "GridLaunch", (PyObject *)&GridLaunchType) < 0 ||
        PyModule_AddIntConstant(m, "MAX_PARAMS", MAX_PARAMS) < 0)
        return NULL;
    return m;
}
