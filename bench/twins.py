"""Load one Triton-dialect kernel module twice: as written (our transpiler) and as Triton's.

The benchmark must time our kernel and Triton's from the same source text. The kernel modules
(`examples/*.py`, `bench/kernels.py`) are written for us: `import transpiler`, `import transpiler.language
as tl`, `@transpiler.transpile`, `transpiler.cdiv` in their host wrappers. For Triton's twin we execute the
same file again, under another module name, while `sys.modules["transpiler"]` is a stand-in whose
`transpile` is `triton.jit`, whose `language` is `triton.language` and whose `cdiv`/`next_power_of_2` (and
`heuristics`, `autotune`, `Config`, `reinterpret`) are Triton's. Each twin's functions then see their own `tl`
in their globals, which is where both compilers resolve names, and `inspect.getsource` (which both use) reads
the one real file. The swap lasts only while the twin's top level runs.
"""
from __future__ import annotations

import contextlib
import importlib.util
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
BENCH = ROOT / "bench"

# Kernel modules import `_harness` (examples/) as a top-level module when loaded from a path.
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))


@contextlib.contextmanager
def transpiler_means_triton():
    """While active, `import transpiler` and `import transpiler.language as tl` give Triton."""
    import triton
    import triton.language

    import _harness  # noqa: F401  (imported now so that it never binds the stand-in)

    stand_in = types.ModuleType("transpiler", "Triton standing in for the transpiler (bench/twins.py)")
    stand_in.transpile = stand_in.jit = triton.jit
    stand_in.language = triton.language
    stand_in.cdiv = triton.cdiv
    stand_in.next_power_of_2 = triton.next_power_of_2
    for name in ("heuristics", "autotune", "Config", "reinterpret", "constexpr_function"):   # host names kernels use
        setattr(stand_in, name, getattr(triton, name))
    import triton.language.extra
    import triton.language.extra.libdevice
    stand_ins = {"transpiler": stand_in, "transpiler.language": triton.language,
                 # `from transpiler.language.extra import libdevice`: Triton's, which its back end maps to CUDA's
                 "transpiler.language.extra": triton.language.extra,
                 "transpiler.language.extra.libdevice": triton.language.extra.libdevice}
    saved = {name: sys.modules.get(name) for name in stand_ins}
    sys.modules.update(stand_ins)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def load(path: Path | str, flavor: str) -> types.ModuleType:
    """Execute the kernel module at `path` as `flavor` ('ours' or 'triton') under a name of its own."""
    path = Path(path)
    name = f"_{flavor}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # Triton and inspect look a function's module up by name
    try:
        if flavor == "triton":
            with transpiler_means_triton():
                spec.loader.exec_module(module)
        elif flavor == "ours":
            spec.loader.exec_module(module)
        else:
            raise ValueError(f"flavor must be 'ours' or 'triton', not {flavor!r}")
    except BaseException:
        del sys.modules[name]
        raise
    return module


@dataclass
class Twins:
    """Both flavors of one kernel module; a flavor that failed to load is None with its error kept."""

    ours: types.ModuleType | None = None
    triton: types.ModuleType | None = None
    errors: dict[str, str] = field(default_factory=dict)


def load_twins(path: Path | str, flavors=("ours", "triton")) -> Twins:
    twins = Twins()
    for flavor in flavors:
        try:
            setattr(twins, flavor, load(path, flavor))
        except Exception as error:  # one flavor failing (say, our compiler missing a feature) keeps the other
            twins.errors[flavor] = f"{type(error).__name__}: {error}"
    return twins
