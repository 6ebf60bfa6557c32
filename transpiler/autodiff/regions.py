"""Runtime `for` loops and `if`s, forward (primal replay) and in reverse.

A runtime `for` is differentiated exactly, iteration by iteration, never by the "final value" shortcut: the
reverse loop runs the iterations from last to first, each one recomputing its forward values and adding the
adjoints of what it yields to the adjoints of what it received. Where the reverse of the body reads a
loop-carried forward value (a carried value entering non-linearly, `h = tanh(h * w + x)`), it needs the carried
values at the start of each iteration, by one of two exact means that `tapes.choose` picks by cost (said in
`explain`): a tape (the forward loop runs once before the reverse loop, storing them per iteration into a
buffer the kernel object allocates; each reverse iteration loads its own: O(n)), or replaying the forward loop
up to each reverse iteration (O(n^2) iterations, no memory: for short constant trip counts, and for bounds a
tape cannot be sized by before the launch). Where it reads none (accumulators: `acc += f(x_i)`), nothing is
replayed: the reverse loop costs what the forward loop costs.

A runtime `if` is taken the same way in reverse: its condition is recomputed and the reverse of the taken
branch runs. Adjoints of values defined outside a loop or branch are set to zero before it, so both branches
and every iteration add into one variable.
"""
from __future__ import annotations

from ..parse.ir import OpKind, walk
from . import tapes
from .spelling import typed_constant


# -- the primal replay ------------------------------------------------------------------------------------

def replay(d, op):
    if op.name == OpKind.FOR:
        _replay_for(d, op)
    else:
        _replay_if(d, op)


def _loop_bounds(d, op):
    lo, hi, step = (d.names[v] for v in op.operands[:3])
    return lo, hi, step


def _carried_slots(d, op):
    """The carried values the backward reads (their result or their region argument is needed)."""
    body = op.regions[0]
    return [k for k, (arg, res) in enumerate(zip(body.args[1:], op.results))
            if arg in d.needed or res in d.needed]


def _emit_forward_loop(d, op, lo, hi, step, suffix="", slots=None, at_start=None):
    """`for iv in range(lo, hi, step)` with the body replayed; returns {slot: name} of the carried values
    replayed (those the backward reads, or `slots`); `at_start(iv, carried)` writes lines at the start of
    each iteration (the tape's stores)."""
    body = op.regions[0]
    iv_arg, carried_args = body.args[0], body.args[1:]
    inits = op.operands[3:]
    carried = {}
    for k in (_carried_slots(d, op) if slots is None else slots):
        arg = carried_args[k]
        name = d.w.fresh((arg.name or "carried") + suffix)
        d.w.line(f"{name} = {d.names[inits[k]]}")
        carried[k] = name
        d.names[arg] = name
    iv = d.w.fresh((iv_arg.name or "i") + suffix)
    d.names[iv_arg] = iv
    d.w.comment(op.loc)
    d.w.line(f"for {iv} in range({lo}, {hi}, {step}):")
    with d.w.indent():
        if at_start:
            at_start(iv, carried)
        d.replay(body)
        yielded = body.ops[-1].operands
        _assign_yield(d, list(carried.values()), [yielded[k] for k in carried])
    return carried


def _assign_yield(d, targets, values):
    if targets:
        d.w.line(f"{', '.join(targets)} = {', '.join(d.names[v] for v in values)}")
    else:
        d.w.line("pass")


def _replay_for(d, op):
    if not any(r in d.needed for r in op.results):
        return              # the reverse loop recomputes what it reads of the body
    lo, hi, step = _loop_bounds(d, op)
    carried = _emit_forward_loop(d, op, lo, hi, step)
    for k, name in carried.items():
        d.names[op.results[k]] = name


def _replay_if(d, op):
    slots = [k for k, r in enumerate(op.results) if r in d.needed]
    if not slots:
        return
    results = [d.w.fresh(op.results[k].name or "sel") for k in slots]
    d.w.comment(op.loc)
    d.w.line(f"if {d.names[op.operands[0]]}:")
    for i, region in enumerate(op.regions):
        if i == 1:
            d.w.line("else:")
        with d.w.indent():
            d.replay(region)
            _assign_yield(d, results, [region.ops[-1].operands[k] for k in slots])
    for k, name in zip(slots, results):
        d.names[op.results[k]] = name


# -- the reverse sweep ------------------------------------------------------------------------------------

def _defined_in(region):
    inside = set(region.args)
    for op in walk(region):
        inside.update(op.results)
        for r in op.regions:
            inside.update(r.args)
    return inside


def _outer_varied_operands(d, op):
    """Varied values defined outside `op` that its regions read: their adjoints must exist before it."""
    inside = set()
    for r in op.regions:
        inside |= _defined_in(r)
    out = []
    for r in op.regions:
        for inner in walk(r):
            for v in inner.operands:
                if v in d.varied and v not in inside and v not in out:
                    out.append(v)
    return out


def _zero_adjoints(d, values):
    for v in values:
        if v in d.varied and v not in d.adj:
            name = d.w.fresh(f"d_{d.names.get(v, 'v')}")
            d.w.line(f"{name} = {typed_constant(0.0, d.adjoint_dtype(v), v.shape)}")
            d.adj[v] = name


def _local_context(d, region):
    """Forget the adjoints and respelled pointers of a region's own values (fresh per iteration/branch)."""
    inside = _defined_in(region)
    for v in list(d.adj):
        if v in inside:
            del d.adj[v]
    d.respelled = {k: n for k, n in d.respelled.items() if k[0] not in inside}


def sweep(d, op):
    if op.name == OpKind.FOR:
        _sweep_for(d, op)
    else:
        _sweep_if(d, op)


def _sweep_if(d, op):
    if not any(r in d.adj for r in op.results) and not _has_gradient_writes(d, op):
        return
    _zero_adjoints(d, _outer_varied_operands(d, op))
    d.w.comment(op.loc, "reverse of ")
    d.w.line(f"if {d.p(op.operands[0])}:")
    result_adjoints = [d.adj.get(r) for r in op.results]
    for i, region in enumerate(op.regions):
        if i == 1:
            d.w.line("else:")
        with d.w.indent():
            _local_context(d, region)
            d.replay(region)
            for v, g in zip(region.ops[-1].operands, result_adjoints):
                if g is not None:
                    d.add(v, g)
            d.sweep(region)
            d.w.line("pass")


def _has_gradient_writes(d, op):
    return any(inner.name == OpKind.LOAD and d.load_root.get(inner) in d.inputs
               for r in op.regions for inner in walk(r))


def _sweep_for(d, op):
    body = op.regions[0]
    carried_args = body.args[1:]
    slots = [k for k, arg in enumerate(carried_args) if arg in d.varied]
    if not slots and not _has_gradient_writes(d, op):
        return
    lo, hi, step = _loop_bounds(d, op)
    step_op = op.operands[2].owner
    if not (getattr(step_op, "name", None) == OpKind.CONSTANT and step_op.attrs["value"] > 0):
        d.refuse(op, "a runtime loop is differentiated only with a positive constant step")
    _zero_adjoints(d, _outer_varied_operands(d, op))
    d.w.comment(op.loc, "reverse of ")
    # The carried adjoints, starting from the adjoints of the loop's results.
    carried_adjoint = {}
    for k in slots:
        res = op.results[k]
        name = d.w.fresh(f"d_{carried_args[k].name or 'carried'}")
        start = d.adj.get(res) or typed_constant(0.0, d.adjoint_dtype(res), res.shape)
        d.w.line(f"{name} = {start}")
        carried_adjoint[k] = name
    count = d.w.let(f"({hi} - {lo} + {step} - 1) // {step}", "trip_count")
    tape_at = len(d.w.lines)            # where the forward loop filling a tape goes, if one is chosen
    back = d.w.fresh("back")
    d.w.line(f"for {back} in range(0, {count}):")
    with d.w.indent():
        iv = d.w.let(f"{lo} + ({count} - 1 - {back}) * {step}", body.args[0].name or "i")
        # Write the body's replay and reverse first, to learn whether they read the carried forward values.
        _local_context(d, body)
        placeholders = []
        for k, arg in enumerate(carried_args):
            d.names[arg] = d.w.fresh(f"{arg.name or 'carried'}_at_{iv}")
            placeholders.append(d.names[arg])
        d.names[body.args[0]] = iv
        whole, d.needed = d.needed, d._needed(reversed_loop=op)
        reverse_needed = d.needed
        with d.w.capture() as replayed:
            d.replay(body)
        d.needed = whole
        outer_used, d.used_primals = d.used_primals, set()
        with d.w.capture() as reversed_body:
            for k in slots:
                d.add(body.ops[-1].operands[k], carried_adjoint[k])
            d.sweep(body)
            for k in slots:
                arg = carried_args[k]
                new = d.adj.get(arg) or typed_constant(0.0, d.adjoint_dtype(arg), arg.shape)
                d.w.line(f"{carried_adjoint[k]} = {new}")
        needs = _reads_carried(body, d.used_primals)
        d.used_primals |= outer_used
        line = f"line {op.loc.line if op.loc else '?'}"
        read_slots = [k for k, arg in enumerate(carried_args) if arg in reverse_needed]
        choice = None
        if needs:
            forms = [d.forms(v) for v in op.operands[:3]]
            step_value = step_op.attrs["value"]
            choice = tapes.choose(forms[0], forms[1], step_value, [carried_args[k] for k in read_slots],
                                  len(replayed))
        if choice and choice.tape:
            d.w.decide(f"{line}: the reverse of this loop reads its carried values: kept per iteration in a tape "
                       f"(one forward pass stores them, each reverse iteration loads its own): {choice.why}")
            loads = _tape_loop(d, op, lo, hi, step, count, read_slots, forms, step_value, tape_at)
            for k, ph in enumerate(placeholders):
                d.w.line(f"{ph} = {loads[k](back) if k in loads else d.p(op.operands[3 + k])}")
        elif needs:
            d.w.decide(f"{line}: the reverse of this loop reads its carried values: each reverse iteration "
                       f"replays the forward loop up to it (O(n^2) iterations): {choice.why}")
            names = _emit_forward_loop_upto(d, op, lo, iv, step)
            for k, ph in enumerate(placeholders):
                d.w.line(f"{ph} = {names[k] if k in names else d.p(op.operands[3 + k])}")
        else:
            d.w.decide(f"line {op.loc.line if op.loc else '?'}: the reverse of this loop reads none of its carried "
                       "values: reverse iterations recompute only their own forward values (no replay)")
            for ph, init in zip(placeholders, op.operands[3:]):
                d.w.line(f"{ph} = {d.p(init)}        # not read by the reverse of the body")
        d.w.splice(replayed)
        d.w.splice(reversed_body)
    for k in slots:
        d.add(op.operands[3 + k], carried_adjoint[k])


def _tape_loop(d, op, lo, hi, step, count, slots, forms, step_value, at):
    """The forward loop once, storing the carried values of `slots` at the start of each iteration into their
    tapes (written at line index `at`, before the reverse loop), then a barrier; returns per slot a function
    of the reverse counter giving the load of that iteration's value."""
    body = op.regions[0]
    carried_args = body.args[1:]
    row = d.w.fresh("tape_row")
    tapes_of = {}
    for k in slots:
        arg = carried_args[k]
        pointer = d.hidden_name(f"tape_{arg.name or 'carried'}")
        trips = d.hidden_name(f"{pointer}_trips")
        tape = tapes.Tape(pointer, trips, arg.dtype, tuple(arg.shape), forms[0], forms[1], step_value)
        d.tapes.append(tape)
        tapes_of[k] = tape
    offsets = {k: tapes.offsets_text(t.shape) for k, t in tapes_of.items()}

    def address(k, iteration):
        t = tapes_of[k]
        base = f"{t.pointer} + ({row} * {t.trips} + {iteration}) * {t.elements}"
        return f"{base} + {offsets[k]}" if offsets[k] else base

    def store(iv, carried):
        iteration = d.w.let(f"({iv} - {lo}) // {step}", "iteration")
        for k in slots:
            d.w.line(f"tl.store({address(k, iteration)}, {carried[k]})")

    saved = {v: d.names.get(v) for v in _defined_in(body)}
    depth, d.w.depth = d.w.depth, d.w.depth - 1
    with d.w.capture() as lines:
        d.w.comment(op.loc, "forward of ")
        d.w.line(f"{row} = (tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * "
                 f"tl.program_id(2))).to(tl.int64)")
        _emit_forward_loop(d, op, lo, hi, step, suffix="_taped", slots=slots, at_start=store)
        d.w.line("tl.debug_barrier()        # the tape's stores before its loads (other threads may load them)")
    d.w.depth = depth
    for v, n in saved.items():
        if n is not None:
            d.names[v] = n
    d.w.lines[at:at] = lines
    return {k: (lambda back, k=k: f"tl.load({address(k, f'({count} - 1 - {back})')})") for k in slots}


def _emit_forward_loop_upto(d, op, lo, iv, step):
    body = op.regions[0]
    saved = {v: d.names.get(v) for v in _defined_in(body)}
    names = _emit_forward_loop(d, op, lo, iv, step, suffix="_replayed")
    for v, n in saved.items():
        if n is not None:
            d.names[v] = n
    return names


def _reads_carried(body, used):
    """Whether a primal value the reverse read depends, inside the body, on a carried region argument."""
    carried = set(body.args[1:])
    depends = set(carried)
    for inner in walk(body):
        if any(o in depends for o in inner.operands):
            depends.update(inner.results)
    return any(v in depends for v in used)
