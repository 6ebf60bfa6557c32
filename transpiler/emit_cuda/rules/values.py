"""Lowering of value-producing ops: constants, program ids, arange, elementwise math, casts, pointer offsets
and the shape ops (splat, broadcast, expand_dims, permute, reshape), which cost nothing in registers."""
from __future__ import annotations

from ...analysis.layouts import linear_register_map, register_map
from ...parse.ir import OpKind
from .. import cspell, inline_asm, map_elementwise
from ..emitter import Read, lowering
from ..libdevice import libdevice_call


@lowering(OpKind.CONSTANT)
def constant(em, op, layout):
    v = op.result
    em.bind(v, Read(scalar=cspell.literal(op.attrs["value"], v.dtype), ctype=cspell.ctype(v.dtype)), None)


@lowering(OpKind.PROGRAM_ID)
def program_id(em, op, layout):
    axis, per_block = op.attrs["axis"], em.analysis.programs_per_block
    block = f"static_cast<int>(blockIdx.{'xyz'[axis]})"
    # Packed programs (analysis/program_packing.py): program `block * per_block + slot` runs in warp `slot`.
    em.define_scalar(op.result, f"{block} * {per_block} + program_slot" if axis == 0 and per_block > 1 else block)


@lowering(OpKind.NUM_PROGRAMS)
def num_programs(em, op, layout):
    em.define_scalar(op.result, f"static_cast<int>(gridDim.{'xyz'[op.attrs['axis']]})")


@lowering(OpKind.LAUNCHED_PROGRAMS)
def launched_programs(em, op, layout):
    """The programs actually launched along an axis (the row loop's step), not the user's grid."""
    axis, per_block = op.attrs["axis"], em.analysis.programs_per_block
    blocks = f"static_cast<int>(gridDim.{'xyz'[axis]})"
    em.define_scalar(op.result, f"{blocks} * {per_block}" if axis == 0 and per_block > 1 else blocks)


@lowering(OpKind.ROW_COUNT)
def row_count(em, op, layout):
    """The user's grid along axis 0, a parameter after the kernel's own (analysis/row_loop.py)."""
    name = em.name_of(op.result, "n_rows")
    em.bind(op.result, Read(scalar=name, ctype="int"), None)
    em.row_count_param = name


@lowering(OpKind.ARANGE)
def arange(em, op, layout):
    start = op.attrs["start"]
    coord = em.coord_expr(layout, 0)
    em.define_block(op.result, layout, lambda r: f"{start} + {coord}" if start else coord)


@lowering(OpKind.SPLAT)
def splat(em, op, layout):
    # Every register holds the scalar: no array, reads use the scalar directly.
    src = em.scalar(op.operands[0])
    em.bind(op.result, Read(scalar=src, ctype=cspell.ctype(op.result.dtype)), layout)


@lowering(OpKind.BROADCAST)
def broadcast(em, op, layout):
    src_v = op.operands[0]
    dims = [d for d, (a, b) in enumerate(zip(src_v.shape, op.result.shape)) if a != b]
    src_layout = layout.zero_dims(dims, src_v.shape)
    src = em.operand(src_v, src_layout)
    _bind_remapped(em, op.result, layout, src, src_layout, broadcast_dims=dims)


def _bind_remapped(em, v, layout, src: Read, src_layout, same_rank_layout=None, broadcast_dims=()):
    """Bind `v` in `layout` as a register-permuted view of `src` (held in `src_layout` by the same threads).
    `same_rank_layout` is `layout` seen with src's rank, when the op changed the rank."""
    if src.array is None:
        em.bind(v, src, layout)
        return
    mapping = register_map(same_rank_layout or layout, src_layout, broadcast_dims)
    read = remapped(src, mapping) if mapping is not None else None
    if read is None:
        raise AssertionError(f"no register map from {src_layout.describe()} to {layout.describe()}")
    em.bind(v, read, layout)


def remapped(src: Read, mapping):
    """`src` read through a register map (target register -> source register), composed with its own map."""
    if src.regmap is not None:
        def through(x):
            out = 0
            for s, d in src.regmap:
                if x >> s & 1:
                    out |= 1 << d
            return out
        mapping = [through(m) for m in mapping]
    pairs = linear_register_map(mapping)
    if pairs is None:
        return None
    identity = all(s == d for s, d in pairs) and len(pairs) == len(mapping).bit_length() - 1
    return Read(array=src.array, regmap=None if identity else pairs, ctype=src.ctype)


@lowering(OpKind.EXPAND_DIMS)
def expand_dims(em, op, layout):
    src_v = op.operands[0]
    if not src_v.shape:
        em.bind(op.result, Read(scalar=em.scalar(src_v), ctype=cspell.ctype(src_v.dtype)), layout)
        return
    src_layout = layout.drop_dims([op.attrs["axis"]])
    src = em.operand(src_v, src_layout)
    _bind_remapped(em, op.result, layout, src, src_layout, src_layout)


@lowering(OpKind.PERMUTE)
def permute(em, op, layout):
    order = op.attrs["order"]
    inverse = [order.index(d) for d in range(len(order))]
    src_layout = layout.permute(inverse)
    src = em.operand(op.operands[0], src_layout)
    em.bind(op.result, src, layout)


@lowering(OpKind.RESHAPE)
def reshape(em, op, layout):
    src_v = op.operands[0]
    src_layout = layout.reshape(src_v.shape)
    src = em.operand(src_v, src_layout)
    em.bind(op.result, src, layout)


@lowering(OpKind.HINT)
def hint(em, op, layout):
    src_v = op.operands[0]
    if not src_v.shape:
        em.bind(op.result, Read(scalar=em.scalar(src_v), ctype=cspell.ctype(src_v.dtype)), None)
        return
    em.bind(op.result, em.operand(src_v, layout), layout)


def _map(em, op, layout, fn):
    """Define op's result from its operands read in `layout` (or as scalars)."""
    v = op.result
    if not v.shape:
        args = [em.scalar(o) for o in op.operands]
        em.define_scalar(v, fn(args))
        return
    reads = [em.operand(o, layout) for o in op.operands]
    if all(rd.array is None for rd in reads):
        # Every operand is the same in all registers: compute once, as a scalar.
        name = em.fresh(v.name or "u")
        ct = em.ctype(v)
        expr = fn([rd.at() for rd in reads])
        em.write(f"{ct} {name} = {expr};" if v.dtype.is_ptr() else em.macros.scalar_def(ct, name, expr))
        em.bind(v, Read(scalar=name, ctype=ct), layout)
        return
    em.define_block(v, layout, lambda r: fn([rd.at(r) for rd in reads]), equal_register_bits(em, v, layout))


def equal_register_bits(em, v, layout) -> int:
    """Register bits of `layout` along which `v` cannot change: each steps inside one aligned run of equal
    elements (axis-info constancy, as for a mask `cols < n` over a contiguous run when n is a multiple of the
    run) or does not move at all. A mask over 8 columns per thread is then one compare, not 8."""
    info = em.analysis.axis.info.get(v)
    if info is None or not v.shape:
        return 0
    mask = 0
    for i, basis in enumerate(layout.reg):
        moved = [d for d, step in enumerate(basis) if step]
        if not moved:
            mask |= 1 << i
        elif len(moved) == 1:
            d = moved[0]
            run = info.constancy[d] & -info.constancy[d]   # runs of c are also aligned runs of c's power-of-2 part
            if basis[d] < run:
                mask |= 1 << i
    return mask


def _wrap(expr):
    return f"({expr})" if cspell.needs_parens(expr) else expr


@lowering(OpKind.ELEMENTWISE)
def elementwise(em, op, layout):
    fn = op.attrs["fn"]
    if fn == "inline_asm":
        inline_asm.emit(em, op, layout)
        return
    if fn == "map":
        mapped = map_elementwise.device_function(em, op)
        if not any(op.result in user.operands for user in em.kernel.walk()):   # kept for its effects only
            map_elementwise.call_for_effects(em, op, layout, mapped)
            return
        _map(em, op, layout, lambda args: f"{mapped}({', '.join(args)})")
        return
    if fn.startswith("libdevice."):
        operand_dtypes = [v.dtype for v in op.operands]
        _map(em, op, layout, lambda args: libdevice_call(fn, operand_dtypes, [_wrap(a) for a in args]))
        return
    operand_dt = op.operands[1].dtype if fn == "select" else op.operands[0].dtype
    _map(em, op, layout, lambda args: cspell.elementwise_expr(
        fn, operand_dt, op.result.dtype, [_wrap(a) for a in args], op.attrs.get("propagate_nan", False)))


@lowering(OpKind.CAST)
def cast(em, op, layout):
    target = cspell.ctype(op.result.dtype)
    if op.result.dtype.is_ptr() or op.operands[0].dtype.is_ptr():
        # a pointer into read-only data is `const T*` (em.ctype): the cast keeps that, it cannot cast it away
        target = em.ctype(op.result) if op.result.dtype.is_ptr() else target
        _map(em, op, layout, lambda args: f"reinterpret_cast<{target}>({args[0]})")
        return
    if op.attrs.get("rounding") == "rtz":
        spelled = cspell.round_toward_zero(op.operands[0].dtype, op.result.dtype)
        _map(em, op, layout, lambda args: spelled.format(a=args[0]))
        return
    if op.result.dtype.is_fp8() or op.operands[0].dtype.is_fp8():
        spelled = cspell.fp8_conversion(op.operands[0].dtype, op.result.dtype)
        _map(em, op, layout, lambda args: spelled.format(a=args[0]))
        return
    _map(em, op, layout, lambda args: f"tp::cast<{target}>({args[0]})")


@lowering(OpKind.BITCAST)
def bitcast(em, op, layout):
    target = cspell.ctype(op.result.dtype)
    if op.result.dtype.is_ptr():
        target = em.ctype(op.result)          # `const T*` into read-only data, as in cast above
        _map(em, op, layout, lambda args: f"reinterpret_cast<{target}>({args[0]})")
        return
    _map(em, op, layout, lambda args: f"tp::bitcast<{target}>({args[0]})")


@lowering(OpKind.ADDPTR)
def addptr(em, op, layout):
    v, (base_v, offset_v) = op.result, op.operands
    if v.shape:
        base, offset = em.operand(base_v, layout), em.operand(offset_v, layout)
        if offset.array is None and offset.scalar == "0" and base.array is not None:
            em.bind(v, base, layout)      # `p + 0` is p (`PRED + 4 * box + 0`): no copy of the block
            return
        if _only_address_of_one_access(em, v) and (base.array is not None or offset.array is not None):
            # `tl.load(X + offs)`: the addresses are written into the access, `x + offs[r]`, not into an array
            em.bind(v, Read(expr=lambda r: f"{_wrap(base.at(r))} + {_wrap(offset.at(r))}", ctype=em.ctype(v)),
                    layout)
            return
    _map(em, op, layout, lambda args: f"{_wrap(args[0])} + {_wrap(args[1])}")


def _only_address_of_one_access(em, v) -> bool:
    """Whether flexible pointer block `v` is read only as the address of one load or store."""
    users = em.roles.users.get(v, [])
    return (v in em.layouts.flexible and len(users) == 1 and users[0].name in (OpKind.LOAD, OpKind.STORE)
            and users[0].operands[0] is v and v not in users[0].operands[1:])
