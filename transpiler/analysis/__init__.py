"""Analysis passes, one decision per file; `analyze` runs them in order and collects their decisions."""
from __future__ import annotations

from dataclasses import dataclass

from .axis_info import AxisInfoAnalysis
from .decisions import DecisionLog
from .layout_assignment import LayoutAssignment
from .vectorize import vectorize


@dataclass
class KernelAnalysis:
    axis: AxisInfoAnalysis
    layouts: LayoutAssignment
    vector_width: dict
    mask_uniform: dict
    decisions: DecisionLog


def analyze(kernel) -> KernelAnalysis:
    decisions = DecisionLog()
    axis = AxisInfoAnalysis(kernel)
    layouts = LayoutAssignment(kernel, axis, decisions)
    widths, uniform = vectorize(kernel, axis, layouts, decisions)
    return KernelAnalysis(axis, layouts, widths, uniform, decisions)
