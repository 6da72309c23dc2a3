"""Contiguous memory runs one conv window reads in NCHW and NHWC."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from blurapp.conv.layout import spec_window_runs, window_runs
from blurapp.conv.spec import ConvSpec


def count_runs(offsets: list[int]) -> int:
    """Runs of consecutive addresses in a sorted list of element offsets."""
    offsets = sorted(offsets)
    return 1 + sum(1 for a, b in itertools.pairwise(offsets) if b != a + 1)


def window_offsets(layout, c, h, w, k, dilation, groups, group=0):
    cg = c // groups
    x = np.arange(c * h * w).reshape(c, h, w) if layout == "nchw" else None
    offs = []
    for ch in range(group * cg, (group + 1) * cg):
        for ky in range(k):
            for kx in range(k):
                iy, ix = 1 + ky * dilation, 1 + kx * dilation
                if layout == "nchw":
                    offs.append(int(x[ch, iy, ix]))
                else:
                    offs.append((iy * w + ix) * c + ch)
    return offs


@pytest.mark.parametrize(
    ("c", "k", "dilation", "groups"),
    [(16, 3, 1, 1), (3, 5, 1, 1), (4, 3, 2, 1), (8, 3, 1, 8), (6, 3, 1, 2), (1, 3, 1, 1)],
)
def test_counts_match_the_actual_addresses(c, k, dilation, groups):
    runs = window_runs(c, k, dilation, groups)
    for layout in ("nchw", "nhwc"):
        offs = window_offsets(layout, c, 20, 20, k, dilation, groups)
        assert runs[layout].runs == count_runs(offs), layout
        assert runs[layout].values == len(offs)


def test_issue_formulas():
    r = window_runs(16, 3)
    assert (r["nchw"].runs, r["nchw"].run_length) == (16 * 3, 3)
    assert (r["nhwc"].runs, r["nhwc"].run_length) == (3, 3 * 16)


def test_from_a_spec():
    spec = ConvSpec(1, 8, 16, 16, 4, 3, 3, groups=2)
    assert spec_window_runs(spec)["nhwc"].describe() == "9 runs of 4 (36 values)"
