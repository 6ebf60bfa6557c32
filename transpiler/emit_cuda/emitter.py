"""Walks a kernel's IR with its analysis and produces the `.cu` text through the lowering rules and templates.

Owns what every rule shares: C names derived from Python names, the Python line shown above each statement
group, one C array per block value in its layout (`float x[16]`), the per-thread coordinate bases of each
layout, shared-memory buffers, and `operand(value, layout)`, which hands a rule a way to read a value in the
layout it needs: a flexible value is computed right there in that layout; a fixed one is read directly,
through a register permutation when one exists, or converted through shared memory.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import jinja2

from .. import dtypes
from ..analysis.layouts import LinearLayout, register_map
from ..parse.ir import Value
from . import cspell
from .bits import bit_moves, linear_register_map

_RESERVED = {"lane", "warp", "r", "v", "o", "k", "j", "w", "src", "tp", "int", "float", "double", "char", "short",
             "long", "unsigned", "signed", "bool", "true", "false", "if", "else", "for", "while", "do", "return",
             "switch", "case", "default", "break", "continue", "const", "static", "struct", "class", "union",
             "auto", "register", "volatile", "extern", "inline", "template", "typename", "namespace", "new",
             "delete", "this", "operator", "sizeof", "void", "goto", "enum", "private", "public", "protected",
             "virtual", "friend", "typedef", "using", "asm", "half", "min", "max", "abs", "exp", "log", "sqrt",
             "and", "or", "xor", "not", "bitand", "bitor", "compl", "and_eq", "or_eq", "xor_eq", "not_eq",
             "blockIdx", "threadIdx", "gridDim", "blockDim", "printf", "memcpy"}

LOWERINGS: dict = {}


def lowering(*names):
    """Register the lowering rule of one or more IR op names."""
    def register(fn):
        for n in names:
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


def jinja_env():
    global _env
    if _env is None:
        _env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates_dir())), trim_blocks=True,
                                  lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    return _env


class Read:
    """How to read a materialized value: `at(r)` gives the C expression of register r (a C expression)."""

    def __init__(self, array=None, scalar=None, regmap=None, ctype=""):
        self.array = array        # C array name, or None for values equal in every register
        self.scalar = scalar      # C expression, for register-independent values
        self.regmap = regmap      # bit-move pairs (target reg bit -> source reg bit), None for identity
        self.ctype = ctype

    def at(self, r="r") -> str:
        if self.array is None:
            return self.scalar
        if self.regmap is None:
            return f"{self.array}[{r}]"
        if not self.regmap:
            return f"{self.array}[0]"
        return f"{self.array}[{bit_moves(r, self.regmap, 30)}]"

    @property
    def is_identity_array(self):
        return self.array is not None and self.regmap is None


class Emitter:
    def __init__(self, kernel, analysis):
        self.kernel = kernel
        self.analysis = analysis
        self.layouts = analysis.layouts
        self.lines: list = []
        self.indent = 1
        self.names: dict = {}
        self.used_names: set = set()
        self.scopes: list = [{}]
        self.layout_ids: dict = {}
        self.thread_base_lines: list = []
        self.thread_bases: dict = {}
        self.shared_decls: list = []
        self.shared_bytes = 0
        self.device_functions: list = []
        self.last_line = None
        self.line_stack: list = []
        self.loop_depth = 0
        self.macros = jinja_env().get_template("ops.j2").module
        self.const_pointers = set()   # pointer values derived only from read-only arguments

    # -- text ----------------------------------------------------------------------------------------------
    def write(self, text: str):
        if self.line_stack and self.line_stack[-1] is not None and self.line_stack[-1] != self.last_line:
            self._comment_line(self.line_stack[-1])
        pad = "  " * self.indent
        for line in text.splitlines():
            self.lines.append(pad + line if line.strip() else "")

    def _comment_line(self, line):
        """Show the Python line the next statements come from (once per group)."""
        self.last_line = line
        text = self.kernel.source_lines.get(line)
        if text:
            self.lines.append("")
            self.lines.append("  " * self.indent + f"// {text.strip()}")
            if os.environ.get("TRANSPILER_LINE_DIRECTIVES"):
                self.lines.append(f'#line {line + 1} "{self.kernel.source_file}"')

    def run_rule(self, op, layout):
        """Lower `op`; whatever it writes is shown under its Python line."""
        self.line_stack.append(op.loc.line if op.loc else None)
        try:
            LOWERINGS[op.name](self, op, layout)
        finally:
            self.line_stack.pop()

    # -- names ---------------------------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = re.sub(r"\W", "_", hint or "t")
        if base[0].isdigit():
            base = "_" + base
        if base in _RESERVED:
            base += "_"
        name = base
        i = 1
        while name in self.used_names:
            name = f"{base}_{i}"
            i += 1
        self.used_names.add(name)
        return name

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
        name = f"L{self.layout_id(layout)}_dim{dim}"
        self.thread_base_lines.append(f"const int {name} = {' | '.join(terms)};")
        self.thread_bases[key] = name
        return name

    def coord_expr(self, layout: LinearLayout, dim: int, r="r") -> str:
        base = self.thread_base(layout, dim)
        pairs = [(i, b[dim].bit_length() - 1) for i, b in enumerate(layout.reg) if b[dim]]
        reg = bit_moves(r, pairs, len(layout.reg)) if pairs else None
        parts = [p for p in (base, reg) if p]
        return " + ".join(f"({p})" if " " in p and len(parts) > 1 else p for p in parts) if parts else "0"

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
    def shared_buffer(self, dt, count: int, hint: str) -> str:
        name = self.fresh(hint)
        ct = cspell.ctype(dt)
        self.shared_decls.append(f"__shared__ {ct} {name}[{count}];")
        self.shared_bytes += count * dt.itemsize
        return name

    # -- values --------------------------------------------------------------------------------------------
    def bind(self, v: Value, read: Read, layout=None):
        self.scopes[-1][(v, layout)] = read

    def lookup(self, v, layout):
        for scope in reversed(self.scopes):
            if (v, layout) in scope:
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
        buf = self.shared_buffer(dt, v.type.numel, f"convert_{self.name_of(v)}")
        name = self.fresh(f"{self.name_of(v)}_L{self.layout_id(layout)}")
        self.write(f"// {self.name_of(v)} to layout L{self.layout_id(layout)} through shared memory")
        text = self.macros.convert(dict(
            ctype=cspell.ctype(dt), name=name, n_src=own.num_regs, n_dst=layout.num_regs, buf=buf,
            src=src.array, src_index=self.linear_index(own), dst_index=self.linear_index(layout),
            barrier_before=self.loop_depth > 0))
        self.write(text)
        read = Read(array=name, ctype=cspell.ctype(dt))
        self.bind(v, read, layout)
        return read

    def array_name(self, v, layout) -> str:
        """C name for `v` in `layout`: the Python name, suffixed when the value exists in several layouts."""
        if v not in self.names:
            return self.name_of(v, _hint_for(v))
        return self.fresh(f"{self.names[v]}_L{self.layout_id(layout)}")

    def define_block(self, v, layout, expr_at) -> str:
        """Declare `v`'s register array in `layout`, each register given by `expr_at(r)`."""
        name = self.array_name(v, layout)
        self.write(self.macros.block_elementwise(self.ctype(v), name, layout.num_regs, expr_at("r")))
        self.bind(v, Read(array=name, ctype=self.ctype(v)), layout)
        return name

    def define_scalar(self, v, expr) -> str:
        name = self.name_of(v, _hint_for(v))
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
    def emit_region(self, region):
        for op in region.ops:
            if op.results and all(r in self.layouts.flexible for r in op.results):
                continue  # computed on demand, in the layout its user needs
            if op.results and not any(r.shape for r in op.results) and op.name in ("constant",):
                continue  # constants are spelled inline
            self.emit_op(op)

    def emit_op(self, op):
        if op.name not in LOWERINGS:
            raise NotImplementedError(f"no lowering rule for IR op '{op.name}'")
        layout = self.layout_of(op.results[0]) if op.results and op.results[0].shape else None
        self.run_rule(op, layout)

    def push_scope(self):
        self.scopes.append({})

    def pop_scope(self):
        self.scopes.pop()


def _hint_for(v):
    op = v.owner
    if op is None or not hasattr(op, "name"):
        return "t"
    if op.name == "elementwise":
        return op.attrs["fn"]
    return {"addptr": "ptr", "load": "ld", "reduce": "red", "splat": "s", "broadcast": "b", "cast": "cvt",
            "bitcast": "bits", "arange": "idx", "expand_dims": "e", "permute": "tr", "reshape": "rs"}.get(op.name, op.name)


def ctype_of(v):
    return cspell.ctype(v.dtype)


__all__ = ["Emitter", "Read", "lowering", "LOWERINGS", "jinja_env", "ctype_of", "dtypes"]
