"""Stand-ins for the GPU in autotuning tests: a kernel that records its launches and a bench that returns the
time a table gives for the config just launched. Importable by test subprocesses (cross-process cache tests).
"""
import json
import sys
import time

import transpiler
from transpiler.errors import CompileTimeError, LaunchError


class FakeKernel:
    """Has what the autotuner uses of a kernel: `arg_names`, `run`, `warmup`, `source_hash`. Launches are
    recorded; `broken_compile` configs fail in `warmup` and `broken_launch` ones in `run` (by BLOCK value)."""

    def __init__(self, arg_names=("X", "Y", "N", "BLOCK"), source="fake-v1", broken_compile=(),
                 broken_launch=(), body=None):
        self.arg_names = list(arg_names)
        self.__name__ = "fake"
        self.source = source
        self.broken_compile = set(broken_compile)
        self.broken_launch = set(broken_launch)
        self.body = body
        self.launches = []
        self.compiled = []

    def source_hash(self):
        return self.source

    def warmup(self, *args, grid=None, **kwargs):
        if kwargs.get("BLOCK") in self.broken_compile:
            raise CompileTimeError(f"BLOCK={kwargs['BLOCK']} uses too much shared memory")
        self.compiled.append(dict(kwargs))

    def run(self, *args, grid, **kwargs):
        if kwargs.get("BLOCK") in self.broken_launch:
            raise LaunchError(f"too many resources requested for launch (BLOCK={kwargs['BLOCK']})")
        bound = dict(zip(self.arg_names, args), **kwargs)
        if callable(grid):
            grid = grid(bound)
        self.launches.append(dict(bound, grid=grid))
        if self.body is not None:
            self.body(bound)


class FakeBench:
    """`do_bench` replacement: runs the launch once and returns `times[BLOCK]` of the config it launched."""

    def __init__(self, kernel, times, delay=0.0):
        self.kernel = kernel
        self.times = times
        self.delay = delay
        self.calls = []

    def __call__(self, fn, quantiles=None):
        fn()
        block = self.kernel.launches[-1]["BLOCK"]
        self.calls.append(block)
        time.sleep(self.delay)
        t = self.times[block]
        return [t, t, t] if quantiles else t


CONFIGS = [transpiler.Config({"BLOCK": b}, num_warps=w) for b, w in ((32, 1), (64, 2), (128, 4))]


def tuned_fake(times, delay=0.0, source="fake-v1", **autotune_options):
    kernel = FakeKernel(source=source)
    bench = FakeBench(kernel, times, delay)
    tuned = transpiler.autotune(CONFIGS, key=["N"], do_bench=bench, **autotune_options)(kernel)
    return tuned, kernel, bench


def _main():
    """`python -m autotune_fakes TIMES_JSON DELAY N`: tune once, print the chosen BLOCK and the bench calls."""
    times = {int(k): v for k, v in json.loads(sys.argv[1]).items()}
    tuned, kernel, bench = tuned_fake(times, float(sys.argv[2]))
    tuned[(1,)](None, None, int(sys.argv[3]))
    print(json.dumps({"best": tuned.best_config.kwargs["BLOCK"], "benched": len(bench.calls)}))


if __name__ == "__main__":
    _main()
