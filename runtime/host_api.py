"""The host-side names Triton kernels' Python wrappers reach for, where Triton keeps them.

`triton.runtime.driver.active` is `active` here (reachable as `transpiler.runtime.driver.active`): the current
device and stream, the target (`GPUTarget("cuda", 90, 32)`), device properties with Triton's keys, the
benchmarker. `TensorWrapper` / `reinterpret` (Triton's `triton.reinterpret`) live in `args.py`, beside the
other argument kinds. Everything is answered through the driver calls the launch path already makes, and
torch or CuPy (whichever the process uses) for the current device and stream.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass

# cuDeviceGetAttribute numbers of the properties Triton's `get_device_properties` returns, under its keys.
_PROPERTIES = {
    "max_shared_mem": 97,          # MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    "max_num_regs": 12,            # MAX_REGISTERS_PER_BLOCK
    "multiprocessor_count": 16,    # MULTIPROCESSOR_COUNT
    "warpSize": 10,                # WARP_SIZE
    "sm_clock_rate": 13,           # CLOCK_RATE (kHz)
    "mem_clock_rate": 36,          # MEMORY_CLOCK_RATE (kHz)
    "mem_bus_width": 37,           # GLOBAL_MEMORY_BUS_WIDTH (bits)
}
_COMPUTE_CAPABILITY = (75, 76)     # COMPUTE_CAPABILITY_MAJOR, _MINOR


@dataclass(frozen=True)
class GPUTarget:
    """Triton's `GPUTarget`: the backend, the architecture (compute capability as an int: 90) and warp size."""

    backend: str
    arch: int
    warp_size: int


def _attribute(attribute, device):
    from .compiler import device_attribute
    return device_attribute(attribute, device)


def _device_index(device):
    if device is None:
        return active.get_current_device()
    index = getattr(device, "index", device)
    return active.get_current_device() if index is None else int(index)


class _Utils:
    """`driver.active.utils`."""

    def get_device_properties(self, device=None) -> dict:
        index = _device_index(device)
        return {key: _attribute(attr, index) for key, attr in _PROPERTIES.items()}


class ActiveDriver:
    """`triton.runtime.driver.active` for CUDA."""

    utils = _Utils()

    @staticmethod
    def is_active():
        return True

    def get_current_device(self) -> int:
        if "torch" in sys.modules:
            return sys.modules["torch"].cuda.current_device()
        import cupy
        return cupy.cuda.runtime.getDevice()

    def set_current_device(self, device):
        if "torch" in sys.modules:
            sys.modules["torch"].cuda.set_device(device)
        else:
            import cupy
            cupy.cuda.runtime.setDevice(int(device))

    def get_current_stream(self, device=None) -> int:
        from .launcher import cupy_stream, torch_stream
        index = _device_index(device)
        return torch_stream(index) if "torch" in sys.modules else cupy_stream(index)

    def get_current_target(self) -> GPUTarget:
        index = self.get_current_device()
        major, minor = (_attribute(a, index) for a in _COMPUTE_CAPABILITY)
        return GPUTarget("cuda", major * 10 + minor, _attribute(_PROPERTIES["warpSize"], index))

    def get_active_torch_device(self):
        import torch
        return torch.device("cuda", self.get_current_device())

    def get_device_interface(self):
        import torch
        return torch.cuda

    def get_benchmarker(self):
        from .bench import do_bench
        return do_bench

    def get_empty_cache_for_benchmark(self):
        import torch
        return torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")

    def clear_cache(self, cache):
        cache.zero_()


active = ActiveDriver()


_allocator = None


def set_allocator(allocator):
    """Triton's `triton.set_allocator(fn)`: Triton calls `fn(size, alignment, stream)` for the global scratch its
    in-kernel tensor descriptors (TMA descriptors made on the device) live in. Our descriptors need no scratch
    (parse/semantic_tensor_desc.py), so the allocator is kept and never called."""
    global _allocator
    _allocator = allocator
