"""A kernel named on the command line: its file loaded, the kernel found by name, and the stand-in arguments of a
Triton AOT signature and `-D` constexprs bound to its parameters, ready for `cuda_source`, `explain`, `compile`.
"""
from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from .signature import SignatureError, parse_definitions, parse_signature


@dataclass
class KernelLaunchSpec:
    """What a command compiles: the kernel, its stand-in arguments in order and the constexprs by name."""

    kernel: object
    args: tuple
    constexprs: dict
    num_warps: int
    num_stages: int

    def compiled_variant(self):
        return self.kernel.compiled_variant(*self.args, num_warps=self.num_warps, num_stages=self.num_stages,
                                            **self.constexprs)

    def nvcc_source(self, arch=None):
        """The `.cu` #including our device headers (for nvcc -I<include dir>), for a device of `arch`."""
        return self.kernel.cuda_source(*self.args, num_warps=self.num_warps, num_stages=self.num_stages, arch=arch,
                                       include_headers=True, **self.constexprs)

    def explain(self, arch=None):
        return self.kernel.explain(*self.args, num_warps=self.num_warps, num_stages=self.num_stages, arch=arch,
                                   **self.constexprs)


def load_module(path: str):
    """Import a Python file as a module (its folder on sys.path, for its own imports)."""
    file = Path(path)
    if not file.is_file():
        raise SignatureError(f"{path}: no such file")
    sys.path.insert(0, str(file.resolve().parent))
    spec = importlib.util.spec_from_file_location(f"transpiler_cli_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_of(module) -> dict:
    return {name: v for name, v in vars(module).items() if getattr(v, "__transpiler_kernel__", False)}


def find_kernel(module, path: str, name: str | None):
    """The `Kernel` named `name` in the module (the one kernel when there is one and no name is given); an
    `@autotune` or `@heuristics` wrapper gives the kernel it wraps, its constexprs then come from `-D`."""
    from ..runtime.kernel import Kernel
    found = kernels_of(module)
    if name is None:
        if len(found) != 1:
            listing = ", ".join(found) or "none"
            raise SignatureError(f"{path}: say which kernel with --kernel NAME (kernels in the file: {listing})")
        name = next(iter(found))
    if name not in found:
        listing = ", ".join(found) or "none"
        raise SignatureError(f"{path}: no kernel named '{name}' (kernels in the file: {listing})")
    kernel = found[name]
    while not isinstance(kernel, Kernel):
        kernel = kernel.kernel
    return kernel


def bind_signature(kernel, signature: str, definitions) -> tuple:
    """(positional stand-ins, constexprs by name). The signature lists either every parameter (constexprs as
    values) or only the runtime ones (constexprs then all from -D); -D also overrides a constexpr's default."""
    entries = parse_signature(signature)
    constexprs = parse_definitions(definitions)
    runtime_params = [n for n in kernel.arg_names if n not in kernel.constexpr_names]
    if len(entries) == len(kernel.arg_names):
        names = kernel.arg_names
    elif len(entries) == len(runtime_params):
        names = runtime_params
    else:
        raise SignatureError(
            f"the signature has {len(entries)} entries; kernel '{kernel.__name__}' has {len(kernel.arg_names)} "
            f"parameters ({', '.join(kernel.arg_names)}), {len(runtime_params)} of them not constexpr: list all of "
            "them, or only the runtime ones and give the constexprs with -D NAME=VALUE")
    bound = {}
    for name, entry in zip(names, entries):
        if name in kernel.constexpr_names:
            if entry.kind != "constexpr":
                raise SignatureError(f"'{entry.text}' for '{name}': it is a tl.constexpr, give its value (e.g. 1024)")
            bound[name] = entry.value
        else:
            if entry.kind == "constexpr":
                raise SignatureError(f"'{entry.text}' for '{name}': a runtime parameter takes a type such as "
                                     "*fp16:16, i32 or fp32")
            bound[name] = entry.stand_in()
    unknown = [n for n in constexprs if n not in kernel.constexpr_names]
    if unknown:
        raise SignatureError(f"-D {unknown[0]}: kernel '{kernel.__name__}' has no constexpr parameter of that "
                             f"name (its constexprs: {', '.join(sorted(kernel.constexpr_names)) or 'none'})")
    constexpr_values = {n: v for n, v in bound.items() if n in kernel.constexpr_names}
    constexpr_values.update(constexprs)
    missing = [n for n in kernel.arg_names
               if n in kernel.constexpr_names and n not in constexpr_values and n not in kernel.defaults]
    if missing:
        raise SignatureError(f"kernel '{kernel.__name__}' needs a value for its constexpr "
                             f"{', '.join(missing)}: give it with " + " ".join(f"-D {n}=VALUE" for n in missing))
    # Runtime parameters go by position; a runtime parameter after a constexpr one goes by name instead.
    first_constexpr = next((i for i, n in enumerate(kernel.arg_names) if n in kernel.constexpr_names),
                           len(kernel.arg_names))
    positional = tuple(bound[n] for n in kernel.arg_names[:first_constexpr])
    by_name = {n: bound[n] for n in runtime_params[len(positional):]}
    return positional, {**by_name, **constexpr_values}


def launch_spec(path: str, kernel_name, signature: str, definitions, num_warps: int, num_stages: int):
    kernel = find_kernel(load_module(path), path, kernel_name)
    args, kwargs = bind_signature(kernel, signature, definitions)
    return KernelLaunchSpec(kernel, args, kwargs, num_warps, num_stages)
