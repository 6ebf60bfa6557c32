"""Reverse-mode differentiation of a kernel's IR into a backward kernel, written as Triton-dialect Python.

From the forward's typed IR of one specialization and the names of the pointers to differentiate, it writes:
  1. the primal replay: every forward op again (recomputation: the backward reads the forward's inputs, not
     saved intermediates), except the stores; at each store to an output named in `grads` the incoming
     gradient of the stored block is loaded from that output's gradient array, with the store's mask;
  2. the reverse sweep: the ops in reverse order, each adding the adjoint of its results into its operands'
     adjoints by the rule of `derivatives.py`; a load from an input named in `grads` adds its adjoint into
     the input's gradient array, by the write `gradient_writes.py` decides (masked-off lanes write nothing).
Only values that depend on a differentiable load carry adjoints (activity analysis). Recomputation is always
chosen for straight-line code and its reductions: they cost what the forward costs, and the backward reads
each input once either way. Runtime loops and ifs are handled in `regions.py`.
"""
from __future__ import annotations

from ..parse.ir import OpKind, WRITES_MEMORY, walk
from . import derivatives, gradient_writes, refusals
from .spelling import spell, tl_dtype, typed_constant, literal
from .writer import Writer

_DROPPED = {OpKind.STORE, OpKind.ATOMIC_RMW, OpKind.DEVICE_PRINT, OpKind.DEVICE_ASSERT, OpKind.BARRIER}


class _Everything:
    def __contains__(self, value):
        return True


_EVERYTHING = _Everything()


_POINTER_PATH = (OpKind.SPLAT, OpKind.BROADCAST, OpKind.ADDPTR, OpKind.EXPAND_DIMS, OpKind.RESHAPE, OpKind.PERMUTE,
                 OpKind.HINT)


def loop_carried(ir):
    """region argument or loop result -> (the for op, its carried slot)."""
    out = {}
    for op in walk(ir.body):
        if op.name == OpKind.FOR:
            for k, (arg, res) in enumerate(zip(op.regions[0].args[1:], op.results)):
                out[arg] = out[res] = (op, k)
    return out


def pointer_root(v, arg_names, carried=None, seen=None):
    """The kernel argument a pointer value is derived from (through splat, broadcast, addptr, shape ops and
    loop-carried pointers advanced by the loop), or None (a pointer loaded from memory, chosen by a select, or
    carried by a loop that swaps it for another)."""
    carried = carried or {}
    seen = set() if seen is None else seen
    while v not in arg_names:
        if v in carried:
            if v in seen:
                return _SELF
            seen.add(v)
            op, k = carried[v]
            first = pointer_root(op.operands[3 + k], arg_names, carried, seen)
            then = pointer_root(op.regions[0].ops[-1].operands[k], arg_names, carried, seen)
            return first if then in (first, _SELF) else None
        op = v.owner
        if op is None or not hasattr(op, "name") or op.name not in _POINTER_PATH:
            return None
        v = op.operands[0]
    return arg_names[v]


_SELF = object()        # pointer_root met the carried pointer it started from: the loop advances it


class _NoIndent:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


_NO_INDENT = _NoIndent()


class Fold:
    """The backward's loop over forward programs: its variable, the parameter holding the forward grid's
    axis 0, and per folded input its register accumulator (name, block shape, dtype)."""

    def __init__(self, program, programs, accumulators, blocks):
        self.program = program
        self.programs = programs
        self.accumulators = accumulators      # input name -> accumulator name
        self.blocks = blocks                  # input name -> (accumulator name, shape, tl dtype text)


class Derivation:
    """The transform of one forward IR; `source()` is the backward kernel's Python text."""

    def __init__(self, ir, grads, name, param_names, accumulate=True):
        self.ir = ir
        self.name = name
        self.arg_names = {a.value: a.name for a in ir.args}
        self.grads = list(grads)
        self.accumulate = accumulate     # False: plain writes store the gradient (kernel.py zeroes the others)
        self.w = Writer(taken_names=set(param_names) | {"tl", "libdevice", "transpiler", "float"})
        self.grad_param = {}
        for n in self.grads:
            name = f"grad_{n}"
            while name in self.w.taken:
                name = "d" + name
            self.w.taken.add(name)
            self.grad_param[n] = name
        self.names = {v: n for v, n in self.arg_names.items()}
        self.adj = {}
        self.used_primals = set()    # primal values the reverse sweep read (regions.py: what a loop must replay)
        self.respelled = {}
        self.incoming = {}           # store op -> name of the incoming gradient block
        self.forms = gradient_writes.AffineForms(ir)
        self._classify()

    # -- which pointers are differentiated -----------------------------------------------------------
    def _classify(self):
        self.load_root, self.write_root = {}, {}
        self.carried = loop_carried(self.ir)
        for op in walk(self.ir.body):
            if op.name == OpKind.LOAD:
                self.load_root[op] = pointer_root(op.operands[0], self.arg_names, self.carried)
            elif op.name in WRITES_MEMORY:
                self.write_root[op] = pointer_root(op.operands[0], self.arg_names, self.carried)
        refusals.check(self.ir, self.load_root, self.write_root)
        loaded = {r for r in self.load_root.values() if r}
        written = {r for r in self.write_root.values() if r}
        by_name = {a.name: a for a in self.ir.args}
        for n in self.grads:
            arg = by_name.get(n)
            if arg is None or not arg.value.dtype.is_ptr():
                raise ValueError(f"grads names {n!r}, which is not a pointer argument of {self.name}")
            if not arg.value.dtype.element_ty.is_floating():
                raise ValueError(f"grads names {n!r}, a pointer to {arg.value.dtype.element_ty!r}: only floating "
                                 "point data has gradients")
            if n not in loaded and n not in written:
                raise ValueError(f"grads names {n!r}, which the kernel neither loads nor stores")
        self.inputs = [n for n in self.grads if n in loaded]
        self.outputs = [n for n in self.grads if n in written]
        self.loads_of = {n: [op for op, r in self.load_root.items() if r == n] for n in self.inputs}
        for n in self.outputs:
            writes = [op for op, r in self.write_root.items() if r == n]
            if len(writes) > 1 and any(op.name == OpKind.STORE for op in writes):
                refusals.refuse(writes[1], f"{n} is stored more than once; the gradient of an overwritten "
                                           "store")
        self.varied = self._activity()
        self.reads = None               # what the reverse sweep reads: known after the dry pass (source())
        self.needed = self._needed()

    def _activity(self):
        """Values that depend on a load from a differentiable input (fixpoint over loop-carried values)."""
        varied = set()
        changed = True
        while changed:
            changed = False
            for op in walk(self.ir.body):
                new = []
                if op.name == OpKind.LOAD:
                    if self.load_root.get(op) in self.inputs:
                        new = op.results
                elif op.name in (OpKind.FOR, OpKind.IF):
                    new = self._region_varied(op, varied)
                elif op.name not in derivatives.NO_GRADIENT and any(o in varied for o in op.operands):
                    new = [r for r in op.results if r.dtype.is_floating()]
                for r in new:
                    if r not in varied and r.dtype.is_floating():
                        varied.add(r)
                        changed = True
        return varied

    def _needed(self, reversed_loop=None):
        """Forward values the backward reads (a backward slice of what the reverse sweep's rules read, found by a
        first, dry pass): values nobody reads are not replayed, so no loop computes (or carries) a value nobody
        reads, and a loop's accumulator is not recomputed for a rule that reads only the loop's loads. With
        `reversed_loop`, what one reverse iteration of that loop reads: its body's yields feed the next forward
        iteration, not the reverse."""
        if self.reads is None:
            return _EVERYTHING                     # the dry pass replays everything
        self._reversed_loop = reversed_loop
        seeds = set(self.reads)
        for op in walk(self.ir.body):
            if op in self.write_root and self.write_root[op] in self.outputs:
                seeds.update(op.operands[:1] + op.operands[2:3])
            elif op.name == OpKind.LOAD and self.load_root.get(op) in self.inputs:
                seeds.update(op.operands)
            elif op.name == OpKind.FOR:
                seeds.update(op.operands[:3])       # the reverse loop runs over the same range
            elif op.name == OpKind.IF:
                seeds.add(op.operands[0])           # and takes the same branch
        needed, work = set(), list(seeds)
        while work:
            v = work.pop()
            if v in needed:
                continue
            needed.add(v)
            work.extend(self._needs_of(v))
        return needed

    def _needs_of(self, v):
        owner = v.owner
        if owner is not None and hasattr(owner, "name"):        # an op's result
            if owner.name == OpKind.FOR:
                k = owner.results.index(v)
                body = owner.regions[0]
                if owner is self._reversed_loop:        # one reverse iteration does not compute the result
                    return [owner.operands[3 + k], body.args[1 + k]] + owner.operands[:3]
                return [owner.operands[3 + k], body.ops[-1].operands[k], body.args[1 + k]] + owner.operands[:3]
            if owner.name == OpKind.IF:
                k = owner.results.index(v)
                return [owner.operands[0]] + [r.ops[-1].operands[k] for r in owner.regions]
            return list(owner.operands)
        for op in walk(self.ir.body):       # a region's argument (or a kernel argument): the loop that owns it
            if op.name == OpKind.FOR and v in op.regions[0].args:
                k = op.regions[0].args.index(v)
                if k == 0:
                    return op.operands[:3]
                if op is self._reversed_loop:
                    return [op.operands[3 + k - 1]] + op.operands[:3]
                return [op.operands[3 + k - 1], op.regions[0].ops[-1].operands[k - 1]] + op.operands[:3]
        return []

    def _region_varied(self, op, varied):
        out = []
        if op.name == OpKind.FOR:
            body = op.regions[0]
            yielded = body.ops[-1].operands
            for init, arg, y, res in zip(op.operands[3:], body.args[1:], yielded, op.results):
                if init in varied or y in varied or arg in varied:
                    out += [arg, res]
        else:
            for i, res in enumerate(op.results):
                if any(r.ops[-1].operands[i] in varied for r in op.regions):
                    out.append(res)
        return out

    # -- context for derivative rules ----------------------------------------------------------------
    def p(self, v):
        self.used_primals.add(v)
        return self.names[v]

    def let(self, expr, base="t"):
        return self.w.let(expr, base)

    def active(self, v):
        return v in self.varied

    def adjoint_dtype(self, v):
        from .. import dtypes
        return dtypes.float64 if v.dtype is dtypes.float64 else dtypes.float32

    def adjoint_tl(self, v):
        return tl_dtype(self.adjoint_dtype(v))

    def converted(self, g, v):
        """`g` (an adjoint expression) as the adjoint dtype of `v`."""
        return f"({g}).to({self.adjoint_tl(v)})"

    def cast_to(self, g, dt):
        return f"({g}).to({tl_dtype(dt)})"

    def refuse(self, op, message):
        refusals.refuse(op, message)

    def add(self, v, expr):
        if v not in self.varied:
            return
        current = self.adj.get(v)
        if current is None:
            name = self.w.fresh(f"d_{self.names.get(v, 'v')}")
            self.w.line(f"{name} = {expr}")
            self.adj[v] = name
        else:
            self.w.line(f"{current} = {current} + {expr}")

    # -- the primal replay ---------------------------------------------------------------------------
    def name_results(self, op):
        out = []
        for r in op.results:
            n = self.w.fresh(r.name or "v")
            self.names[r] = n
            out.append(n)
        return out

    def replay(self, region):
        for op in region.ops:
            self.replay_op(op)

    def replay_op(self, op):
        if op.name in _DROPPED:
            if op in self.write_root and self.write_root[op] in self.outputs:
                self.w.comment(op.loc, "incoming gradient: ")
                self.incoming[op] = self._incoming_gradient(op)
            return
        if op.name == OpKind.YIELD:
            return
        if op.name in (OpKind.FOR, OpKind.IF):
            from . import regions
            regions.replay(self, op)
            return
        if not any(r in self.needed for r in op.results):
            return
        if self.fold and op.name in (OpKind.PROGRAM_ID, OpKind.NUM_PROGRAMS) and op.attrs["axis"] == 0:
            # folded: the forward's program id is the loop's, and its count the forward grid's
            self.names[op.result] = self.fold.program if op.name == OpKind.PROGRAM_ID else self.fold.programs
            return
        args = [self.names[o] for o in op.operands]
        expr = spell(op, args)
        if expr is None:
            refusals.refuse(op, f"the op {op.name}{'/' + op.attrs['fn'] if 'fn' in op.attrs else ''} cannot be "
                                "replayed in a backward kernel")
        self.w.comment(op.loc)
        lhs = ", ".join(self.name_results(op))
        self.w.line(f"{lhs} = {expr}")

    def gradient_pointer(self, v, root_name, grad_name):
        """The pointer block `v` with its root argument replaced by that argument's gradient array."""
        key = (v, grad_name)
        if key in self.respelled:
            return self.respelled[key]
        if v in self.arg_names:
            out = grad_name
        elif v in self.carried:
            op = self.carried[v][0]
            refusals.refuse(op, f"the gradient of {root_name} through a pointer this loop advances (ptrs += ...)",
                                hint="index inside the loop instead: "
                                                             "X + offsets + k * BLOCK")
        else:
            op = v.owner
            inner = self.gradient_pointer(op.operands[0], root_name, grad_name)
            out = self.w.let(spell(op, [inner] + [self.p(o) for o in op.operands[1:]]), f"{grad_name}_ptr")
        self.respelled[key] = out
        return out

    def _incoming_gradient(self, op):
        root = self.write_root[op]
        ptr = self.gradient_pointer(op.operands[0], root, self.grad_param[root])
        value = op.operands[1]
        mask = op.operands[2] if len(op.operands) > 2 else None      # store and atomic add: (ptr, value, mask)
        dt = self.adjoint_tl(value)
        if mask is None:
            load = f"tl.load({ptr})"
        else:
            load = f"tl.load({ptr}, mask={self.p(mask)}, other=0.0)"
        return self.w.let(f"{load}.to({dt})", f"g_{root}")

    # -- the reverse sweep ---------------------------------------------------------------------------
    def sweep(self, region):
        for op in reversed(region.ops):
            self.sweep_op(op)

    def sweep_op(self, op):
        if op in self.incoming:
            self.w.comment(op.loc, "reverse of ")
            self.add(op.operands[1], self.incoming[op])
            return
        if op.name in (OpKind.FOR, OpKind.IF):
            from . import regions
            regions.sweep(self, op)
            return
        if op.name == OpKind.LOAD:
            root = self.load_root.get(op)
            if root in self.inputs and op.result in self.adj:
                self.w.comment(op.loc, "reverse of ")
                self.write_gradient(op, root)
            return
        grads = [self.adj.get(r) for r in op.results]
        if all(g is None for g in grads):
            return
        rule = derivatives.OPS.get(op.name)
        if rule is None:
            if op.name in derivatives.NO_GRADIENT:
                return
            refusals.refuse(op, f"the derivative of {op.name}")
        self.w.comment(op.loc, "reverse of ")
        rule(self, op, grads)

    def write_gradient(self, op, root):
        decision = self.decisions[root]
        grad = self.grad_param[root]
        if decision.partials:
            self._write_partial(op, root, decision)
            return
        ptr = self.gradient_pointer(op.operands[0], root, grad)
        d = self.adj[op.result]
        mask = self.p(op.operands[1]) if len(op.operands) > 1 else None
        masked = f", mask={mask}" if mask else ""
        old = f"tl.load({ptr}{masked}{', other=0.0' if mask else ''})"
        plain = f"tl.store({ptr}, {old} + {d}{masked})" if self.accumulate else f"tl.store({ptr}, {d}{masked})"
        atomic = f"tl.atomic_add({ptr}, {d}{masked}, sem='relaxed')"
        if decision.plain:
            self.w.line(plain)
        elif decision.condition:
            self.w.line(f"if {decision.condition}:")
            with self.w.indent():
                self.w.line(plain)
            self.w.line("else:")
            with self.w.indent():
                self.w.line(atomic)
        else:
            self.w.line(atomic)

    def _write_partial(self, op, root, decision):
        """Row `program` of the partial buffer (partials.py): whole rows stored when every program has its own
        row, atomic adds into the shared row `program % rows` otherwise. Folded: added into the program's
        register accumulator, stored after the loop over forward programs (`_fold_epilogue`)."""
        if self.fold and root in self.fold.accumulators:
            acc = self.fold.accumulators[root]
            d = self.adj[op.result]
            mask = self.p(op.operands[1]) if len(op.operands) > 1 else None
            self.w.line(f"{acc} = {acc} + {f'tl.where({mask}, {d}, 0.0)' if mask else d}")
            return
        buffer, stride, rows = self.partial_params[root]
        program = self.w.let("tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * "
                             "tl.program_id(2))", "program")
        programs = self.w.let("tl.num_programs(0) * tl.num_programs(1) * tl.num_programs(2)", "programs")
        base = self.w.let(f"{buffer} + ({program} % {rows}) * {stride}", f"{buffer}_row")
        ptr = self.gradient_pointer(op.operands[0], root, base)
        self.respelled = {k: v for k, v in self.respelled.items() if k[1] != base}
        d = self.adj[op.result]
        mask = self.p(op.operands[1]) if len(op.operands) > 1 else None
        masked = f", mask={mask}" if mask else ""
        atomic = f"tl.atomic_add({ptr}, {d}{masked}, sem='relaxed')"
        if decision.full_row:
            self.w.line(f"if {rows} >= {programs}:")
            with self.w.indent():
                whole = f"tl.where({mask}, {d}, 0.0)" if mask else d
                self.w.line(f"tl.store({ptr}, {whole})        # the whole row: no zeroed buffer needed")
            self.w.line("else:")
            with self.w.indent():
                self.w.line(atomic)
        else:
            self.w.line(atomic)

    # -- folding forward programs into one backward program ---------------------------------------------
    def _plan_fold(self):
        """A Fold when every partial-sum input is a whole row read at the top level of the kernel (a weight
        vector `W + arange(0, BLOCK)`): its contributions are then the same block in every forward program and
        can be summed in registers across the forward programs one backward program runs; else None."""
        partial = [n for n in self.inputs if self.decisions[n].partials]
        top = set(self.ir.body.ops)
        if not partial or any(not self.decisions[n].full_row or any(op not in top for op in self.loads_of[n])
                              for n in partial):
            return None
        accumulators = {}
        for n in partial:
            (load,) = self.loads_of[n]
            accumulators[n] = (self.w.fresh(f"partial_sum_{n}"), tuple(load.operands[0].shape),
                               self.adjoint_tl(load.result))
        return Fold(self.w.fresh("forward_program"), self.hidden_name("forward_programs"),
                    {n: a[0] for n, a in accumulators.items()}, accumulators)

    def hidden_name(self, base):
        """A name for a parameter the kernel object passes (partial buffers, tapes), unused so far."""
        name = base
        while name in self.w.taken:
            name = "_" + name
        self.w.taken.add(name)
        return name

    def _fold_prologue(self):
        for n, (acc, shape, dt) in self.fold.blocks.items():
            self.w.line(f"{acc} = tl.zeros({shape!r}, {dt})      # {n}'s gradient summed over this program's rows")
        self.w.line(f"for {self.fold.program} in range(tl.program_id(0), {self.fold.programs}, tl.num_programs(0)):")

    def _fold_epilogue(self):
        program = self.w.let("tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * "
                             "tl.program_id(2))", "program")
        programs = self.w.let("tl.num_programs(0) * tl.num_programs(1) * tl.num_programs(2)", "programs")
        for n, (acc, shape, _) in self.fold.blocks.items():
            buffer, stride, rows = self.partial_params[n]
            ptr = self.w.let(f"{buffer} + ({program} % {rows}) * {stride} + tl.arange(0, {shape[0]})",
                             f"{buffer}_row")
            self.w.line(f"if {rows} >= {programs}:")
            with self.w.indent():
                self.w.line(f"tl.store({ptr}, {acc})        # the whole row: no zeroed buffer needed")
            self.w.line("else:")
            with self.w.indent():
                self.w.line(f"tl.atomic_add({ptr}, {acc}, sem='relaxed')")

    # -- the whole kernel ------------------------------------------------------------------------------
    def source(self, signature) -> str:
        self.decisions = {n: gradient_writes.decide(self.loads_of[n], self.forms) for n in self.inputs}
        self.fold = None
        self.tapes = []
        self.partial_params = {}
        for n in self.inputs:
            if self.decisions[n].partials:
                names = []
                for base in (f"partial_{n}", f"partial_{n}_row", f"partial_{n}_rows"):
                    name = base
                    while name in self.w.taken:
                        name = "_" + name
                    self.w.taken.add(name)
                    names.append(name)
                self.partial_params[n] = tuple(names)
        for n, dec in self.decisions.items():
            how = "plain read-add-write" if dec.plain else ("plain or atomic by a runtime test" if dec.condition
                                                            else "partial sums" if dec.partials else "atomic add")
            self.w.decide(f"gradient of {n} -> {self.grad_param[n]}: {how}: {dec.reason}")
        for n in self.outputs:
            self.w.decide(f"incoming gradient of {n} read from {self.grad_param[n]} (masked as the store)")
        self.fold = self._plan_fold()
        if self.fold:
            names = ", ".join(self.fold.accumulators)
            self.w.decide(f"folded: each program runs forward programs p, p + P, p + 2P, ... of grid axis 0 (P: one "
                          f"wave of resident programs) and sums the gradients of {names} in registers, so the "
                          "partial buffers have P rows, not one per forward program (their traffic and the "
                          "second kernel's work shrink by the rows each program runs)")
        self.w.decide("forward values recomputed in the backward (straight-line code and its reductions cost "
                      "what the forward costs; nothing is saved between the two kernels)")
        # The dry pass: everything replayed, to learn what the reverse sweep reads; then the real one.
        decisions = list(self.w.decisions)
        with self.w.capture():
            self.replay(self.ir.body)
            self.used_primals = set()
            self.sweep(self.ir.body)
        self.reads = set(self.used_primals)
        self.w.decisions = decisions
        self.w.taken -= {name for t in self.tapes for name in (t.pointer, t.trips)}    # the dry pass's tapes
        self.names = {v: n for v, n in self.arg_names.items()}
        self.adj, self.respelled, self.incoming, self.used_primals = {}, {}, {}, set()
        self.needed = self._needed()
        self.tapes = []                 # the dry pass's tapes are not the kernel's
        if self.fold:
            self._fold_prologue()
        with self.w.indent() if self.fold else _NO_INDENT:
            self.w.line("# ---- the forward recomputed (primal replay) ----")
            self.replay(self.ir.body)
            self.w.line("# ---- the reverse sweep ----")
            self.sweep(self.ir.body)
        if self.fold:
            self._fold_epilogue()
        hidden = [name for n in self.inputs if n in self.partial_params for name in self.partial_params[n]]
        hidden += [self.fold.programs] if self.fold else []
        hidden += [name for t in self.tapes for name in (t.pointer, t.trips)]
        params = ", ".join(signature + [self.grad_param[n] for n in self.grads] + hidden)
        head = [f"def {self.name}({params}):",
                f'    """Derived by transpiler.autodiff: the backward of {self.ir.name}."""']
        return "\n".join(head + self.w.lines) + "\n"
