"""Lowering of `load` and `store`: the vector width comes from the vectorize pass; this spells the access.

A run of `vec` registers is one access of `vec * itemsize` bytes. When the mask is not proven uniform over a
run, the run is checked as a whole: runs fully inside the mask take the wide path and only a ragged run falls
back to element accesses (the exemplar's "16-byte runs + one ragged run").
"""
from __future__ import annotations

import re

from .. import cspell
from ..emitter import Read, lowering
from ...parse.ir import OpKind

_CACHE = {"": "tp::CACHE_DEFAULT", ".ca": "tp::CACHE_CA", ".cg": "tp::CACHE_CG", ".cs": "tp::CACHE_CS",
          ".cv": "tp::CACHE_CV", ".lu": "tp::CACHE_LU", ".wb": "tp::CACHE_WB", ".wt": "tp::CACHE_WT"}
_EVICT = {"": "tp::EVICT_NORMAL", "evict_normal": "tp::EVICT_NORMAL", "evict_first": "tp::EVICT_FIRST",
          "evict_last": "tp::EVICT_LAST"}


def _cache(op):
    return _CACHE[op.attrs.get("cache", "")]


def _load_call(n, op, volatile=False) -> str:
    """The device helper reading `n` consecutive elements with `op`'s cache and eviction options: `tp::load<n>`
    for the default ones; an eviction hint takes `tp::load_evict` (the hint replaces the cache modifier, as it
    did before volatile), a volatile load `tp::load_volatile`."""
    evict = _EVICT[op.attrs.get("eviction", "")]
    if evict != "tp::EVICT_NORMAL":
        return f"tp::load_evict<{n}, {evict}>"
    if volatile:
        return f"tp::load_volatile<{n}>"
    return _with_cache("tp::load", n, _cache(op))


def _with_cache(helper, n, cache) -> str:
    """`tp::load<n>` / `tp::store<n>`, or their `_cached` forms for a cache modifier other than the default."""
    return f"{helper}<{n}>" if cache == "tp::CACHE_DEFAULT" else f"{helper}_cached<{n}, {cache}>"


def _all_of(read, vec):
    return " && ".join(f"{read.at(f'r + {j}') if j else read.at('r')}" for j in range(vec))


def whole_run(em, op, mask, vec):
    """The test that the run of `vec` lanes from register `r` lies inside `op`'s mask: its last lane where the
    mask is a prefix of each run (analysis/mask_runs.py), else every lane."""
    if op in em.analysis.mask_prefix:
        return mask.at(f"(r + {vec - 1})") + " /* a prefix mask: the last lane decides */"
    return _all_of(mask, vec)


def _window(em, ctx, layout, vec):
    """The runs (`v_lo`, `v_hi`) and registers (`r_lo`, `r_hi`) an access covers: all, or a tail's one run."""
    ctx["v_lo"], ctx["v_hi"] = em.register_range(layout, vec)
    ctx["r_lo"], ctx["r_hi"] = em.register_range(layout)


def _combined_load(em, group):
    """One n-field access per element for a group of loads of neighbouring fields (load_combining.py)."""
    leader = group.leader
    layout = em.layouts.mem_layout[leader]
    ctype = cspell.ctype(leader.result.dtype)
    ptr = em.operand(leader.operands[0], layout)
    masked = len(leader.operands) > 1
    names = [em.array_name(op.result, layout) for op in group.loads]
    em.write(em.macros.combined_load(dict(
        ctype=ctype, n=layout.num_regs, fields=group.fields, names=names, ptr=ptr.at("r"),
        mask=em.operand(leader.operands[1], layout).at("r") if masked else "",
        others=[em.operand(op.operands[2], layout).at("r") for op in group.loads] if masked else [],
        load_fn=_load_call(group.fields, leader))))
    for op, name in zip(group.loads, names):
        em.bind(op.result, Read(array=name, ctype=ctype), layout)


def _opaque_copy(em, op, layout, earlier: Read):
    """A packed root read in a later phase (analysis/packed_rows.py): its registers copied as 32-bit words the C
    compiler cannot see through, so the widening made from the copy is not merged into the first one."""
    v = op.result
    name = em.fresh(f"{em.name_of(v)}_words")
    lo, hi = em.register_range(layout)
    em.write(em.macros.opaque_copy(cspell.ctype(v.dtype), name, layout.num_regs, earlier.array, lo, hi))
    em.bind(v, Read(array=name, ctype=earlier.ctype), layout)


@lowering(OpKind.LOAD)
def load(em, op, layout):
    earlier = em.stale_roots.get((op.result, layout)) if op.results else None
    if earlier is not None:
        _opaque_copy(em, op, layout, earlier)
        return
    rows = em.analysis.row_ring
    ring = rows.ring_of(op) if rows is not None else None
    if ring is not None:           # a row ahead of a row loop, copied into shared memory (analysis/row_ring.py)
        from .row_ring import ring_copy
        ring_copy(em, op, ring, rows)
        return
    group = em.analysis.combined_loads.get(op)
    if group is not None:
        if op is group.leader:
            _combined_load(em, group)
        return   # the other fields were read by the group's first load
    v = op.result
    ptr_v = op.operands[0]
    ctype = cspell.ctype(v.dtype)
    volatile = op.attrs.get("volatile", False)
    if not v.shape:
        ptr = em.scalar(ptr_v)
        deref = f"*({ptr})" if not volatile else f"*reinterpret_cast<const volatile {ctype}*>({ptr})"
        if len(op.operands) > 1:
            mask, other = em.scalar(op.operands[1]), em.scalar(op.operands[2])
            em.define_scalar(v, f"({mask}) ? {deref} : {other}")
        else:
            em.define_scalar(v, deref)
        return
    layout = em.layouts.mem_layout[op]
    vec = em.analysis.vector_width[op]
    ptr = em.operand(ptr_v, layout)
    mask = em.operand(op.operands[1], layout) if len(op.operands) > 1 else None
    other = em.operand(op.operands[2], layout) if len(op.operands) > 2 else None
    name = em.array_name(v, layout)
    mask_uniform = em.analysis.mask_uniform.get(op, False)
    ctx = dict(ctype=ctype, name=name, n=layout.num_regs, vec=vec, ptr=ptr.at("r"), load_fn=_load_call(vec, op, volatile),
               load_one=(f"*({ptr.at('r')})" if not volatile else
                         f"*reinterpret_cast<const volatile {ctype}*>({ptr.at('r')})"),
               mask=mask.at("r") if mask else "", other=other.at("r") if other else "",
               mask_j=mask.at("(r + j)") if mask else "", other_j=other.at("(r + j)") if other else "",
               mask_all="", mask_first="", other_at_rj=other.at("r + j") if other else "")
    _window(em, ctx, layout, vec)
    if mask is not None and vec > 1:
        if mask.array is None:
            ctx["mask_first"] = mask.at("r")
        elif mask_uniform:
            ctx["mask_first"] = mask.at("r")
        else:
            ctx["mask_all"] = whole_run(em, op, mask, vec)
    em.write(em.macros.load(ctx))
    em.bind(v, Read(array=name, ctype=ctype), layout)


@lowering(OpKind.STORE)
def store(em, op, layout):
    ptr_v, value_v = op.operands[0], op.operands[1]
    mask_v = op.operands[2] if len(op.operands) > 2 else None
    ctype = cspell.ctype(value_v.dtype)
    if not ptr_v.shape:
        ptr, value = em.scalar(ptr_v), em.scalar(value_v)
        cond = em.first_thread_of_program + (f" && ({em.scalar(mask_v)})" if mask_v is not None else "")
        em.write(f"if ({cond}) *({ptr}) = {value};")
        return
    layout = em.layouts.mem_layout[op]
    vec = em.analysis.vector_width[op]
    ptr = em.operand(ptr_v, layout)
    value = em.operand(value_v, layout)
    mask = em.operand(mask_v, layout) if mask_v is not None else None
    guards = []
    lane_rep, warp_rep = layout.replicated_lane_mask(), layout.replicated_warp_mask()
    # Threads holding copies of the same elements store once.
    if lane_rep:
        guards.append(f"(lane & {lane_rep}) == 0")
    if warp_rep:
        guards.append(f"(warp & {warp_rep}) == 0")
    ctx = dict(ctype=ctype, n=layout.num_regs, vec=vec, ptr=ptr.at("r"),
               store_fn=_with_cache("tp::store", vec, _cache(op)),
               value_array=value.array if value.is_identity_array else "", value=value.at("r"),
               value_per_register=re.search(r"\br\b", value.at("r")) is not None,   # not a register-0 read
               store_one=f"*({ptr.at('r')}) = {value.at('r')}", mask=mask.at("r") if mask else "",
               mask_j=mask.at("(r + j)") if mask else "",
               mask_all="", mask_first="", guard=" && ".join(guards))
    _window(em, ctx, layout, vec)
    if mask is not None and vec > 1:
        if mask.array is None or em.analysis.mask_uniform.get(op, False):
            ctx["mask_first"] = mask.at("r")
        else:
            ctx["mask_all"] = whole_run(em, op, mask, vec)
    em.write(em.macros.store(ctx))
