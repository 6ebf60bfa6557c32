"""Every typing rule registered: importing this module fills `semantic.RULES` from all the `semantic_*` modules.

The IR builder imports it, and so does the interpreter (`interpreter/eager.py`), which runs the same rules
without the builder's libcst (its import costs a third of a second).
"""
from . import (semantic, semantic_creation, semantic_memory, semantic_shapes,  # noqa: F401  (they register rules)
               semantic_elementwise, semantic_debug, semantic_atomic, semantic_block_ptr, semantic_dot,
               semantic_inline_asm, semantic_libdevice, semantic_reduce, semantic_scan, semantic_standard,
               semantic_tensor_desc, semantic_map)

RULES = semantic.RULES
