"""The live preview stays live (issue 13): viewport first, reduced previews said on screen,
superseded work stops within a tile, saves never write a stale result, the comparison views
cancel, first runs are marked, and the sigma and radius sliders follow the spec."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtWidgets import QGraphicsView, QPushButton, QSlider

import blurapp
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.core.timing import PassTiming, Timing
from blurapp.io import read_image
from blurapp.ui import jobs
from blurapp.ui.compare import STRATEGIES_TAB
from blurapp.ui.jobs import (
    LivePreview,
    LiveProgress,
    Viewport,
    downscale,
    reduced_kernel,
    run_live,
    run_strategies,
)
from blurapp.ui.timing_panel import COL
from blurapp.ui.worker import StaleJobError

WAIT_MS = 60000


def _noop(*_args: object) -> None:
    return None


def _texture(shape, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, size=shape, dtype=np.uint8)
    img[shape[0] // 4 : shape[0] // 2, shape[1] // 3 : shape[1] // 2] = 230
    return img


# ------------------------------------------------------------------------------ the jobs


def test_superseded_live_job_stops_within_one_tile(monkeypatch) -> None:
    image = _texture((96, 96, 3))
    spec = FilterSpec.create("box:3", "mirror", "cpu")
    monkeypatch.setattr(jobs.RATES, "tile_side", lambda shape, spec: 34)  # 32 outputs: 9 tiles
    tiles: list[LiveProgress] = []

    def report(partial: object) -> None:
        if isinstance(partial, LiveProgress):
            tiles.append(partial)

    def check() -> None:
        if len(tiles) >= 3:  # a newer request arrived after the third tile
            raise StaleJobError

    with pytest.raises(StaleJobError):
        run_live(image, spec, check, report, 1)
    assert tiles[0].total == 9
    assert len(tiles) == 3  # not one tile more once superseded


def test_tiled_live_result_is_the_untiled_one(monkeypatch) -> None:
    image = _texture((70, 90, 3))
    spec = FilterSpec.create("gaussian:sigma=1.5", "reflect", "cpu")
    monkeypatch.setattr(jobs.RATES, "tile_side", lambda shape, spec: 40)
    result = run_live(image, spec, _noop, _noop, 1)
    np.testing.assert_array_equal(result.image, blurapp.filter_image(image, spec).image)


def test_reduced_preview_comes_first_and_is_said(monkeypatch) -> None:
    image = _texture((64, 80, 3))
    spec = FilterSpec.create("gaussian:sigma=3", "clamp", "cpu")
    seen: list[object] = []
    result = run_live(image, spec, _noop, seen.append, 7, Viewport.whole(image.shape, 4))
    previews = [p for p in seen if isinstance(p, LivePreview)]
    assert len(previews) == 1 and seen[0] is previews[0]
    preview = previews[0]
    assert preview.factor == 4 and not preview.exact and preview.image_key == 7
    assert (preview.qimage.width(), preview.qimage.height()) == (20, 16)
    # The full result is exact, and its display copy is at the preview's scale.
    np.testing.assert_array_equal(result.image, blurapp.filter_image(image, spec).image)
    assert result.display_factor == 4 and result.display.width() == 20


def test_visible_region_at_full_resolution_is_exact() -> None:
    image = _texture((50, 60, 3))
    spec = FilterSpec.create("box:5x3", "wrap", "cpu")
    window = (10, 30, 25, 60)
    seen: list[object] = []
    result = run_live(image, spec, _noop, seen.append, 1, Viewport(window, 1))
    (preview,) = [p for p in seen if isinstance(p, LivePreview)]
    assert preview.exact and preview.window == window
    y0, y1, x0, x1 = window
    crop = np.ascontiguousarray(result.image[y0:y1, x0:x1])
    shown = preview.qimage
    assert (shown.width(), shown.height()) == (x1 - x0, y1 - y0)
    from blurapp.ui.convert import to_qimage

    assert shown == to_qimage(crop)


def test_reduced_kernel_keeps_the_sum_and_the_centre() -> None:
    for text in ("gaussian:sigma=5", "box:7x3", "sobel:x", "matrix:4x2:1,2,3,4,5,6,7,8"):
        kernel = Kernel.parse(text)
        small = reduced_kernel(kernel, 4)
        rows, cols = small.shape
        assert rows % 2 == 1 and cols % 2 == 1
        assert small.weights.sum() == pytest.approx(kernel.weights.sum(), abs=1e-12)
    assert reduced_kernel(Kernel.parse("gaussian:sigma=8"), 4).shape == (17, 17)  # radius 32
    assert reduced_kernel(Kernel.parse("identity"), 3).shape == (1, 1)


def test_downscale_averages_blocks_and_keeps_partial_ones() -> None:
    image = np.arange(5 * 7, dtype=np.uint8).reshape(5, 7)
    small = downscale(image, 2)
    assert small.shape == (3, 4) and small.dtype == np.uint8
    assert small[0, 0] == round(np.mean(image[:2, :2]))
    assert small[2, 3] == image[4, 6]  # a 1×1 partial block is itself


def test_strategies_compare_a_window_and_say_which_is_the_reference() -> None:
    image = _texture((40, 50, 3)).astype(np.float32) / 255
    spec = FilterSpec.create("gaussian:sigma=1", "mirror", "cpu")
    window = (5, 25, 10, 40)
    result = run_strategies(image, spec, _noop, _noop, None, window)
    assert result.window == window and not result.whole
    (cpu,) = [r for r in result.runs if r.strategy == "cpu"]
    assert cpu.reference and cpu.qimage.width() == 30 and cpu.qimage.height() == 20


# ------------------------------------------------------------------------------ the window


def show_image(qtbot, window, image: np.ndarray) -> None:
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.set_image(image)


def test_result_view_has_its_object_name(window) -> None:
    view = window.findChild(QGraphicsView, "resultView")
    assert view is window.compare.result_view


def test_large_image_at_fit_zoom_says_the_preview_is_reduced(qtbot, window) -> None:
    window.resize(900, 700)
    window.request_spec("box:3", "code")
    image = _texture((1500, 2000, 3))
    with qtbot.waitSignal(window.preview_ready, timeout=WAIT_MS):
        window.set_image(image)
    assert window.compare.result_view.display_factor() >= 2
    assert window.compare.result_view.note().startswith("preview at ")
    qtbot.waitSignal(window.result_ready, timeout=WAIT_MS).wait()
    assert window.compare.result_view.note() == ""
    assert window.compare.result_view.image_size() == (2000, 1500)
    # The view paints a display-resolution copy, not 3 megapixels.
    width, _height = window.compare.result_view.picture_size()
    assert width == -(-2000 // window.result.display_factor)


def test_save_during_filtering_writes_the_settings_on_screen(
    qtbot, window, small_image, tmp_path, save_and_wait
) -> None:
    show_image(qtbot, window, small_image)
    old = window.result
    window.request_spec("box:5", "code")  # its live run is still to come
    assert window.result is old and old.spec != window.model.spec
    out = tmp_path / "now.png"
    save_and_wait(window, out)
    expected = blurapp.filter_image(small_image, window.model.spec).image
    assert np.array_equal(read_image(out).pixels, expected)
    assert not np.array_equal(expected, old.image)


def test_sigma_and_radius_sliders_follow_the_spec(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    sigma = window.findChild(QSlider, "sigmaSlider")
    radius = window.findChild(QSlider, "radiusSlider")
    assert sigma is not None and radius is not None
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        sigma.setValue(35)
    assert window.designer.sigma.value() == pytest.approx(3.5)
    assert window.kernel.spec == "gaussian:sigma=3.5"
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        radius.setValue(6)
    assert window.designer.radius.value() == 6
    assert window.kernel.spec == "gaussian:sigma=3.5,radius=6"
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.request_spec("gaussian:sigma=1.25", "typed")
    assert sigma.value() == 12 or sigma.value() == 13  # 1.25 on a 0.1 scale
    assert window.designer.sigma.value() == pytest.approx(1.25)
    assert radius.value() == 0  # auto


def test_strategies_view_cancel_stops_the_comparison(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    view = window.compare.strategies
    window.compare.setCurrentIndex(STRATEGIES_TAB)
    cancel = window.findChild(QPushButton, "compareCancel")
    assert cancel is not None and cancel.isVisible()
    assert window.runner.is_busy("strategies")
    cancel.click()
    assert not window.runner.is_busy("strategies")
    assert not cancel.isVisible() and "cancelled" in view.status.text()
    with qtbot.assertNotEmitted(window.strategies_ready, wait=800):
        pass
    # Coming back to the tab runs it again, to the end this time.
    window.compare.setCurrentIndex(0)
    with qtbot.waitSignal(window.strategies_ready, timeout=WAIT_MS):
        window.compare.setCurrentIndex(STRATEGIES_TAB)
    assert "reference" in view.panes["cpu"].caption.text()
    assert "max error 0" not in view.panes["cpu"].caption.text()


def test_first_runs_are_marked_and_kept_out_of_the_plot(window) -> None:
    timing = Timing((PassTiming("pass", 500.0, 0),), "gpu", 100, 510.0)
    panel = window.timing
    panel.record("separable", timing, "gaussian:sigma=9", first=True)
    assert panel.is_first_run("separable")
    row = panel.strategies().index("separable")
    assert "first run" in panel.table.item(row, COL["timer"]).text()
    panel.record("separable", timing, "gaussian:sigma=9")
    assert not panel.is_first_run("separable")
    assert "first run" not in panel.table.item(row, COL["timer"]).text()
