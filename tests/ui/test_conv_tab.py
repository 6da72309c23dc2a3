"""The "Conv layer" tab: form → run on the GPU → results, layout run counts and tile budget."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np
import pytest

from blurapp.conv.engine import GPU_STRATEGIES as CONV_GPU_STRATEGIES
from blurapp.ui.conv_tab import ConvLayerTab
from blurapp.ui.worker import JobRunner


@pytest.fixture
def tab(qtbot):
    runner = JobRunner()
    holder: dict[str, np.ndarray | None] = {"image": None}
    widget = ConvLayerTab(runner=runner, image=lambda: holder["image"])
    widget.holder = holder  # the test sets the "loaded image" here
    qtbot.addWidget(widget)
    widget.show()
    yield widget
    runner.cancel("conv-layer")
    runner.wait_idle(20000)


def small_layer(tab, *, cin=5, h=9, w=11, cout=6, k=3, groups=1):
    for box, value in (
        (tab.cin, cin), (tab.height, h), (tab.width, w), (tab.cout, cout), (tab.kernel, k),
        (tab.groups, groups), (tab.padding, 1),
    ):  # fmt: skip
        box.setValue(value)


def cell(table, row, column):
    return table.item(row, column).text()


def test_layout_runs_and_shape_update_without_gpu(tab):
    small_layer(tab, cin=16, k=3)
    assert "NCHW: 48 runs of 3" in tab.runs_label.text()
    assert "NHWC: 3 runs of 48" in tab.runs_label.text()
    tab.dilation.setValue(2)
    assert "NHWC: 9 runs of 16" in tab.runs_label.text()
    assert "→ 7×9" in tab.shape_label.text()  # (9 + 2 − 5) + 1 rows, (11 + 2 − 5) + 1 columns


def test_bad_groups_disable_run_with_one_line(tab):
    small_layer(tab, cin=5, groups=2)
    assert not tab.run_button.isEnabled()
    assert "groups=2" in tab.status.text() and "\n" not in tab.status.text()


@pytest.mark.gpu
def test_run_all_strategies_both_layouts(qtbot, tab, gpu):
    small_layer(tab)
    with qtbot.waitSignal(tab.finished, timeout=120000):
        tab.run_button.click()
    rows = tab.last_result["rows"]
    assert {(r["strategy"], r["layout"]) for r in rows} == {
        (s, lay) for s in CONV_GPU_STRATEGIES for lay in ("nchw", "nhwc")
    }
    assert "winograd" in CONV_GPU_STRATEGIES
    assert tab.results.rowCount() == 2 * len(CONV_GPU_STRATEGIES)
    for i, r in enumerate(rows):
        assert r["max_error"] < 1e-4
        assert float(cell(tab.results, i, 6)) < 1e-4  # the table shows the same error
        assert float(cell(tab.results, i, 3)) > 0  # GFLOP/s
    im2col = next(r for r in rows if r["strategy"] == "im2col")
    assert im2col["column"] == 5 * 9 * 9 * 11 * 4  # Cin·k²·pixels floats
    items = [cell(tab.budget, i, 0) for i in range(tab.budget.rowCount())]
    assert items[:5] == ["input tile", "weights", "partial sums", "biases", "total"]
    assert "fits" in cell(tab.budget, 4, 1)


@pytest.mark.gpu
def test_loaded_image_is_the_feature_map_and_depthwise_runs_direct(qtbot, tab, gpu):
    rng = np.random.default_rng(3)
    tab.holder["image"] = rng.integers(0, 256, size=(12, 10, 3), dtype=np.uint8)
    tab.source_combo.setCurrentIndex(1)
    assert not tab.cin.isEnabled()
    assert (tab.cin.value(), tab.height.value(), tab.width.value()) == (3, 12, 10)
    tab.cout.setValue(3)
    tab.groups.setValue(3)
    tab.strategy_combo.setCurrentText("auto")
    tab.layout_combo.setCurrentText("nhwc")
    spec = tab.spec()
    assert (spec.n, spec.cin, spec.h, spec.w) == (1, 3, 12, 10)
    with qtbot.waitSignal(tab.finished, timeout=120000):
        tab.run_button.click()
    (row,) = tab.last_result["rows"]
    assert row["ran"] == "direct" and row["max_error"] < 1e-4
    assert "auto → direct" in cell(tab.results, 0, 0)
    assert "no GEMM tile" in tab.budget_title.text()


@pytest.mark.gpu
def test_gemm_strategy_refusing_groups_is_listed_not_raised(qtbot, tab, gpu):
    small_layer(tab, cin=4, cout=4, groups=4)
    tab.strategy_combo.setCurrentText("im2col")
    tab.layout_combo.setCurrentText("nchw")
    with qtbot.waitSignal(tab.finished, timeout=120000):
        tab.run_button.click()
    assert "groups=1" in cell(tab.results, 0, 7)
    assert "No strategy could run" in tab.status.text()


def test_large_and_grey_images_become_small_feature_maps():
    from blurapp.ui.conv_tab import IMAGE_MAX_SIDE, _image_feature_map

    grey = np.full((600, 300), 65535, dtype=np.uint16)
    x, note = _image_feature_map(grey)
    assert x.shape == (1, 1, 200, 100) and x.dtype == np.float32
    assert max(x.shape[2:]) <= IMAGE_MAX_SIDE and "1:3" in note
    assert np.allclose(x, 1.0)  # normalised like the filters: uint16 / 65535


@pytest.mark.gpu
def test_int8_dtype_runs_and_lists_float32_only_strategies(qtbot, tab, gpu):
    from blurapp.conv.engine import DTYPES

    assert [tab.dtype_combo.itemText(i) for i in range(tab.dtype_combo.count())] == list(DTYPES)
    small_layer(tab)
    tab.layout_combo.setCurrentText("nchw")
    tab.dtype_combo.setCurrentText("int8")
    with qtbot.waitSignal(tab.finished, timeout=120000):
        tab.run_button.click()
    rows = {r["strategy"]: r for r in tab.last_result["rows"]}
    assert rows["implicit-gemm"]["max_error"] < 3e-2 and rows["direct"]["max_error"] < 3e-2
    assert "float32 only" in rows["winograd"]["error"]
    assert "float32 only" in rows["im2col"]["error"]
