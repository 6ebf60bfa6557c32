"""Lowering of runtime control flow: `for`, `while` and `if` with the values they carry.

A carried value is one C variable (or register array) declared before the construct; region arguments read
it, and the closing `yield` writes the new values into it (through temporaries when one new value is another
slot's old value, so `a, b = b, a` works).
"""
from __future__ import annotations

from .. import cspell
from ...parse.ir import OpKind, walk
from ..emitter import Read, lowering
from .dot import forget_hoisted, hoist_invariant_operands
from ...analysis.invariant_operands import operands_of_inner_loops


def declare_carried(em, values, inits, suffix=""):
    """Declare one variable per carried value, initialized from `inits`; returns their Reads."""
    reads = []
    for v, init in zip(values, inits):
        ct = em.ctype(v)
        name = em.fresh(em.name_of(v, "carried") + suffix) if suffix else em.name_of(v, "carried")
        if v.shape:
            layout = em.layouts.layout[v]
            src = em.operand(init, layout)
            em.write(em.macros.block_elementwise(ct, name, layout.num_regs, src.at("r")))
            reads.append((Read(array=name, ctype=ct), layout))
        else:
            em.write(f"{ct} {name} = {em.scalar(init)};")
            reads.append((Read(scalar=name, ctype=ct), None))
    return reads


def bind_args(em, args, reads):
    for a, (rd, layout) in zip(args, reads):
        em.bind(a, rd, layout)


def assign_yield(em, targets, yielded, region_args):
    """targets[i] := yielded[i], safe when a yielded value is another target's current value."""
    arg_set = set(region_args)
    staged = []
    for (rd, layout), y in zip(targets, yielded):
        if y in arg_set and region_args.index(y) != targets.index((rd, layout)):
            tmp = em.fresh(f"{rd.array or rd.scalar}_next")
            src = em.operand(y, layout) if layout is not None else None
            if layout is not None:
                em.write(em.macros.block_elementwise(rd.ctype, tmp, layout.num_regs, src.at("r")))
                staged.append((rd, layout, Read(array=tmp, ctype=rd.ctype)))
            else:
                em.write(f"const {rd.ctype} {tmp} = {em.scalar(y)};")
                staged.append((rd, layout, Read(scalar=tmp, ctype=rd.ctype)))
        else:
            staged.append((rd, layout, None))
    for ((rd, layout, tmp), y) in zip(staged, yielded):
        if layout is not None:
            src = tmp or em.operand(y, layout)
            if src.array == rd.array and src.regmap is None:
                continue
            em.write(em.macros.reg_loop(layout.num_regs, f"{rd.array}[r] = {src.at('r')}"))
        else:
            src = tmp.at() if tmp else em.scalar(y)
            if src != rd.scalar:
                em.write(f"{rd.scalar} = {src};")


def _emit_body(em, region, targets, region_args):
    em.push_scope()
    em.indent += 1
    em.loop_depth += 1
    bind_args(em, region_args, targets)
    em.emit_region(region)
    em.last_line = None
    assign_yield(em, targets, region.ops[-1].operands, region_args)
    em.loop_depth -= 1
    em.indent -= 1
    em.pop_scope()


@lowering(OpKind.YIELD, OpKind.CONDITION)
def terminator(em, op, layout):
    pass  # handled by the construct that owns the region


@lowering(OpKind.FOR)
def for_loop(em, op, layout):
    hoisted = hoist_invariant_operands(em, op)
    plan = em.analysis.pipelines.get(op)
    rows = em.analysis.row_ring
    if rows is not None and op is rows.loop:
        from .row_ring import row_ring_for
        row_ring_for(em, op, rows)
    elif plan is not None:
        from .pipeline import pipelined_for
        pipelined_for(em, op, plan)
    else:
        _plain_for(em, op)
    forget_hoisted(em, hoisted)


def _plain_for(em, op):
    lo, hi, step = (em.scalar(x) for x in op.operands[:3])
    region = op.regions[0]
    iv = region.args[0]
    targets = declare_carried(em, op.results, op.operands[3:])
    for res, (rd, lay) in zip(op.results, targets):
        em.bind(res, rd, lay)
    ivname = em.name_of(iv, "i")
    ct = cspell.ctype(iv.dtype)
    sign = op.attrs.get("step_sign", 1)
    cond = loop_condition(ivname, hi, step, sign)
    em.write(unroll_pragma(op))
    em.write(f"for ({ct} {ivname} = {lo}; {cond}; {ivname} += {step}) {{")
    em.push_scope()
    em.bind(iv, Read(scalar=ivname, ctype=ct), None)
    _emit_body(em, region, targets, region.args[1:])
    em.pop_scope()
    em.write("}")


def unroll_pragma(op) -> str:
    """`#pragma unroll` for a runtime loop: the user's `loop_unroll_factor`, else `1` for a loop holding a
    tl.dot (its body is already a large unrolled block; unrolling it again only raises register pressure,
    seen as spills around a 32x32 dot loop), else nothing (the compiler decides)."""
    if op.attrs.get("loop_unroll_factor"):
        return f"#pragma unroll {op.attrs['loop_unroll_factor']}"
    if any(inner.name == OpKind.DOT for region in op.regions for inner in walk(region)):
        return "#pragma unroll 1"
    return ""


def loop_condition(ivname, hi, step, sign):
    """C condition that `ivname` has not reached `hi` (the step's sign may be known only at run time)."""
    if sign > 0:
        return f"{ivname} < {hi}"
    if sign < 0:
        return f"{ivname} > {hi}"
    return f"({step} > 0 ? {ivname} < {hi} : {ivname} > {hi})"


@lowering(OpKind.WHILE)
def while_loop(em, op, layout):
    hoisted = hoist_invariant_operands(em, op)
    _while(em, op)
    forget_hoisted(em, hoisted)


def _while(em, op):
    cond_region, body = op.regions
    targets = declare_carried(em, op.results, op.operands)
    for res, (rd, lay) in zip(op.results, targets):
        em.bind(res, rd, lay)
    em.write("while (true) {")
    em.push_scope()
    em.indent += 1
    em.loop_depth += 1      # the condition runs every iteration too: its shared-memory uses need barriers
    bind_args(em, cond_region.args, targets)
    em.emit_region(cond_region)
    cond = em.scalar(cond_region.ops[-1].operands[0])
    em.write(f"if (!({cond})) break;")
    em.loop_depth -= 1
    em.indent -= 1
    _emit_body(em, body, targets, body.args)
    em.pop_scope()
    em.write("}")


@lowering(OpKind.IF)
def if_op(em, op, layout):
    hoisted = hoist_invariant_operands(em, op, operands_of_inner_loops(op))
    _if(em, op)
    forget_hoisted(em, hoisted)


def _if(em, op):
    cond = em.scalar(op.operands[0])
    targets = []
    for v in op.results:
        ct = em.ctype(v)
        name = em.name_of(v, "value")
        if v.shape:
            lay = em.layouts.layout[v]
            em.write(f"{ct} {name}[{lay.num_regs}];")
            targets.append((Read(array=name, ctype=ct), lay))
        else:
            em.write(f"{ct} {name};")
            targets.append((Read(scalar=name, ctype=ct), None))
        em.bind(v, *targets[-1])
    for i, region in enumerate(op.regions):
        if i > 0 and not targets and len(region.ops) == 1:
            continue                      # an else branch with nothing to do is left out
        em.write(f"if ({cond}) {{" if i == 0 else "} else {")
        em.push_scope()
        em.indent += 1
        em.emit_region(region)
        em.last_line = None
        assign_yield(em, targets, region.ops[-1].operands, [])
        em.indent -= 1
        em.pop_scope()
    em.write("}")


@lowering(OpKind.BARRIER)
def barrier(em, op, layout):
    em.write("__syncthreads();")
