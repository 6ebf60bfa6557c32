"""The `triton` shim of tests/triton_compat (bench/triton_test_core.py runs Triton's language tests through it).

Each check runs in a subprocess: installing the shim puts a `triton` module into sys.modules, which must never
leak into this process (other tests compare against the real Triton where it is importable)."""
import os
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_with_shim(body: str) -> str:
    prelude = textwrap.dedent("""
        import sys
        sys.path[:0] = [%r, %r]
        from triton_compat import shim
        shim.install()
        import numpy as np
        import triton
        import triton.language as tl
    """ % (os.path.join(ROOT, "tests"), ROOT))
    script = prelude + textwrap.dedent(body)
    env = dict(os.environ, TRANSPILER_INTERPRET="1")
    with tempfile.TemporaryDirectory() as folder:     # a file, not `-c`: compiling reads the kernels' source
        path = os.path.join(folder, "with_shim.py")
        with open(path, "w") as f:
            f.write(script)
        done = subprocess.run([sys.executable, path], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_triton_names_resolve_to_transpiler_objects():
    out = run_with_shim("""
        import transpiler, transpiler.language as ours
        from triton.language.extra import libdevice
        assert tl.load is ours.load and tl.float16 is ours.float16 and tl.sum is ours.sum
        assert libdevice is ours.extra.libdevice
        assert triton.TritonError is transpiler.TranspilerError
        # what wrappers catch to drop a config is the shared-memory / register refusal, not every launch error
        from triton.runtime.errors import OutOfResources
        assert triton.OutOfResources is OutOfResources is transpiler.OutOfResources
        assert not issubclass(transpiler.LaunchError, triton.OutOfResources)
        assert triton.KernelInterface is transpiler.KernelInterface and triton.TensorWrapper is not None
        assert isinstance(triton.reinterpret(np.zeros(4, np.uint8), tl.float8e5), triton.TensorWrapper)
        assert isinstance(tl.int8, tl.dtype) and tl.dtype("fp16") is ours.float16
        assert tl.str_to_ty("*int32").element_ty is ours.int32
        print("ok")
    """)
    assert out.strip() == "ok"


def test_jit_kernel_with_triton_options_runs_on_interpreter():
    out = run_with_shim("""
        @triton.jit(noinline=True, do_not_specialize=["n"])
        def scale(X, Y, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 3, mask=offs < n)

        x = np.random.default_rng(5).standard_normal(45).astype(np.float32)
        y = np.full(45, np.nan, np.float32)
        handle = scale[(1,)](x, y, 45, BLOCK=64, num_ctas=1, launch_cooperative_grid=False)
        np.testing.assert_allclose(y, x * 3, rtol=1e-6)
        try:
            handle.asm["ptx"]
        except shim.TritonInternals as e:
            print("internals:", e)
    """)
    assert "internals: the launch's asm['ptx']" in out


def test_patched_source_kernel_compiles_to_cuda():
    # A kernel defined from text (as Triton's tests patch kernels) keeps its source for the compiler.
    out = run_with_shim("""
        source = "\\n".join(["@triton.jit",
                             "def neg(X, Y, BLOCK: tl.constexpr):",
                             "    offs = tl.arange(0, BLOCK)",
                             "    tl.store(Y + offs, -tl.load(X + offs))", ""])
        kernel = shim.function_from_source(source, {"triton": triton, "tl": tl}, "neg")
        x = np.arange(32, dtype=np.int16) - 7
        y = np.zeros(32, np.int16)
        kernel[(1,)](x, y, BLOCK=32)
        assert (y == -x).all()
        print("tl.store(Y + offs" in kernel.cuda_source(x, y, BLOCK=32))
    """)
    assert out.strip() == "True"


def test_missing_names_are_located_only_for_collection_placeholders():
    out = run_with_shim("""
        try:
            tl.no_such_builtin
        except AttributeError as e:
            print("missing:", e)
    """)
    assert "has no attribute 'no_such_builtin'" in out


def test_warmup_compiles_and_autotuned_kernels_run():
    # Our autotuner compiles its configs through the kernel's `warmup`; the shim's kernels once refused it
    # (reading Triton's compiled-kernel handle), so every autotuned kernel written for Triton failed there.
    out = run_with_shim("""
        @triton.jit
        def twice(X, Y, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 2, mask=offs < n)

        x = np.random.default_rng(3).standard_normal(100).astype(np.float32)
        y = np.full(100, np.nan, np.float32)
        handle = twice.warmup(x, y, 100, BLOCK=32, grid=(4,), num_warps=2, num_ctas=1)
        try:
            handle.asm["ptx"]
        except shim.TritonInternals as e:
            print("internals:", e)
        tuned = triton.autotune([triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 64})],
                                key=["n"])(twice)
        tuned[lambda meta: (triton.cdiv(100, meta["BLOCK"]),)](x, y, 100)
        np.testing.assert_array_equal(y, x * 2)
        print("ok")
    """)
    assert "internals: the launch's asm['ptx']" in out and out.strip().endswith("ok")


def test_install_replaces_a_triton_imported_before():
    # torch's CUDA start-up imports the real Triton (its sparse kernels); the shim installed after it must not
    # leave any of Triton's modules behind for a kernel file to pick up.
    script = textwrap.dedent("""
        import sys, types
        sys.path[:0] = [%r, %r]
        sys.modules["triton"] = types.ModuleType("triton")
        sys.modules["triton.compiler.compiler"] = types.ModuleType("triton.compiler.compiler")
        from triton_compat import shim
        shim.install()
        import triton
        assert triton.__transpiler_shim__ and "triton.compiler.compiler" not in sys.modules
        print("ok")
    """ % (os.path.join(ROOT, "tests"), ROOT))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_reinterpret_as_an_fp8_type_launches_through_our_own_wrapper():
    # torch has no dtype for some fp8 formats (and the shim's view needs one): Triton's tests pass
    # `triton.reinterpret(uint8 tensor, tl.float8e4nv)` to kernels that widen the codes; every e4m3 code but NaN
    # must arrive as its value (an independent decoding: sign, 4 exponent bits with bias 7, 3 mantissa bits).
    out = run_with_shim("""
        @triton.jit
        def widen(X, Y, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(Y + offs, tl.load(X + offs, mask=offs < n).to(tl.float32), mask=offs < n)

        codes = np.array([c for c in range(256) if c & 0x7F != 0x7F], np.uint8)
        y = np.full(codes.size, np.nan, np.float32)
        widen[(1,)](triton.reinterpret(codes, tl.float8e4nv), y, codes.size, BLOCK=256)
        sign = np.where(codes & 0x80, -1.0, 1.0)
        exp, man = (codes >> 3) & 0xF, (codes & 7).astype(np.float64)
        value = np.where(exp == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (exp.astype(np.float64) - 7))
        np.testing.assert_array_equal(y, (sign * value).astype(np.float32))
        print("ok", codes.size)
    """)
    assert out.strip() == "ok 254"


def test_a_launch_error_is_chained_as_tritons_and_is_an_interpreter_error_when_interpreted():
    out = run_with_shim("""
        import os
        import transpiler
        from triton.runtime.errors import InterpreterError

        @triton.jit
        def bad_axis(X, N: tl.constexpr):
            tl.expand_dims(tl.arange(0, N), 3)

        for interpret in ("1", "0"):
            os.environ["TRITON_INTERPRET"] = interpret
            try:
                bad_axis[(1,)](np.zeros(4, np.float32), 4) if interpret == "1" else \\
                    bad_axis.cuda_source(np.zeros(4, np.float32), N=4)
            except transpiler.ShapeError as e:
                err = e
            if interpret == "1":     # through the shim's launch: Triton's chaining
                assert isinstance(err, InterpreterError) and "invalid axis 3" in str(err.__cause__)
                assert err.error_message in str(err.__cause__) and "with_shim.py" not in str(err.__cause__)
            else:                    # transpiler itself chains nothing
                assert err.__cause__ is None and not isinstance(err, InterpreterError)
        print("ok")
    """)
    assert out.strip() == "ok"
