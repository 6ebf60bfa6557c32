"""torch custom ops on the CPU (`runtime/torch_ops.py`): registration in one call, the fake (meta) run that
elides launches, torch.compile(fullgraph=True) tracing with 0 graph breaks (backend aot_eager: Dynamo, fake
tensors and AOT autograd's functionalization as in a GPU compile; the kernels run on the CPU interpreter,
TRANSPILER_INTERPRET=1) and torch's own `opcheck`. The GPU side (inductor, CUDA graphs) is test_gpu_torch.py.
Skipped where torch is not importable (the CPU torch: PYTHONPATH=/work/triton_tests/site)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

import transpiler  # noqa: E402
import torch_op_kernels as kernels  # noqa: E402
from torch_op_wrappers import register  # noqa: E402
from transpiler.errors import LaunchError  # noqa: E402
from transpiler.runtime.torch_ops import launches_elided  # noqa: E402

OPS = register("transpiler_cpu_test", kernels)
FakeTensorMode = pytest.importorskip("torch._subclasses.fake_tensor").FakeTensorMode


@pytest.fixture(autouse=True)
def interpreted(monkeypatch):
    monkeypatch.setenv("TRANSPILER_INTERPRET", "1")
    torch._dynamo.reset()


def _rand(*shape, seed, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * 3).to(dtype)


def _softmax64(x):
    x = x.double().numpy()
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_one_call_registers_the_op_under_its_name_with_the_wrappers_schema():
    assert torch.ops.transpiler_cpu_test.affine.default is not None
    schema = str(torch.ops.transpiler_cpu_test.affine.default._schema)
    assert "Tensor x" in schema and "float alpha" in schema and "-> Tensor" in schema, schema
    mutating = str(torch.ops.transpiler_cpu_test.add_into.default._schema)
    assert "Tensor(a" in mutating and "!)" in mutating, mutating      # `acc` is declared written in place


def test_the_op_runs_the_kernel_on_real_tensors():
    x = _rand(1000, seed=1)
    np.testing.assert_allclose(OPS["affine"](x, 1.5, -0.25).numpy(), x.double().numpy() * 1.5 - 0.25, rtol=1e-6,
                               atol=1e-6)


def test_the_fake_run_makes_outputs_of_the_right_shape_without_compiling_or_launching(monkeypatch):
    kernel = transpiler.jit(kernels.row_softmax_kernel.fn)
    monkeypatch.setattr(kernels, "row_softmax_kernel", kernel)     # a fresh kernel object: no variant yet
    with FakeTensorMode():
        x = torch.empty(37, 300, dtype=torch.float16)
        y = torch.ops.transpiler_cpu_test.row_softmax(x)
        assert not launches_elided()                                 # only inside the fake run
    assert type(y).__name__ == "FakeTensor"
    assert y.shape == (37, 300) and y.dtype == torch.float16
    assert kernel.variants == {} and kernel._launchers == {}


def test_a_fake_tensor_outside_a_fake_run_is_refused_by_name_never_launched():
    with FakeTensorMode():
        x, y = torch.empty(64), torch.empty(64)
        with pytest.raises(LaunchError, match=r"argument 'X' is a FakeTensor.*no kernel can run on it") as info:
            kernels.affine_kernel[(1,)](x, y, 64, 1.0, 0.0, BLOCK=128)
    assert "transpiler.custom_op" in str(info.value)


def test_torch_compile_fullgraph_has_no_graph_break_and_matches_float64():
    def f(x):
        return torch.ops.transpiler_cpu_test.row_softmax(OPS["affine"](x, 0.5, 1.0) * 2).sum(dim=1)

    x = _rand(19, 77, seed=2)
    explanation = torch._dynamo.explain(f)(x)
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x)
    want = _softmax64((x.double() * 0.5 + 1.0) * 2).sum(axis=1)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5)


def test_dynamic_shapes_trace_with_symbolic_sizes_and_run_every_size():
    compiled = torch.compile(lambda x: OPS["affine"](x, -2.0, 3.0) + 1, fullgraph=True, dynamic=True,
                             backend="aot_eager")
    for n, seed in ((300, 3), (1031, 4), (77, 5)):
        x = _rand(n, seed=seed)
        np.testing.assert_allclose(compiled(x).numpy(), x.double().numpy() * -2.0 + 4.0, rtol=1e-6, atol=1e-5)


def test_an_op_that_writes_its_argument_in_place_is_functionalized_under_compile():
    def f(acc, x):
        acc = acc * 1.0                      # a fresh tensor: the op writes it in place
        torch.ops.transpiler_cpu_test.add_into(acc, x)
        return acc + 1

    acc, x = _rand(500, seed=6), _rand(500, seed=7)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(acc, x)
    np.testing.assert_allclose(got.numpy(), acc.double().numpy() + x.double().numpy() + 1, rtol=1e-6,
                               atol=1e-6)


@pytest.mark.parametrize("op, args", [("affine", lambda: (_rand(257, seed=8), 2.0, 0.5)),
                                      ("row_softmax", lambda: (_rand(5, 33, seed=9),)),
                                      ("add_into", lambda: (_rand(130, seed=10), _rand(130, seed=11)))])
def test_torchs_opcheck_accepts_the_ops(op, args):
    torch.library.opcheck(OPS[op], args())


def test_an_explicit_fake_replaces_the_wrapper_run():
    calls = []

    def fake(x: torch.Tensor) -> torch.Tensor:
        calls.append(x.shape)
        return x.new_empty(x.shape[0] // 2)

    def halve(x: torch.Tensor) -> torch.Tensor:          # data-dependent host code would break a fake run
        y = torch.full((x.shape[0] // 2,), float("nan"))
        kernels.affine_kernel[(transpiler.cdiv(y.numel(), 128),)](x, y, y.numel(), 1.0, 0.0, BLOCK=128)
        return y

    op = transpiler.custom_op("transpiler_cpu_test::halve", halve, mutates_args=(), fake=fake)
    with FakeTensorMode():
        out = op(torch.empty(10))
    assert calls == [torch.Size([10])] and out.shape == (5,)
    x = _rand(10, seed=12)
    np.testing.assert_allclose(op(x).numpy(), x[:5].numpy())


def test_an_autotuned_kernel_is_neither_tuned_nor_launched_in_a_fake_run():
    tuned = transpiler.autotune([transpiler.Config({"BLOCK": 64}), transpiler.Config({"BLOCK": 128})],
                                key=["n"])(transpiler.jit(kernels.add_into_kernel.fn))

    def bump(acc: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        out = acc.clone()
        tuned[lambda meta: (transpiler.cdiv(meta["n"], meta["BLOCK"]),)](out, x, out.numel())
        return out

    op = transpiler.custom_op("transpiler_cpu_test::bump", bump, mutates_args=())
    with FakeTensorMode():
        out = op(torch.empty(99), torch.empty(99))
    assert out.shape == (99,) and tuned.cache == {}
    acc, x = _rand(99, seed=13), _rand(99, seed=14)
    np.testing.assert_allclose(op(acc, x).numpy(), (acc + x).numpy(), rtol=1e-6, atol=1e-6)
