"""`TensorDescriptor`, the host-side tensor descriptor Triton 3.6 passes to kernels (`triton.tools.tensor_descriptor`).

A kernel parameter given one sees a tensor descriptor (`desc.load([...])`, `desc.store([...], x)`,
`isinstance(desc, tl.tensor_descriptor)`), exactly as if it had called `tl.make_tensor_descriptor(base, shape,
strides, block_shape, padding)` itself: the launch passes the base pointer, the shape and the strides as
parameters of their own (specialized like any argument, so a last stride of 1 is the constant 1) and the block
shape and padding as part of the specialization (`runtime/tuple_args.py`). No TMA descriptor is built on the
host; on sm_90a the descriptor's loads that feed a `tl.dot` loop may still be staged by TMA, as in-kernel
descriptors' are. `block_shape` may be changed before a launch (autotuning pre-hooks do), as in Triton.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List

PADDINGS = ("zero", "nan")


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        rank = len(self.shape)
        if not 1 <= rank <= 5:
            raise ValueError(f"a tensor descriptor has 1 to 5 dimensions, not {rank}")
        if len(self.strides) != rank or len(self.block_shape) != rank:
            raise ValueError(f"a tensor descriptor needs one stride and one block size per dimension: shape "
                             f"{list(self.shape)}, strides {list(self.strides)}, block_shape {list(self.block_shape)}")
        if int(self.strides[-1]) != 1:
            raise ValueError(f"a tensor descriptor's last dimension must be contiguous (stride 1), not "
                             f"{self.strides[-1]}")
        if self.padding not in PADDINGS:
            raise ValueError(f"padding must be 'zero' or 'nan', not {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding: str = "zero") -> "TensorDescriptor":
        """The descriptor of a whole array (torch tensor, CuPy or NumPy array), strides in elements."""
        return TensorDescriptor(tensor, list(tensor.shape), list(element_strides(tensor)), block_shape, padding)


def element_strides(array) -> tuple:
    """Strides in elements: torch's `stride()`, or NumPy / CuPy byte strides divided by the item size."""
    stride = getattr(array, "stride", None)
    if callable(stride):
        return tuple(stride())
    return tuple(s // array.itemsize for s in array.strides)
