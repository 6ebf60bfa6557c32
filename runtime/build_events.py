"""Build events: what tools (benchmarks, the replay recorder, the load test) learn about the runtime's build steps,
by subscribing here instead of replacing the runtime's methods.

Three events, each sent after its step, in the thread that ran it:
  "variant"    a kernel's variant was made for a specialization (an in-memory miss of `Kernel.variant`: from the
               disk cache or generated); fields kernel, key, opts, values;
  "generated"  parse -> analysis -> emission ran (`Kernel._generate`); fields kernel, key, opts, values, and
               source (the CUDA) or error (the exception it raised, which then propagates);
  "nvrtc"      NVRTC compiled a source (`compiler.compile_cubin`); fields name, source, arch, options.
An observer is a callable taking one `BuildEvent`; it must not raise (an exception from it propagates into the
build step that sent the event). With no observer a step pays one truth test of a list.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

KINDS = ("variant", "generated", "nvrtc")


@dataclass(frozen=True)
class BuildEvent:
    kind: str                 # one of KINDS
    kernel: object = None     # the Kernel ("variant", "generated")
    key: tuple = None         # its specialization key
    opts: object = None       # the frozen CompileOptions the variant is made under
    values: tuple = None      # the launch's argument values, in parameter order
    source: str = None        # "generated": the CUDA; "nvrtc": the source compiled
    error: BaseException = None   # "generated": what generation raised
    name: str = None          # "nvrtc": the kernel's name
    arch: str = None          # "nvrtc": the architecture
    options: tuple = None     # "nvrtc": the extra NVRTC options


_observers = []               # replaced whole on change: a build step iterates the list it read
_lock = threading.Lock()


def subscribe(observer):
    """Send every build event to `observer` from now on; returns the function that stops it."""
    global _observers
    with _lock:
        _observers = _observers + [observer]

    def unsubscribe():
        global _observers
        with _lock:
            _observers = [o for o in _observers if o is not observer]
    return unsubscribe


def observing() -> bool:
    return bool(_observers)


def send(kind: str, **fields):
    """Send a `kind` event with these fields to every observer (nothing is made when there is none)."""
    observers = _observers
    if observers:
        event = BuildEvent(kind, **fields)
        for observer in observers:
            observer(event)
