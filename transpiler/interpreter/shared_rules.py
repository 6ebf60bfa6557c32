"""The builtins the interpreter runs through the compiler's typing rules (`eager.py`), not rules of its own.

Each name here is interpreted by `parse/semantic*.py`'s rule of the same name, against the eager builder: the
typing, promotion, broadcasting and refusals are the compiler's, the evaluation of the ops it makes is
`evaluate.py`'s. Adding a builtin whose ops `evaluate.py` evaluates is one more name here; the operators of
blocks (`tensor.py`) go the same way. The other modules' rules are still the interpreter's own.
"""
from __future__ import annotations

import functools
import inspect

from .. import atomics
from ..language import catalogue, core
from ..parse.typing_rules import RULES as TYPING_RULES
from ..language.extra.libdevice import ARITY
from .eager import apply_rule
from .registry import rule

ELEMENTWISE_BUILTINS = (
    "where", "minimum", "maximum", "clamp", "fma", "cdiv", "div_rn", "fdiv", "umulhi", "cast",
    "inline_asm_elementwise",
    *(f.name for f in catalogue.FUNCTIONS),
    *(f"libdevice.{name}" for name in ARITY),
)



def _shared_rule(name):
    """The interpreter rule of `name`: its typing rule applied eagerly, with that rule's signature (less the
    builder), which must be the builtin's; a rule of any number of operands (libdevice's) has its builtin's."""
    apply = functools.partial(apply_rule, name)
    typing = inspect.signature(TYPING_RULES[name])
    parameters = list(typing.parameters.values())[1:]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters):
        typing, parameters = inspect.signature(core.BUILTINS[name]), None
    apply.__signature__ = typing if parameters is None else typing.replace(parameters=parameters)
    return rule(name)(apply)


CREATION_AND_SHAPE_BUILTINS = (
    "program_id", "num_programs", "arange", "full", "zeros", "zeros_like", "full_like", "to_tensor",
    "broadcast_to", "broadcast", "expand_dims", "reshape", "view", "trans", "permute",
    "multiple_of", "max_contiguous", "max_constancy",
)

BLOCK_BUILTINS = (
    "sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce", "cumsum", "cumprod", "associative_scan",
    "dot", "dot_scaled", "atomic_cas", *(f"atomic_{op}" for op in atomics.RMW_OPS),
    "softmax", "ravel", "swizzle2d", "flip", "join", "split", "interleave", "cat", "sort", "topk", "histogram",
    "gather",
    "load", "store", "make_block_ptr", "advance", "make_tensor_descriptor", "load_tensor_descriptor",
    "store_tensor_descriptor", "assume", "static_assert", "debug_barrier",
)

for _name in ELEMENTWISE_BUILTINS + CREATION_AND_SHAPE_BUILTINS + BLOCK_BUILTINS:
    _shared_rule(_name)
