"""The worker-side jobs: the border view's corner crop equals the full image's filtered corner
(against the float64 reference), and the strategies run agrees with the reference."""

from __future__ import annotations

import numpy as np
import pytest

from blurapp.core.borders import BORDER_MODES, Border
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.core.strategies import compared_names
from blurapp.ui.jobs import CORNERS, bordered_crop, corner_window, run_borders, run_strategies


def _noop(*_args: object) -> None:
    return None


@pytest.mark.parametrize("mode", [*BORDER_MODES, "constant=0.25"])
@pytest.mark.parametrize("corner", CORNERS)
@pytest.mark.parametrize(
    ("spec", "shape"),
    [
        ("box:5x3", (23, 17, 3)),
        ("matrix:4x2:1,2,3,4,5,6,7,8", (9, 11, 1)),  # even sizes: anchor off centre
        ("box:13x11", (5, 6, 2)),  # kernel larger than the image: reflections repeat
        ("identity", (1, 1, 1)),
    ],
)
def test_bordered_crop_matches_the_full_image(mode, corner, spec, shape) -> None:
    rng = np.random.default_rng(3)
    x = rng.random(shape)
    kernel, border = Kernel.parse(spec), Border.parse(mode)
    window = corner_window(shape, corner, 4)
    y0, x0, h, w = window
    full = correlate_float(x, kernel, border)[y0 : y0 + h, x0 : x0 + w]
    padded = bordered_crop(x, kernel, border, window)
    ar, ac = kernel.anchor
    # Any border for the padded array: the interior never reads past it.
    got = correlate_float(padded, kernel, Border.parse("wrap"))[ar : ar + h, ac : ac + w]
    np.testing.assert_allclose(got, full, rtol=0, atol=1e-12)


def test_corner_window_is_clipped_to_small_images() -> None:
    assert corner_window((10, 20), "bottom-right", 48) == (0, 0, 10, 20)
    assert corner_window((100, 200), "bottom-right", 48) == (52, 152, 48, 48)
    assert corner_window((100, 200), "top-right", 48) == (0, 152, 48, 48)


def test_run_borders_on_cpu_matches_reference() -> None:
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, size=(30, 25), dtype=np.uint8)  # grey, H×W
    kernel = Kernel.parse("gaussian:sigma=1.5")
    spec = FilterSpec.create(kernel, strategy="cpu")
    result = run_borders(image, spec, "bottom-left", 12, "mirror", _noop, _noop)
    assert [p.mode for p in result.panes] == list(BORDER_MODES)
    assert result.crop == (0, 18, 12, 12)
    by_mode = {p.mode: p for p in result.panes}
    assert by_mode["mirror"].max_diff == 0.0
    assert all(p.qimage.width() == 12 and p.qimage.height() == 12 for p in result.panes)
    x = image[:, :, None] / 255.0
    ref = {m: correlate_float(x, kernel, Border.parse(m))[18:30, 0:12, 0] for m in BORDER_MODES}
    for mode in BORDER_MODES:
        assert by_mode[mode].max_diff == pytest.approx(np.abs(ref[mode] - ref["mirror"]).max())


def test_run_strategies_cpu_only_reports_each_strategy() -> None:
    image = np.random.default_rng(1).random((9, 7, 3)).astype(np.float32)
    spec = FilterSpec.create("laplacian", "reflect", "cpu")
    seen: list[int] = []
    result = run_strategies(image, spec, _noop, lambda r: seen.append(len(r.runs)))
    assert [r.strategy for r in result.runs] == list(compared_names())
    assert seen == list(range(1, len(compared_names()) + 1))
    by_name = {r.strategy: r for r in result.runs}
    assert by_name["cpu"].why_not is None and by_name["cpu"].max_error == 0.0
    assert "rank" in (by_name["separable"].why_not or "")
