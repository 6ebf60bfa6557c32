"""Flash-attention forward: softmax(Q K^T * sm_scale) V without ever holding the S x S score matrix.

One program per BLOCK_M query rows of one (batch, head). It walks the keys in BLOCK_N steps and keeps, per
query row, the running maximum m_i and the running sum l_i of the exponentials, rescaling the output
accumulator whenever the maximum grows (the online softmax of FlashAttention; exp2 with log2(e) folded into
the scale, as Triton's fused-attention tutorial writes it). Key blocks entirely inside the visible range run
without masks; the block on the causal diagonal and the ragged last block are masked (a second copy of the
inner loop, `MASKED`). Q, K, V and Out are [batch, heads, seq, head_dim] with any strides.

On sm_90a both products run on warpgroup MMA: `q @ k` with both operands in shared memory, `p @ v` with P
(the softmax weights) straight from the registers that hold the first product's accumulator.

Run: `python examples/attention.py` (GPU: checked and timed; no GPU: the CPU interpreter on small shapes).
"""
import math
import sys

import numpy as np

import transpiler
import transpiler.language as tl

try:
    from . import _harness as H
except ImportError:  # run as a script, or loaded by bench/twins.py: the examples folder is on sys.path
    import _harness as H


@transpiler.jit
def attention_inner(acc, l_i, m_i, q, K_block, V_block, stride_kn, stride_kd, stride_vn, stride_vd, offs_m, lo, hi,
                    seq_len, qk_scale, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASKED: tl.constexpr,
                    CAUSAL: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k_ptrs = K_block + offs_d[:, None] * stride_kd + (lo + offs_n)[None, :] * stride_kn   # K^T: [HEAD_DIM, BLOCK_N]
    v_ptrs = V_block + (lo + offs_n)[:, None] * stride_vn + offs_d[None, :] * stride_vd   # V: [BLOCK_N, HEAD_DIM]
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        if MASKED:
            k = tl.load(k_ptrs, mask=cols[None, :] < seq_len, other=0.0)
        else:
            k = tl.load(k_ptrs)
        qk = tl.dot(q, k)
        if MASKED:
            visible = cols[None, :] < seq_len
            if CAUSAL:
                visible = visible & (offs_m[:, None] >= cols[None, :])
            qk = tl.where(visible, qk * qk_scale, -float("inf"))
        else:
            qk = qk * qk_scale
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        if MASKED:
            v = tl.load(v_ptrs, mask=cols[:, None] < seq_len, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
        k_ptrs += BLOCK_N * stride_kn
        v_ptrs += BLOCK_N * stride_vn
    return acc, l_i, m_i


@transpiler.jit
def attention_kernel(Q, K, V, Out, sm_scale, heads, seq_len,
                     stride_qz, stride_qh, stride_qm, stride_qd, stride_kz, stride_kh, stride_kn, stride_kd,
                     stride_vz, stride_vh, stride_vn, stride_vd, stride_oz, stride_oh, stride_om, stride_od,
                     HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    tl.static_assert(BLOCK_M % BLOCK_N == 0, "the causal diagonal must start on a key block")
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // heads
    off_h = off_hz % heads
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    rows_in = offs_m[:, None] < seq_len
    q_ptrs = Q + off_z * stride_qz + off_h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd
    q = tl.load(q_ptrs, mask=rows_in, other=0.0)
    K_block = K + off_z * stride_kz + off_h * stride_kh
    V_block = V + off_z * stride_vz + off_h * stride_vh

    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504089  # log2(e): exp(x) = exp2(x * log2(e))
    if CAUSAL:
        # keys below the block's first row are visible to all its rows; the diagonal block is masked
        full_end = start_m * BLOCK_M
        masked_end = tl.minimum(full_end + BLOCK_M, seq_len)
    else:
        full_end = (seq_len // BLOCK_N) * BLOCK_N
        masked_end = seq_len
    acc, l_i, m_i = attention_inner(acc, l_i, m_i, q, K_block, V_block, stride_kn, stride_kd, stride_vn, stride_vd,
                                    offs_m, 0, full_end, seq_len, qk_scale, BLOCK_N, HEAD_DIM, False, CAUSAL)
    acc, l_i, m_i = attention_inner(acc, l_i, m_i, q, K_block, V_block, stride_kn, stride_kd, stride_vn, stride_vd,
                                    offs_m, full_end, masked_end, seq_len, qk_scale, BLOCK_N, HEAD_DIM, True, CAUSAL)
    acc = acc / l_i[:, None]
    o_ptrs = Out + off_z * stride_oz + off_h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od
    tl.store(o_ptrs, acc.to(Out.dtype.element_ty), mask=rows_in)


def config_for(head_dim):
    """Blocks and warps: two warpgroups of 64 query rows each (on sm_90a every warpgroup issues m64 wgmmas),
    64 keys per step, 4 stages of K and V in shared memory (measured on the H200 at B4 H32 S4096 D128: 4
    stages ran 5% faster than 3 for this compiler, as fast for Triton)."""
    return dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=4)


def attention(q, k, v, out=None, causal=False, sm_scale=None, config=None):
    """softmax(q k^T * sm_scale) v over [batch, heads, seq, head_dim] arrays (the result in q's dtype)."""
    z, h, n, d = q.shape
    assert k.shape == v.shape == q.shape, "q, k and v must have one shape [batch, heads, seq, head_dim]"
    assert d in (16, 32, 64, 128, 256), f"head_dim {d} must be a power of two from 16 to 256"
    out = H.empty(q, q.shape) if out is None else out
    config = dict(config or config_for(d))
    sm_scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    grid = lambda meta: (transpiler.cdiv(n, meta["BLOCK_M"]), z * h)  # noqa: E731
    H.launcher(attention_kernel, q)[grid](q, k, v, out, sm_scale, h, n, *H.strides(q), *H.strides(k),
                                          *H.strides(v), *H.strides(out), HEAD_DIM=d, CAUSAL=causal, **config)
    return out


def reference(q, k, v, causal=False, sm_scale=None) -> np.ndarray:
    q, k, v = (H.to_float64(t) for t in (q, k, v))
    n, d = q.shape[2], q.shape[3]
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    s = np.einsum("zhmd,zhnd->zhmn", q, k) * scale
    if causal:
        s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("zhmn,zhnd->zhmd", e / e.sum(axis=-1, keepdims=True), v)


# Relative Frobenius error allowed: P is rounded to the input dtype before P @ V (fp16: 2^-11, bf16: 2^-8
# relative per weight) and the output once more; fp32 accumulation elsewhere.
REL_ERROR = {"float16": 3e-3, "bfloat16": 2e-2, "float32": 1e-3}


def check_attention(what, got, expected, dtype):
    got = H.to_float64(got)
    if np.isnan(got).any():
        raise H.Mismatch(f"{what}: {int(np.isnan(got).sum())} elements never written or NaN")
    rel = float(np.linalg.norm(got - expected) / np.linalg.norm(expected))
    worst = float(np.abs(got - expected).max())
    if rel > REL_ERROR[dtype] or worst > 20 * REL_ERROR[dtype]:
        at = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape)
        raise H.Mismatch(f"{what}: relative error {rel:.2e} (limit {REL_ERROR[dtype]:.0e}), largest {worst:.2e} at "
                         f"{tuple(int(i) for i in at)}: got {got[at]:.5g}, expected {expected[at]:.5g}")
    return rel


def flops(shape, causal):
    z, h, n, d = shape
    return 4 * z * h * n * n * d // (2 if causal else 1)


def run_case(lib, dtype="float16", shape=(2, 3, 200, 64), causal=False, timed=False, config=None) -> str:
    rng = np.random.default_rng(sum(shape) * 3 + causal)
    q, k, v = (H.to_library(rng.standard_normal(shape), lib, dtype) for _ in range(3))
    out = H.poison(H.empty(q, shape))
    attention(q, k, v, out=out, causal=causal, config=config)
    rel = check_attention("attention", out, reference(q, k, v, causal), dtype)
    z, h, n, d = shape
    line = (f"attention {dtype:8} {'causal' if causal else 'full':6} batch {z} heads {h} seq {n:<6} head_dim {d:<4}"
            f" relative error {rel:.1e}")
    if timed:
        ms = H.gpu_time_ms(lambda: attention(q, k, v, out=out, causal=causal, config=config))
        line += f" {ms * 1e3:9.1f} us {flops(shape, causal) / (ms * 1e-3) / 1e12:7.1f} TFLOP/s"
    return line


SMALL = dict(BLOCK_M=32, BLOCK_N=16, num_warps=4, num_stages=2)
GPU_CASES = [
    dict(dtype=dtype, shape=(2, 3, 1000, d), causal=causal)
    for dtype in ("float16", "bfloat16") for d in (64, 128) for causal in (False, True)
] + [
    dict(dtype="float16", shape=(4, 32, 4096, 128), causal=False),
    dict(dtype="float16", shape=(4, 32, 4096, 128), causal=True),
]
CPU_CASES = [
    dict(dtype="float16", shape=(1, 2, 45, 16), causal=False, config=SMALL),
    dict(dtype="float16", shape=(1, 2, 45, 16), causal=True, config=SMALL),
]


def demo_cases():
    return [(f"attention {c['dtype']} {c['shape']} {'causal' if c['causal'] else 'full'}", H.demo(run_case, c))
            for c in CPU_CASES]


def main() -> int:
    return H.run_main("attention", run_case, GPU_CASES, CPU_CASES)


if __name__ == "__main__":
    sys.exit(main())
