"""Sizes of the GPU tests' cases, smaller where a run asks for it: `TRANSPILER_TEST_SIZES=small`, which the
sanitizer sweep (bench/sanitize.py) sets for the test files it runs, so that each of its four tools finishes a
file within the sweep's one device call (compute-sanitizer slows every memory access and copy, and the row
tests' cases hold up to 20 M elements).

`rows(n)`: a case's row count, or under small sizes at most SMALL_ROWS + 15 rows with n's remainder mod 16
kept, so that every integer the launch key reads from it keeps its divisibility class (1, 2, 4, 8, 16 and "is 1"):
the same specializations, hence the same kernels, are built and checked, over fewer rows. A count up to
SMALL_ROWS is kept as it is (one row, fewer rows than programs)."""
import os

SMALL_ROWS = 1024


def small() -> bool:
    return os.environ.get("TRANSPILER_TEST_SIZES", "") == "small"


def rows(n: int) -> int:
    if not small() or n <= SMALL_ROWS + 15:
        return n
    return SMALL_ROWS + n % 16
