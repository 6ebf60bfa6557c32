"""`python -m transpiler` (also the `transpiler` script): the command line.

    demo                                  transpile, run or compile and check the shipped examples
    dump FILE --signature SIG [-D N=V]    the .cu of one kernel for a Triton AOT signature
    explain FILE --signature SIG ...      the decisions made for that specialization, per Python line
    explain EXAMPLE.py                    the same for every specialization an example's cases launch
    compile FILE --signature SIG --out DIR
                                          ahead of time: the .cu, the cubin and a typed C++ launcher
    cache info | cache clear              what the disk cache holds; empty it
    --version

A mistake (in the kernel, the signature or the options) is one located message on stderr and exit status 1,
never a traceback of ours; TRANSPILER_DEBUG=1 shows the full traceback.
"""
from __future__ import annotations

import argparse
import sys
import traceback

from .signature import SignatureError


def _add_specialization_options(p, arch_help):
    p.add_argument("file", help="a Python file defining the kernel")
    p.add_argument("--kernel", help="the kernel's name (needed when the file defines several)")
    p.add_argument("--signature", help='Triton AOT signature, e.g. "*fp16:16,*fp16:16,i32" (a pointer 16-byte '
                                       'aligned, i32:16 divisible by 16, i32:1 equal to 1, fp32, or a constexpr '
                                       "value)")
    p.add_argument("-D", dest="define", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr value, e.g. -D BLOCK=1024 (repeatable)")
    p.add_argument("--num-warps", type=int, default=4)
    p.add_argument("--num-stages", type=int, default=3)
    p.add_argument("--arch", default=None, help=arch_help)


def _parser():
    from .. import __version__
    parser = argparse.ArgumentParser(prog="python -m transpiler", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"transpiler {__version__}")
    sub = parser.add_subparsers(dest="command")
    d = sub.add_parser("demo", help="transpile, run or compile, and check the examples")
    d.add_argument("--out", default="demo_out", help="folder for the generated .cu files")
    p = sub.add_parser("dump", help="print the .cu of a kernel for a signature")
    _add_specialization_options(p, "with it, also compile the .cu with NVRTC for this architecture (e.g. "
                                   "sm_90a) and report registers and spills on stderr")
    p.add_argument("-o", "--output", help="write the .cu here instead of printing it")
    e = sub.add_parser("explain", help="print the decisions made for a kernel's specialization")
    _add_specialization_options(e, "also report registers and programs per SM for this architecture")
    e.add_argument("--cpu-cases", action="store_true",
                   help="without --signature: the example's small CPU cases instead of its GPU ones")
    a = sub.add_parser("compile", help="ahead of time: the .cu, its cubin and a C++ launcher on the driver API")
    _add_specialization_options(a, "the architecture to compile for (default sm_90a)")
    a.add_argument("--out", required=True, help="folder for the generated files")
    c = sub.add_parser("cache", help="the disk cache of generated CUDA and cubins")
    c.add_argument("action", choices=["info", "clear"])
    p.add_argument("--include-headers", action="store_true",
                   help="#include our device headers instead of inlining them (nvcc -I\"$(python -m transpiler "
                        "include-dir)\")")
    sub.add_parser("include-dir", help="print the folder of the device headers, for nvcc -I")
    return parser


def _spec(args):
    from .kernel_file import launch_spec
    if not args.signature:
        raise SignatureError("--signature is needed, e.g. --signature \"*fp32:16,*fp32:16,i32\"")
    return launch_spec(args.file, args.kernel, args.signature, args.define, args.num_warps, args.num_stages)


def _dump(args) -> int:
    if args.include_headers:
        source = _spec(args).nvcc_source(args.arch)
        if args.output:
            with open(args.output, "w") as f:
                f.write(source)
        else:
            sys.stdout.write(source)
        return 0
    variant = _spec(args).compiled_variant()
    if args.arch:
        from ..runtime.compiler import compile_offline
        variant.check_arch(args.arch)
        result = compile_offline(variant.source, args.arch, name=f"{variant.name}.cu")
        print(f"// {args.arch}: {result.registers} registers, {result.spill_bytes} bytes spilled", file=sys.stderr)
    if args.output:
        with open(args.output, "w") as f:
            f.write(variant.source)
    else:
        sys.stdout.write(variant.source)
    return 0


def _explain(args) -> int:
    if args.signature is None:
        from .demo import explain_example
        return explain_example(args.file, args.cpu_cases)
    spec = _spec(args)
    if args.arch:
        spec.compiled_variant().check_arch(args.arch)
    sys.stdout.write(spec.explain(args.arch))
    return 0


def _cache(args) -> int:
    from ..runtime.cache import cache_dir
    from .cache_command import cache_clear, cache_info
    sys.stdout.write((cache_info if args.action == "info" else cache_clear)(cache_dir()))
    return 0


def _compile(args) -> int:
    from .aot import compile_ahead_of_time
    for path in compile_ahead_of_time(_spec(args), args.arch or "sm_90a", args.out):
        print(path)
    return 0


def _include_dir(args) -> int:
    from ..emit_cuda import include_dir
    print(include_dir())
    return 0


COMMANDS = {"dump": _dump, "explain": _explain, "compile": _compile, "cache": _cache, "include-dir": _include_dir}


def _report(exc: BaseException) -> None:
    """One message for a user's mistake; the user's own frames for an error raised by their file."""
    from ..errors import TranspilerError
    from ..tracebacks import debugging, is_internal, without_internal_frames
    innermost = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    ours = not isinstance(exc, (TranspilerError, SignatureError)) and any(is_internal(f.filename)
                                                                           for f in innermost)
    if debugging() or ours:
        traceback.print_exception(type(exc), exc, exc.__traceback__)
        if ours:
            print("error: this is a bug in transpiler, not in your kernel: please report it with the traceback above",
                  file=sys.stderr)
    elif isinstance(exc, (TranspilerError, SignatureError)):
        print(f"error: {exc}", file=sys.stderr)
    else:   # raised by the user's file itself (its imports, its module-level code)
        print("error: " + "".join(traceback.format_exception(type(exc), exc,
                                                             without_internal_frames(exc.__traceback__))),
              file=sys.stderr, end="")


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "demo":
        from .demo import demo
        return demo(args.out)
    command = COMMANDS.get(args.command)
    if command is None:
        _parser().print_help()
        return 2
    try:
        return command(args)
    except Exception as exc:  # every failure becomes one message (the full traceback under TRANSPILER_DEBUG=1)
        _report(exc)
        return 1
