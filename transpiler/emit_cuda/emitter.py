"""Walks a kernel's IR with its analysis and produces the `.cu` text through the lowering rules and templates.

Owns what every rule shares: C names derived from Python names, the Python line shown above each statement
group, one C array per block value in its layout (`float x[16]`), the per-thread coordinate bases of each
layout, shared-memory buffers, and `operand(value, layout)`, which hands a rule a way to read a value in the
layout it needs: a flexible value is computed right there in that layout; a fixed one is read directly,
through a register permutation when one exists, or converted through shared memory.
"""
from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path

import jinja2

from .. import dtypes
from ..analysis import conversion_chunks
from ..analysis.bank_padding import conversion_padding
from ..analysis.scratch_plan import scratch_key
from ..analysis.stmatrix import plan_stmatrix
from ..analysis.layouts import LinearLayout, register_map
from ..parse.ir import OP_KINDS, OpKind, Value
from . import cexpr, cspell
from .bits import bit_moves
from .names import CNames
from .packed_phases import PackedRowsEmission
from .roles import Roles
from .statement_order import Chunk, Group, in_writing_order, scalars_written_where_read

LOWERINGS: dict = {}


def lowering(*names):
    """Register the lowering rule of one or more IR op kinds (`parse.ir.OpKind`)."""
    def register(fn):
        for n in names:
            assert n in OP_KINDS, f"no IR op kind '{n}'"
            LOWERINGS[n] = fn
        return fn
    return register


def templates_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here.parent / "templates", here.parent.parent / "templates"):
        if (candidate / "kernel.cu.j2").exists():
            return candidate
    raise FileNotFoundError("cannot find the templates folder")


_env = None


def comment_text(text: str) -> str:
    """`text` made safe to end a `//` comment: a trailing backslash (a Python line continued onto the next) would
    splice the next C++ line into the comment and silently drop that statement."""
    return text.strip().rstrip("\\").rstrip()


def jinja_env():
    global _env
    if _env is None:
        _env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), trim_blocks=True,
                                  lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return _env


class Read:
    """How to read a materialized value: `at(r)` gives the C expression of register r (a C expression)."""

    def __init__(self, array=None, scalar=None, regmap=None, ctype="", expr=None):
        self.array = array        # C array name, or None for values equal in every register
        self.scalar = scalar      # C expression, for register-independent values
        self.regmap = regmap      # bit-move pairs (target reg bit -> source reg bit), None for identity
        self.ctype = ctype
        self.expr = expr          # register -> C expression, for a value written into its one reader's text

    def at(self, r="r") -> str:
        if self.expr is not None:
            return self.expr(r)
        if self.array is None:
            return self.scalar
        if self.regmap is None:
            return f"{self.array}[{cexpr.strip_parens(r)}]"
        if not self.regmap:
            return f"{self.array}[0]"
        if r.isdigit():       # a known register: its source register, not an expression the C compiler folds
            return f"{self.array}[{sum(1 << d for s, d in self.regmap if int(r) >> s & 1)}]"
        return f"{self.array}[{bit_moves(r, self.regmap, 30)}]"

    @property
    def is_identity_array(self):
        return self.array is not None and self.regmap is None


class Emitter(PackedRowsEmission):
    def __init__(self, kernel, analysis):
        self.kernel = kernel
        self.analysis = analysis
        self.options = analysis.options    # num_warps, #line directives, ... (transpiler/options.py)
        self.layouts = analysis.layouts
        self.lines: list = []
        self.indent = 1
        self.names: dict = {}
        self.c_names = CNames()
        self.helper_names: dict = {}
        self.scopes: list = [{}]
        self.layout_ids: dict = {}
        self.thread_base_lines: list = []
        self.thread_bases: dict = {}
        self.shared_decls: list = []
        self.smem = analysis.shared_memory.fork()   # the plan (analysis/shared_memory.py, scratch_plan.py)
        self.tiles: dict = {}              # value -> SharedTile holding it (staged loads of a pipelined loop)
        self.invariant_buffers: dict = {}  # value -> (buffer, tile, scope written in): a loop-invariant dot operand
        self.stage_tiles: dict = {}        # staged load op -> its ring of stage tiles
        self.row_rings: dict = {}          # row ring index -> this thread's runs in it (rules/row_ring.py)
        self.row_ring_slots = None         # (read slot, write slot) C names inside the row loop
        self.uses_tiles = False            # whether the tile / tensor-core helpers (device_tiles.cuh) are needed
        self.pending_prefetch = None       # a pipelined loop's copies, for its first dot to issue mid-way
        self.prefetch_host = None          # ... that dot
        self.refill_dot = None             # ... when it reads its whole stage into registers before them
        self.refill_after_wait = False     # ... issued after its in-flight wait, not before (a TMA ring's refill)
        self.device_functions: list = []
        self.async_dot = None                # the wgmma dot a pipelined loop leaves in flight (pipelining.py)
        self.async_dot_issued = False
        self.in_flight_acc = None            # (C array, registers) of its accumulator, for the other dots' waits
        self.last_line = None
        self.line_stack: list = []
        self.groups: list = []             # statement_order.Group of each op of a region being lowered
        self.chunks: list = []             # the chunks being written, innermost last
        self.detached_into: list = []      # per detached_text block: the group it was opened in, or None
        self.written_where_read = scalars_written_where_read(kernel)
        self.roles = Roles(kernel)         # names of unnamed values from their role (roles.py)
        self.loop_depth = 0
        self.macros = jinja_env().get_template("ops.j2").module
        self.dot_macros = jinja_env().get_template("dot.j2").module
        self.const_pointers = analysis.read_only.const_values   # pointers derived only from read-only arguments
        self.tma_prefetch = False     # thread 0 prefetches the tensor maps at kernel entry (analysis/tma.py)
        self.uses_tma = False         # whether a loop loads by TMA (rules/tma.py): its helpers and parameters
        self.tma_maps: dict = {}      # TMA load -> the C name of its tensor map parameter
        self.tma_params: list = []    # (C declaration, host description) of each tensor map parameter
        self.tma_ready = None         # the C name of the parameter saying the host encoded every map
        # The thread that performs a program's scalar stores: the block's first, or its warp's first lane when
        # a block holds several programs of one warp each (analysis/program_packing.py).
        self.first_thread_of_program = "lane == 0" if analysis.packing else "threadIdx.x == 0"
        # Packed rows (analysis/packed_rows.py): the phase is the count of cross-warp reductions written so far; a
        # packed root or re-widened value bound in an earlier phase is made again where the current one reads it.
        self.packed = analysis.packed_rows
        self.phase = 0
        self.bound_phase: dict = {}        # (value, layout) -> the phase it was bound in (packed values only)
        self.stale_roots: dict = {}        # (root value, layout) -> its earlier Read, while it is copied anew
        self.window = None                 # (C run variable, registers a run, layout) inside a tail run by runs

    # -- text ----------------------------------------------------------------------------------------------
    def write(self, text: str):
        line = self.line_stack[-1] if self.line_stack else None
        if self.chunks:
            # In a group (statement_order.py) the Python lines are shown when the group is written out.
            self.lines.extend((line, self.indent, x) for x in text.splitlines())
            if line is not None:
                self.last_line = line
            return
        if line is not None and line != self.last_line:
            self._comment_line(line, self.lines, self.indent)
        pad = "  " * self.indent
        for x in text.splitlines():
            self.lines.append(pad + x if x.strip() else "")

    def _comment_line(self, line, out, indent):
        """Show the Python line the next statements come from (once per group)."""
        self.last_line = line
        text = self.kernel.source_lines.get(line)
        if text:
            out.append("")
            out.append("  " * indent + f"// {comment_text(text)}")
            if self.options.line_directives:
                out.append(f'#line {line + 1} "{self.kernel.source_file}"')

    def run_rule(self, op, layout):
        """Lower `op`; whatever it writes is shown under its Python line, as a chunk of the current group."""
        line = op.loc.line if op.loc else None
        self.line_stack.append(line)
        if not self.groups:
            try:
                LOWERINGS[op.name](self, op, layout)
            finally:
                self.line_stack.pop()
            return
        chunk, saved = Chunk(op, line), self.lines
        self.lines = chunk.lines
        self.chunks.append(chunk)
        try:
            LOWERINGS[op.name](self, op, layout)
        finally:
            self.chunks.pop()
            self.lines = saved
            self.line_stack.pop()
        self.lines.append(chunk)
        self.groups[-1].chunks.append(chunk)

    @contextmanager
    def detached_text(self, indent=1):
        """Write a text of its own (a device function's body, a ring's copies: in `self.lines` until the block
        ends), outside the statements of the op being lowered. What it binds has no chunk: a group reading it
        keeps its statements in the order they were written."""
        saved = (self.lines, self.indent, self.last_line, self.chunks, self.groups)
        self.detached_into.append(self.groups[-1] if self.groups else None)
        self.lines, self.indent, self.chunks, self.groups = [], indent, [], []
        try:
            yield
        finally:
            self.lines, self.indent, self.last_line, self.chunks, self.groups = saved
            self.detached_into.pop()

    def _lower_in_group(self, op, layout):
        """Lower `op` of a region with the operands it computes on demand, then write the group's chunks in
        their order (statement_order.py), each Python line shown where its statements begin."""
        group, before = Group(), self.last_line
        self.groups.append(group)
        saved = self.lines
        self.lines = []
        try:
            self.run_rule(op, layout)
        finally:
            self.groups.pop()
            self.lines = saved
        after, last, out = self.last_line, before, []
        for chunk, entries in in_writing_order(group):
            for line, indent, text in entries:
                if line is not None and line != last:
                    self._comment_line(line, out, indent)
                    last = line
                out.append("  " * indent + text if text.strip() else "")
        # Inside another op's chunk (a loop body), the text joins that chunk as written, Python lines shown.
        self.lines.extend([(None, 0, x) for x in out] if self.chunks else out)
        self.last_line = after

    # -- names ---------------------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        """A C name for something the kernel declares: unique in the whole `.cu` (see names.py)."""
        return self.c_names.fresh(hint)

    def function_name(self, hint: str) -> str:
        """The C name of a device helper called `hint`, the same for every call (allocated on the first)."""
        if hint not in self.helper_names:
            self.helper_names[hint] = self.fresh(hint)
        return self.helper_names[hint]

    def name_of(self, v: Value, hint=None) -> str:
        if v not in self.names:
            self.names[v] = self.fresh(v.name or hint or "t")
        return self.names[v]

    # -- layouts -------------------------------------------------------------------------------------------
    def layout_id(self, layout: LinearLayout) -> int:
        if layout not in self.layout_ids:
            self.layout_ids[layout] = len(self.layout_ids)
        return self.layout_ids[layout]

    def thread_base(self, layout: LinearLayout, dim: int) -> str | None:
        """Name of the per-thread part of coordinate `dim` in `layout` (None when it is zero)."""
        key = (layout, dim)
        if key in self.thread_bases:
            return self.thread_bases[key]
        pairs_lane = [(i, b[dim].bit_length() - 1) for i, b in enumerate(layout.lane) if b[dim]]
        pairs_warp = [(i, b[dim].bit_length() - 1) for i, b in enumerate(layout.warp) if b[dim]]
        terms = []
        if pairs_lane:
            terms.append(bit_moves("lane", pairs_lane, 5))
        if pairs_warp:
            terms.append(bit_moves("warp", pairs_warp, max(len(layout.warp), 1)))
        if not terms:
            self.thread_bases[key] = None
            return None
        name = self.fresh(f"L{self.layout_id(layout)}_dim{dim}")
        self.thread_base_lines.append(f"const int {name} = {' | '.join(terms)};")
        self.thread_bases[key] = name
        return name

    def reg_coord_expr(self, layout: LinearLayout, dim: int, r="r") -> str:
        """The register part of coordinate `dim` (no thread base): a constant once `r` is unrolled."""
        pairs = [(i, b[dim].bit_length() - 1) for i, b in enumerate(layout.reg) if b[dim]]
        return bit_moves(r, pairs, len(layout.reg)) if pairs else "0"

    def tile_thread_offset(self, layout: LinearLayout, tile) -> str:
        """Name of this thread's part of the swizzled offset of `layout`'s elements in tiles shaped like
        `tile` (declared once per kernel with the thread bases)."""
        self.uses_tiles = True
        key = ("tile", layout, tile.shape, tile.col_dim, tile.dtype.itemsize, tile.slabs)
        if key not in self.thread_bases:
            coords = [self.thread_base(layout, d) or "0" for d in range(2)]
            name = self.fresh(f"L{self.layout_id(layout)}_tile{len([k for k in self.thread_bases if k[0] == 'tile'])}")
            self.thread_base_lines.append(f"const int {name} = {tile.offset(coords)};")
            self.thread_bases[key] = name
        return self.thread_bases[key]

    def tile_offset(self, layout: LinearLayout, tile, r="r") -> str:
        """Offset in `tile` of register `r` of a value held in `layout`: thread part (once) with the
        register part (a constant)."""
        return tile.split_offset(self.tile_thread_offset(layout, tile), list(layout.lane) + list(layout.warp),
                                 [self.reg_coord_expr(layout, d, r) for d in range(2)], list(layout.reg))

    def coord_expr(self, layout: LinearLayout, dim: int, r="r") -> str:
        base = self.thread_base(layout, dim)
        pairs = [(i, b[dim].bit_length() - 1) for i, b in enumerate(layout.reg) if b[dim]]
        reg = bit_moves(r, pairs, len(layout.reg)) if pairs else None
        parts = [p for p in (base, reg) if p]
        return " + ".join(f"({p})" if " " in p and len(parts) > 1 and not cexpr.is_atom(p) else p
                          for p in parts) if parts else "0"

    def padded_index(self, layout: LinearLayout, pad: int, r="r") -> str:
        """Offset in a conversion buffer: row-major, each row of the last dimension padded by `pad` elements
        (chosen in analysis/bank_padding.py so the warp's writes and reads spread over the banks)."""
        if not pad:
            return self.linear_index(layout, r)
        terms = []
        stride = layout.shape[-1] + pad
        for d in reversed(range(layout.rank)):
            c = self.coord_expr(layout, d, r)
            step = 1 if d == layout.rank - 1 else stride
            if d != layout.rank - 1:
                stride *= layout.shape[d]
            if c != "0":
                c = f"({c})" if " " in c else c
                terms.append(f"{c} * {step}" if step != 1 else c)
        return " + ".join(reversed(terms)) if terms else "0"

    def linear_index(self, layout: LinearLayout, r="r") -> str:
        """Row-major element index of register r of this thread."""
        terms = []
        stride = 1
        for d in reversed(range(layout.rank)):
            c = self.coord_expr(layout, d, r)
            if c != "0":
                terms.append(f"({c}) * {stride}" if stride != 1 else (f"({c})" if " " in c else c))
            stride *= layout.shape[d]
        return " + ".join(reversed(terms)) if terms else "0"

    # -- shared memory -------------------------------------------------------------------------------------
    def _declare_buffer(self, buffer, dt, hint, ctype=None) -> str:
        name = self.fresh(hint)
        ct = ctype or cspell.ctype(dt)
        self.smem.declare(buffer, name, ct)
        return name

    def shared_buffer(self, dt, count: int, hint: str, key) -> str:
        """The planned buffer `key` of its own for the whole kernel (reduction or scan scratch, a loop-invariant
        dot operand), declared at the top."""
        buffer = self.smem.planned(key)
        assert (buffer.dtype, buffer.count) == (dt, count), (key, buffer, dt, count)
        name = self._declare_buffer(buffer, dt, hint)
        ct = buffer.ctype
        self.shared_decls.append(f"{ct}* {name} = reinterpret_cast<{ct}*>(tp_smem + {buffer.offset});")
        return name

    def scratch_buffers(self, key, hints):
        """The planned scratch use `key` (analysis/scratch_plan.py) declared under the names `hints` ([(hint,
        C type or None)], one per buffer), and whether a barrier must come first (earlier readers of the same
        bytes may still be reading)."""
        buffers, barrier = self.smem.begin_scratch(key, self.loop_depth > 0)
        assert len(buffers) == len(hints), (key, buffers, hints)
        names = []
        for buffer, (hint, ctype) in zip(buffers, hints):
            name = self._declare_buffer(buffer, buffer.dtype, hint, ctype)
            ct = buffer.ctype
            self.write(f"{ct}* {name} = reinterpret_cast<{ct}*>(tp_smem + {buffer.offset});")
            names.append(name)
        return names, barrier

    def stage_buffer(self, dt, count: int, hint: str, key) -> str:
        """The planned ring `key` of stage buffers of a pipelined loop (declared by the caller before the
        prologue)."""
        buffer = self.smem.planned(key)
        assert (buffer.dtype, buffer.count) == (dt, count), (key, buffer, dt, count)
        name = self._declare_buffer(buffer, dt, hint)
        ct = buffer.ctype
        self.write(f"{ct}* {name} = reinterpret_cast<{ct}*>(tp_smem + {buffer.offset});")
        return name

    # -- values --------------------------------------------------------------------------------------------
    def bind(self, v: Value, read: Read, layout=None):
        self.scopes[-1][(v, layout)] = read
        if v in self.packed.rewidened or (v.owner in self.packed.roots and read.is_identity_array
                                          and layout == self.layouts.layout.get(v)):
            # (a root seen through a register map is read as held: its copy is made in the root's own layout)
            self.bound_phase[(v, layout)] = self.phase
        if self.chunks:
            self.groups[-1].defined_by[(v, layout)] = self.chunks[-1]
        elif self.detached_into and self.detached_into[-1] is not None:
            self.detached_into[-1].detached.add((v, layout))

    def lookup(self, v, layout):
        for scope in reversed(self.scopes):
            if (v, layout) in scope:
                if self.bound_phase.get((v, layout), self.phase) < self.phase and self._remade_here(layout):
                    return self._made_again(v, layout, scope[(v, layout)])
                if self.chunks:     # the chunk reading it must come after the one that wrote it
                    group = self.groups[-1]
                    producer = group.defined_by.get((v, layout))
                    if producer is not None and producer is not self.chunks[-1]:
                        self.chunks[-1].reads.add(producer)
                    group.keep_order |= (v, layout) in group.detached
                return scope[(v, layout)]
        return None

    def scalar(self, v: Value) -> str:
        """C expression of a scalar value."""
        read = self.lookup(v, None)
        if read is None:
            # Scalars computed from constants are emitted where first needed.
            self.run_rule(v.owner, None)
            read = self.lookup(v, None)
        return read.at()

    def operand(self, v: Value, layout: LinearLayout | None) -> Read:
        """A way to read `v` register by register in `layout` (scalars read the same everywhere)."""
        if not v.shape:
            return Read(scalar=self.scalar(v), ctype=cspell.ctype(v.dtype))
        read = self.lookup(v, layout)
        if read is not None:
            return read
        if v in self.layouts.flexible:
            # Emitted where it is needed, under its own Python line.
            self.run_rule(v.owner, layout)
            return self.lookup(v, layout)
        own = self.layouts.layout[v]
        src = self.lookup(v, own)
        if src is None:
            raise AssertionError(f"{v!r} used before its definition was emitted")
        if own == layout:
            return src
        mapping = register_map(layout, own)
        if mapping is not None:
            from .rules.values import remapped
            read = remapped(src, mapping)
            if read is not None:
                self.bind(v, read, layout)
                return read
        return self.convert(v, own, layout, src)

    def convert(self, v, own, layout, src: Read) -> Read:
        dt = v.dtype
        chunks = conversion_chunks.plan(own, layout, dt.itemsize)
        passes = f" in {chunks.count} chunks" if chunks.count > 1 else ""
        self.write(f"// {self.name_of(v)} to layout L{self.layout_id(layout)} through shared memory{passes}")
        own_part, layout_part = chunks.squeeze(own), chunks.squeeze(layout)
        pad = conversion_padding(own_part, layout_part, dt)
        ct = self.ctype(v)    # pointer blocks into read-only arguments stay `const T*`
        (buf,), barrier = self.scratch_buffers(scratch_key("convert", v, layout, self.smem.in_pipeline),
                                               [(f"convert_{self.name_of(v)}", ct)])
        name = self.fresh(f"{self.name_of(v)}_L{self.layout_id(layout)}")
        blocks = plan_stmatrix(own_part, dt.itemsize, own_part.shape[-1] + pad, self.analysis.options.arch) \
            if chunks.count == 1 else None
        if blocks is not None:
            self.uses_tiles = True       # the helper lives with the tensor-core ones
            self.write(self.macros.convert_stmatrix(dict(
                ctype=ct, name=name, n_src=own.num_regs, n_dst=layout.num_regs, buf=buf, src=src.array,
                pitch=own_part.shape[-1] + pad, dst_index=self.padded_index(layout_part, pad),
                barrier_before=barrier, **_stmatrix_addresses(blocks))))
            read = Read(array=name, ctype=ct)
            self.bind(v, read, layout)
            return read
        text = self.macros.convert(dict(
            ctype=ct, name=name, n_src=own.num_regs, n_dst=layout.num_regs, buf=buf,
            src=src.array, src_index=self.padded_index(own_part, pad), dst_index=self.padded_index(layout_part, pad),
            barrier_before=barrier, chunks=chunks.count,
            src_chunk=bit_moves("r", chunks.register_bits(own), len(own.reg)),
            dst_chunk=bit_moves("r", chunks.register_bits(layout), len(layout.reg))))
        self.write(text)
        read = Read(array=name, ctype=ct)
        self.bind(v, read, layout)
        return read

    def array_name(self, v, layout) -> str:
        """C name for `v` in `layout`: the Python name, suffixed when the value exists in several layouts."""
        if v not in self.names:
            return self.name_of(v, self.roles.name(v) or _hint_for(v))
        return self.fresh(f"{self.names[v]}_L{self.layout_id(layout)}")

    def define_block(self, v, layout, expr_at, run_mask=0) -> str:
        """Declare `v`'s register array in `layout`, each register given by `expr_at(r)`; with `run_mask`, the
        registers whose indices differ only in those bits hold equal elements, and each is computed from the
        first register of its run (`expr_at("run")`), so the C compiler folds every run into one computation."""
        name = self.array_name(v, layout)
        lo, hi = self.register_range(layout)
        if self.window is not None and self.window[2] == layout:
            run_mask &= self.window[1] - 1      # runs of equal registers end at the window's edge
        per_run = expr_at("run") if run_mask else ""
        if re.search(r"\brun\b", per_run):     # an expression reading no register needs no run index
            # read once, the run's first register is written in place: `x[r & ~3]`
            once = (re.sub(r"\brun\b", f"(r & ~{run_mask})", per_run)
                    if len(re.findall(r"\brun\b", per_run)) == 1 else "")
            self.write(self.macros.block_elementwise_runs(self.ctype(v), name, layout.num_regs, run_mask, per_run,
                                                          once, lo, hi))
        else:
            self.write(self.macros.block_elementwise(self.ctype(v), name, layout.num_regs, expr_at("r"), lo, hi))
        self.bind(v, Read(array=name, ctype=self.ctype(v)), layout)
        return name

    def define_scalar(self, v, expr) -> str:
        name = self.name_of(v, self.roles.name(v) or _hint_for(v))
        ct = self.ctype(v)
        self.write(f"{ct} {name} = {expr};" if v.dtype.is_ptr() else self.macros.scalar_def(ct, name, expr))
        self.bind(v, Read(scalar=name, ctype=ct), None)
        return name

    def ctype(self, v) -> str:
        """C type of a value; pointers into read-only arguments are `const T*`."""
        if v.dtype.is_ptr() and v in self.const_pointers:
            return f"const {cspell.ctype(v.dtype)}"
        return cspell.ctype(v.dtype)

    def layout_of(self, v):
        return self.layouts.layout.get(v)

    # -- walking -------------------------------------------------------------------------------------------
    def emit_region(self, region, skip=()):
        self.emit_ops(region.ops, skip)

    def emit_ops(self, ops, skip=()):
        in_tail = set()
        for op in ops:
            if op in skip or op in in_tail:
                continue
            tail = self.packed.tails.get(op) if self.window is None else None
            if tail is not None:
                self._emit_tail_by_runs(tail, skip)
                in_tail = set(tail.ops)
                continue
            if op.results and all(r in self.layouts.flexible for r in op.results):
                continue  # computed on demand, in the layout its user needs
            if op.results and not any(r.shape for r in op.results) and op.name == OpKind.CONSTANT:
                continue  # constants are spelled inline
            if op in self.written_where_read:
                continue  # scalar arithmetic: written with the statement that reads it first
            self.emit_op(op)

    def emit_op(self, op):
        if op.name not in LOWERINGS:
            raise NotImplementedError(f"no lowering rule for IR op '{op.name}'")
        layout = self.layout_of(op.results[0]) if op.results and op.results[0].shape else None
        self._lower_in_group(op, layout)
        if op in self.packed.boundaries:
            self.phase += 1

    def push_scope(self):
        self.scopes.append({})

    def pop_scope(self):
        self.scopes.pop()


def _xor_of_bits(var, first_bit, moves, coord):
    """C expression: the XOR of `moves[i][coord]` over the set bits `first_bit + i` of `var` (0 when none)."""
    terms = [f"((({var} >> {first_bit + i}) & 1) * {m[coord]})" for i, m in enumerate(moves) if m[coord]]
    return " ^ ".join(terms) if terms else "0"


def _stmatrix_addresses(blocks):
    """The parts of a stmatrix conversion's addresses (analysis/stmatrix.py): the lane's own (its row in the block,
    the block pairs its lane bits 3-4 pick, its warp's move) and per instruction `quad`'s (the other pairs)."""
    pairs = blocks.pairs
    lane = [(_xor_of_bits("lane", 3, pairs[:2], d)) for d in (0, 1)]
    warp = [(_xor_of_bits("warp", 0, blocks.warps, d)) for d in (0, 1)]
    row = " ^ ".join(t for t in ("(lane & 7)", lane[0], warp[0]) if t != "0")
    col = " ^ ".join(t for t in (lane[1], warp[1]) if t != "0") or "0"
    return dict(lane_row=row, lane_col=col, q_row=_xor_of_bits("quad", 0, pairs[2:], 0),
                q_col=_xor_of_bits("quad", 0, pairs[2:], 1))


def _hint_for(v):
    op = v.owner
    if op is None or not hasattr(op, "name"):
        return "t"
    if op.name == OpKind.ELEMENTWISE:
        return op.attrs["fn"]
    return _NAME_HINTS.get(op.name, op.name)


# C name stems of values by the kind of op that made them (elementwise ones are named after their function).
_NAME_HINTS = {OpKind.ADDPTR: "ptr", OpKind.LOAD: "ld", OpKind.REDUCE: "red", OpKind.SPLAT: "s",
               OpKind.BROADCAST: "b", OpKind.CAST: "cvt", OpKind.BITCAST: "bits", OpKind.ARANGE: "idx",
               OpKind.EXPAND_DIMS: "e", OpKind.PERMUTE: "tr", OpKind.RESHAPE: "rs"}


def ctype_of(v):
    return cspell.ctype(v.dtype)


__all__ = ["Emitter", "Read", "lowering", "LOWERINGS", "jinja_env", "ctype_of", "dtypes"]
