"""A kernel module as Triton compiles it, for GPU tests that compare against Triton on the same source."""
import pytest


def triton_twin_of(path):
    """The kernel module at `path` as Triton compiles it (`bench/twins.py`: the same source), or a skip when
    Triton, or torch with CUDA, is missing."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    from bench.twins import load
    return load(path, "triton")
