"""`tl.extra.cuda.libdevice`, the spelling older Triton code uses; the same module as `extra.libdevice`
(also importable as `transpiler.language.extra.cuda.libdevice`)."""
import sys

from .. import libdevice

sys.modules[__name__ + ".libdevice"] = libdevice

__all__ = ["libdevice"]
