"""Tensor maps for kernels whose loops load by TMA: encoded on the host from a launch's arguments, cached.

A variant that loads tiles through the Tensor Memory Accelerator (analysis/tma.py) takes, after its arguments,
one `const __grid_constant__ tp::TensorMap` per tiled load and an `int` saying whether all of them encoded.
Each map is described by the emitter (`EmittedKernel.tensor_maps`): the slot of its base pointer, its element
type, its extents (inner, outer) and row stride in elements as polynomials of the launch's slot values
(`[[coefficient, [slot, ...]], ...]`), its box and its swizzle. A launch evaluates them, and the map for each
distinct (base, extents, stride) is encoded once with the driver's `cuTensorMapEncodeTiled` (through ctypes on
libcuda) and kept. When an argument makes a map impossible (an extent of 0 or past 2^32, an unaligned base or
stride), or the driver refuses it, the flag is 0 and the kernel takes its cp.async loop instead: the maps only
ever speed a launch up, never change what it computes.
"""
from __future__ import annotations

import ctypes
import operator

MAP_BYTES = 128
_DTYPES = {"uint8": 0, "int8": 0, "fp8e4nv": 0, "fp8e5": 0, "uint16": 1, "int16": 1, "int32": 3, "uint32": 2,
           "fp16": 6, "fp32": 7, "bf16": 9}           # CUtensorMapDataType
_SWIZZLE = {32: 1, 64: 2, 128: 3}                     # CUtensorMapSwizzle
_L2_PROMOTION_128B = 2
_ITEMSIZE = {"uint8": 1, "int8": 1, "fp8e4nv": 1, "fp8e5": 1, "uint16": 2, "int16": 2, "int32": 4, "uint32": 4,
             "fp16": 2, "fp32": 4, "bf16": 2}
_CACHE_LIMIT = 4096

_encode = None


def _encoder():
    global _encode
    if _encode is None:
        from .driver import _library
        fn = _library().cuTensorMapEncodeTiled
        u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                       ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        fn.restype = ctypes.c_int
        _encode = fn
    return _encode


def evaluate(poly, values) -> int:
    total = 0
    for coef, slots in poly:
        term = coef
        for s in slots:
            term *= int(values[s])
        total += term
    return total


class _Map:
    """One 64-byte aligned 128-byte buffer holding an encoded map."""

    __slots__ = ("raw", "address")

    def __init__(self):
        self.raw = ctypes.create_string_buffer(MAP_BYTES + 64)
        base = ctypes.addressof(self.raw)
        self.address = (base + 63) // 64 * 64


def encode(dtype, base, extents, stride_elems, box, swizzle):
    """A `_Map` of the 2-D tiled map, or None when the arguments or the driver do not allow one."""
    es = _ITEMSIZE[dtype]
    stride = stride_elems * es
    if base % 16 or stride % 16 or not 0 < stride < 1 << 40 or any(not 0 < e <= 1 << 32 for e in extents):
        return None
    m = _Map()
    dims = (ctypes.c_uint64 * 2)(*extents)
    strides = (ctypes.c_uint64 * 1)(stride)
    boxes = (ctypes.c_uint32 * 2)(*box)
    ones = (ctypes.c_uint32 * 2)(1, 1)
    status = _encoder()(m.address, _DTYPES[dtype], 2, base, dims, strides, boxes, ones, 0, _SWIZZLE[swizzle],
                        _L2_PROMOTION_128B, 0)
    return m if status == 0 else None


class TensorMaps:
    """The tensor map parameters of one variant: `addresses(values)` gives, per map, the address of its encoded
    bytes for a launch's slot values, then the address of the int flag (1: all encoded).

    A launch reads only the slots the maps are computed from (bases, extents, strides), through one
    `operator.itemgetter`, and looks that tuple up once: the addresses of every map and the flag come back as
    one list. Measured before (a dictionary lookup, polynomials evaluated and a tuple built per map) at 12 us
    per launch of the bench's 2-map matmul on the H200's host and on this project's CPU machine, the
    difference between the TMA and the cp.async variants' launch rates (bench/NOTES.md)."""

    def __init__(self, specs):
        self.specs = [dict(s) for s in specs]
        self.cache = {}                       # slot values read -> addresses of the maps and of the flag
        self.maps = {}                        # (spec index, base, extents, stride) -> _Map or None
        self._blank = _Map()                  # passed where a map could not be made (the kernel ignores it)
        self._flags = (ctypes.c_int * 2)(0, 1)
        slots = sorted({spec["base"] for spec in self.specs}
                       | {s for spec in self.specs for poly in (*spec["extents"], spec["stride"])
                          for _, term in poly for s in term})
        self._read = operator.itemgetter(*slots) if len(slots) > 1 else (lambda values: values[slots[0]])

    def _map(self, index, spec, values):
        base = int(values[spec["base"]])
        extents = tuple(evaluate(p, values) for p in spec["extents"])
        stride = evaluate(spec["stride"], values)
        key = (index, base, extents, stride)
        m = self.maps.get(key, False)
        if m is False:
            if len(self.maps) >= _CACHE_LIMIT:     # the launch cache holds their addresses: both go
                self.maps.clear()
                self.cache.clear()
            m = self.maps[key] = encode(spec["dtype"], base, extents, stride, tuple(spec["box"]), spec["swizzle"])
        return m

    def _encode_all(self, values):
        maps = [self._map(i, spec, values) for i, spec in enumerate(self.specs)]
        ready = all(m is not None for m in maps)
        flag = ctypes.addressof(self._flags) + (ctypes.sizeof(ctypes.c_int) if ready else 0)
        return [(m or self._blank).address for m in maps] + [flag]

    def addresses(self, values):
        key = self._read(values)
        found = self.cache.get(key)
        if found is None:
            if len(self.cache) >= _CACHE_LIMIT:
                self.cache.clear()
            found = self.cache[key] = self._encode_all(values)
        return found


__all__ = ["TensorMaps", "encode", "evaluate"]
