"""Atomics: which instruction each atomic becomes, which threads perform it, and who learns the old values.

Decides, for every `atomic_rmw` / `atomic_cas`, from whether its result is used, its memory order and the
layout the layout pass gave it:
- the instruction: `red` (no result) when the old values are unused and the order is relaxed or release
  (PTX's `red` has no acquire forms), otherwise `atom`;
- the performers: a layout that holds an element in several lanes or warps (a block smaller than the
  program, or a broadcast) lets only the lanes and warps whose replicated index bits are zero perform it, and
  a scalar atomic runs in thread 0 only, so every element is updated exactly once per program;
- whether the old values go through shared memory: when they are used and some threads did not perform the
  atomic, the performers write them and every thread reads its copy back after a barrier.
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..parse.ir import OpKind

ATOMIC_OPS = (OpKind.ATOMIC_RMW, OpKind.ATOMIC_CAS)
_RED_OPS = ("add", "max", "min", "and", "or", "xor")
_RED_ORDERS = ("relaxed", "release")


@dataclass(frozen=True)
class AtomicPlan:
    instruction: str        # "atom" or "red"
    returns_old: bool       # the old values are used
    lane_guard: int         # lanes whose index has one of these bits set skip the atomic (copies)
    warp_guard: int         # the same for warps
    scalar: bool            # a scalar atomic: thread 0 performs it
    broadcast: bool         # the old values reach the other threads through shared memory


def _used_values(kernel):
    used = set()
    for op in kernel.walk():
        used.update(op.operands)
    return used


def plan_atomics(kernel, layouts, decisions) -> dict:
    used = _used_values(kernel)
    plans = {}
    for op in kernel.walk():
        if op.name not in ATOMIC_OPS:
            continue
        returns_old = op.result in used
        # bf16 add stays an atom: before sm_90 it is a compare-and-swap loop, which needs the old value.
        red = (not returns_old and op.name == OpKind.ATOMIC_RMW and op.attrs["op"] in _RED_OPS
               and op.attrs["sem"] in _RED_ORDERS and op.result.dtype is not dtypes.bfloat16)
        scalar = not op.result.shape
        if scalar:
            lane_guard = warp_guard = 0
            replicated = True
            who = "thread 0 performs it"
        else:
            layout = layouts.layout[op.result]
            assert all(any(b) for b in layout.reg), "atomic layouts hold each element in one register"
            lane_guard, warp_guard = layout.replicated_lane_mask(), layout.replicated_warp_mask()
            replicated = bool(lane_guard or warp_guard)
            tests = [f"{name} & {bits} == 0" for name, bits in (("lane", lane_guard), ("warp", warp_guard)) if bits]
            who = (f"threads with {' and '.join(tests)} perform it (the others hold copies)"
                   if replicated else "each element is held by one thread, which performs it")
        broadcast = returns_old and replicated
        plan = AtomicPlan("red" if red else "atom", returns_old, lane_guard, warp_guard, scalar, broadcast)
        plans[op] = plan
        kind = op.attrs.get("op", "cas")
        if returns_old:
            why = "the old values are used"
        elif red:
            why = "the old values are unused"
        elif kind not in _RED_OPS:
            why = f"the old values are unused, but red has no {kind} form"
        elif op.result.dtype is dtypes.bfloat16:
            why = "the old values are unused, but bf16 add needs them before sm_90 (a compare-and-swap loop)"
        else:
            why = f"the old values are unused, but red has no {op.attrs['sem']} form"
        decisions.add("atomics", op, f"atomic {kind}: {plan.instruction}.{op.attrs['sem']}.{op.attrs['scope']}; "
                      f"{who}" + ("; old values shared through shared memory" if broadcast else ""), why)
    return plans
