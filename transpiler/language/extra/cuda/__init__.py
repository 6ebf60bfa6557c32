"""`tl.extra.cuda.libdevice`, the spelling older Triton code uses; the same module as `extra.libdevice`."""
from .. import libdevice

__all__ = ["libdevice"]
