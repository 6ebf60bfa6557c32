"""Representative specializations of the examples' kernels, for the tests that look at generated code.

Each spec names one example kernel and the launch arguments that select one specialization (NumPy arrays
stand in for device arrays: only dtype and 16-byte alignment matter), as the example's own GPU cases launch
it. The snapshot, nvcc, decision and explain tests all read this one list, so they talk about the same code.

`source_of(spec)` gives the `.cu`; `analysis_of(spec)` the IR with its analysis (decision log, widths).
bf16 pointers, which NumPy cannot hold, are asked for with `dtype_override` (the fp16 stand-in's key is
re-typed; nothing else in a specialization key depends on the array).
"""
from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass, field

import numpy as np

from transpiler.cli.demo import _load


def aligned(shape, dtype, offset_elems=0):
    """Zeros of `shape` whose first element sits `offset_elems` elements past a 16-byte boundary."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape)) if shape else 1
    raw = np.zeros(n * dtype.itemsize + 16 + offset_elems * dtype.itemsize + 16, np.uint8)
    start = (-raw.ctypes.data) % 16 + offset_elems * dtype.itemsize
    return raw[start:start + n * dtype.itemsize].view(dtype).reshape(shape)


@dataclass(frozen=True)
class Spec:
    name: str               # snapshot file stem
    example: str            # examples/<example>.py, or tests/<example>.py for a name in TEST_KERNEL_FILES
    kernel: str             # attribute of the module
    make_args: object       # () -> list of positional arguments
    constexprs: dict = field(default_factory=dict)
    num_warps: int = 4
    dtype_override: dict = field(default_factory=dict)   # argument name -> dtype name ("bf16")
    num_stages: int = 3
    arch: str | None = None  # the source written for this architecture ("sm_90a": warpgroup MMA), else any

    @property
    def module(self):
        return example_module(self.example)

    @property
    def kernel_obj(self):
        return getattr(self.module, self.kernel)


# Kernel files of the tests that hold kernels no example has (a scan, atomics), with their own NumPy checks.
TEST_KERNEL_FILES = ("scan_kernels", "atomic_kernels")


@functools.lru_cache(maxsize=None)
def example_module(name):
    if name in TEST_KERNEL_FILES:
        return importlib.import_module(name)
    return _load(name)


def _vector_add(n=1_000_003):
    return lambda: [aligned(64, np.float32), aligned(64, np.float32), aligned(64, np.float32), n]


def _softmax(dtype, n_cols, stride):
    return lambda: [aligned(64, dtype), aligned(64, dtype), stride, stride, n_cols]


def _layernorm(dtype, n_cols, stride):
    return lambda: [aligned(64, dtype), aligned(64, dtype), aligned(64, dtype), aligned(64, dtype),
                    aligned(64, np.float32), aligned(64, np.float32), stride, stride, n_cols, 1e-5]


def _giou(dtype, n_boxes):
    return lambda: [aligned(64, dtype), aligned(64, dtype), aligned(64, np.float32), aligned(64, np.bool_),
                    n_boxes, 1e-7]


def _cumsum_rows(dtype, n):
    return lambda: [aligned(64, dtype), aligned(64, dtype), n]


def _histogram(n):
    return lambda: [aligned(64, np.int32), aligned(64, np.int32), n]


def _matmul(m=4096, n=4096, k=4096):
    return lambda: [aligned(64, np.float16), aligned(64, np.float16), aligned(64, np.float16), m, n, k, k, 1, n, 1,
                    n, 1]


def _attention(seq=4096, head_dim=128, heads=32):
    return lambda: [aligned(64, np.float16) for _ in range(4)] + [0.088, heads, seq] + \
        [heads * seq * head_dim, seq * head_dim, head_dim, 1] * 4


ATTENTION_128 = dict(HEAD_DIM=128, BLOCK_M=128, BLOCK_N=64, CAUSAL=True)

MATMUL_128 = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, ACTIVATION="leaky_relu")

SPECS = [
    # vector_add's GPU case: fp32, n = 1_000_003 (not a multiple of the block), BLOCK 1024, 4 warps.
    Spec("vector_add_fp32", "vector_add", "add_kernel", _vector_add(), dict(BLOCK=1024), 4),
    # softmax 8192 x 4000: rows 16-byte aligned (stride a multiple of 16), BLOCK 4096, 16 warps.
    Spec("softmax_fp32_4000", "softmax", "softmax_kernel", _softmax(np.float32, 4000, 4000), dict(BLOCK=4096), 16),
    # softmax 1823 x 781: the row stride is not a multiple of 16, so rows are not known to be aligned.
    Spec("softmax_fp32_781", "softmax", "softmax_kernel", _softmax(np.float32, 781, 781), dict(BLOCK=1024), 4),
    Spec("softmax_fp16_4096", "softmax", "softmax_kernel", _softmax(np.float16, 4093, 4096), dict(BLOCK=4096), 16),
    # layernorm 2049 x 4000 fp16 (Triton's rule: BLOCK 4096 -> 8 warps), and the same in bf16.
    Spec("layernorm_fp16_4000", "layernorm", "layernorm_kernel", _layernorm(np.float16, 4000, 4000),
         dict(BLOCK=4096), 8),
    Spec("layernorm_bf16_4000", "layernorm", "layernorm_kernel", _layernorm(np.float16, 4000, 4000),
         dict(BLOCK=4096), 8, dict(X="bf16", Y="bf16", W="bf16", B="bf16")),
    # giou_loss 64 x 10007 boxes, fp32 and fp16, BLOCK 512.
    Spec("giou_loss_fp32", "giou_loss", "giou_loss_kernel", _giou(np.float32, 64 * 10007), dict(BLOCK=512), 4),
    Spec("giou_loss_fp16", "giou_loss", "giou_loss_kernel", _giou(np.float16, 64 * 10007), dict(BLOCK=512), 4),
    # matmul 4096^3 fp16, 128x128x64 blocks, 4 warps, 3 stages: mma.sync for any device, wgmma for sm_90a.
    Spec("matmul_fp16_128x128x64", "matmul", "matmul_kernel", _matmul(), MATMUL_128, 4),
    Spec("matmul_fp16_128x128x64_sm90a", "matmul", "matmul_kernel", _matmul(), MATMUL_128, 4, arch="sm_90a"),
    # a scan: one row of 1000 fp32 per program, its prefix sum (tests/scan_kernels.py, the GPU tests' case).
    Spec("cumsum_rows_fp32_1000", "scan_kernels", "cumsum_rows_kernel", _cumsum_rows(np.float32, 1000),
         dict(BLOCK=1024, REVERSE=False), 4),
    # atomics: a histogram of int32 bin numbers, one atomic add per element (tests/atomic_kernels.py).
    Spec("histogram_int32", "atomic_kernels", "histogram_kernel", _histogram(3001), dict(BLOCK=1024), 4),
    # causal flash attention, fp16, head_dim 128, 128 x 64 blocks on 8 warps (two warpgroups): both products on
    # wgmma for sm_90a, P @ V with P in registers (the register-A form) and its group left in flight (4 stages).
    Spec("attention_fp16_d128_causal_sm90a", "attention", "attention_kernel", _attention(), ATTENTION_128, 8,
         num_stages=4, arch="sm_90a"),
]
BY_NAME = {s.name: s for s in SPECS}


def specialization_key(kernel, args, constexprs, num_warps, dtype_override=None):
    """(key, values) of a launch, with pointer element types re-typed by `dtype_override`."""
    values = kernel._bind_args(tuple(args), dict(constexprs))
    key = kernel.spec_key(values)
    if dtype_override:
        key = tuple(("ptr", dtype_override[n], part[2]) if n in dtype_override and part[0] == "ptr" else part
                    for n, part in zip(kernel.arg_names, key))
    return key, values


def source_for(kernel, args, constexprs, num_warps=4, dtype_override=None, num_stages=3, arch=None):
    """The `.cu` of one specialization (what `kernel.cuda_source` returns, plus bf16 by override)."""
    key, values = specialization_key(kernel, args, constexprs, num_warps, dtype_override)
    return kernel.variant(key, values, num_warps, num_stages, arch).source


def source_of(spec: Spec) -> str:
    return source_for(spec.kernel_obj, spec.make_args(), spec.constexprs, spec.num_warps, spec.dtype_override,
                      spec.num_stages, spec.arch)


def analysis_for(kernel, args, constexprs, num_warps=4, dtype_override=None, num_stages=3, arch=None):
    """(ir, analysis) of one specialization: the IR the emitter sees and the decisions made about it."""
    from transpiler.analysis import analyze
    from transpiler.parse import build_kernel_ir
    key, values = specialization_key(kernel, args, constexprs, num_warps, dtype_override)
    options = kernel.variant_options(key, num_warps, num_stages, arch)
    ir = build_kernel_ir(kernel.fn, kernel._arg_specs(key, values), options)
    return ir, analyze(ir, options)


def analysis_of(spec: Spec):
    return analysis_for(spec.kernel_obj, spec.make_args(), spec.constexprs, spec.num_warps, spec.dtype_override,
                        spec.num_stages, spec.arch)
