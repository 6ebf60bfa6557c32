"""A differential fuzzer: seeded random kernels, written as Triton users write them, checked three ways.

- `triton_types.py`: the fuzzer's own model of Triton 3.6's typing (promotion, weak literals, the result types of
  builtins), written from Triton's rules and independent of the compiler's and the interpreter's.
- `generator.py`: a seeded random DAG of block operations with, per value, its dtype, shape and what is known
  of it (a value range, whether it is computed without rounding), so only well-defined kernels are made: no
  signed overflow, no division by zero, no NaN, comparisons and float-to-int casts only of exact values. The
  DAG is written as the Python source of a `@jit` kernel (with helpers, loops and constexpr `if`s).
- `evaluate.py`: the same DAG evaluated with NumPy, program by program, from the DAG itself (never through
  the interpreter), with Triton's semantics (C integer division, wrap-around of unsigned values, rounding to
  the node's dtype after each operation).
- `runner.py`: loads a case's source as a module (ours, or Triton's through bench/twins.py), runs it, and
  compares outputs: exactly where the DAG says a value is exact, within a dtype tolerance elsewhere.

tests/test_fuzz_cpu.py runs a few hundred kernels on the CPU (interpreter against NumPy, NVRTC on every kernel);
bench/fuzz.py runs thousands on a GPU against Triton and the interpreter.
"""
