"""Count the contiguous memory runs one conv window reads in NCHW and in NHWC.

A k×k window over C channels reads C·k·k values. In NCHW a channel's row of the window is k
adjacent values, so the window is C·k runs of k; in NHWC a pixel's channels are adjacent and so
are the k pixels of a window row, so it is k runs of k·C. Dilation D > 1 breaks the runs along a
row (NCHW: C·k·k runs of 1; NHWC: k·k runs of C), and so do groups in NHWC (a window reads
only its group's channels of each pixel: k·k runs of C/groups). Stride does not change one
window. Windows that hang over the zero padding read fewer values; these counts are for an
interior window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from blurapp.conv.spec import ConvSpec

__all__ = ["WindowRuns", "spec_window_runs", "window_runs"]


@dataclass(frozen=True)
class WindowRuns:
    """Contiguous runs one interior window reads in one layout."""

    layout: str
    runs: int
    run_length: int
    values: int

    def describe(self) -> str:
        runs = "run" if self.runs == 1 else "runs"
        return f"{self.runs} {runs} of {self.run_length} ({self.values} values)"

    def to_dict(self) -> dict[str, Any]:
        return {
            "layout": self.layout,
            "runs": self.runs,
            "run_length": self.run_length,
            "values": self.values,
        }


def window_runs(
    channels: int, kernel: int | tuple[int, int], dilation: int = 1, groups: int = 1
) -> dict[str, WindowRuns]:
    """The runs of one window in each layout.

    Arguments:
        channels: the layer's input channels C.
        kernel: K or ``(kh, kw)``.
        dilation: the layer's dilation.
        groups: channel groups; a window reads only its group's C/groups channels.

    Returns:
        ``{"nchw": WindowRuns, "nhwc": WindowRuns}``.

    Example:
        >>> r = window_runs(16, 3)
        >>> r["nchw"].describe(), r["nhwc"].describe()
        ('48 runs of 3 (144 values)', '3 runs of 48 (144 values)')
    """
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    cg = channels // groups
    values = cg * kh * kw
    row_contiguous = dilation == 1 or kw == 1
    if row_contiguous:
        nchw = WindowRuns("nchw", cg * kh, kw, values)
    else:
        nchw = WindowRuns("nchw", cg * kh * kw, 1, values)
    if row_contiguous and groups == 1:
        # the k pixels of a window row are adjacent and each holds all C channels: one run
        nhwc = WindowRuns("nhwc", kh, kw * cg, values)
    else:
        # dilation leaves gaps between pixels; with groups the other groups' channels do
        nhwc = WindowRuns("nhwc", kh * kw, cg, values)
    return {"nchw": nchw, "nhwc": nhwc}


def spec_window_runs(spec: ConvSpec) -> dict[str, WindowRuns]:
    """:func:`window_runs` for a layer (its channels, kernel, dilation and groups)."""
    return window_runs(spec.cin, (spec.kh, spec.kw), spec.dilation, spec.groups)
