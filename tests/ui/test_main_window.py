"""The main window end to end: sample on start, spec typing, grid sync, results equal to the
engine's, comparisons, bad input, persistence, saving and the exported command."""

from __future__ import annotations

import shlex

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QComboBox,
    QLineEdit,
    QTableWidget,
    QTabWidget,
)

import blurapp
from blurapp.core import strategies
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.io import read_image
from blurapp.ui.compare import BORDERS_TAB, STRATEGIES_TAB
from blurapp.ui.jobs import COMPARED_STRATEGIES

WAIT_MS = 30000


def type_spec(qtbot, window, text: str) -> None:
    """Type a spec into the field like a user (select all, type, Enter)."""
    field = window.findChild(QLineEdit, "kernelSpec")
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Backspace)
    qtbot.keyClicks(field, text)
    qtbot.keyClick(field, Qt.Key.Key_Return)


def show_image(qtbot, window, image: np.ndarray) -> None:
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.set_image(image)


def test_object_names_are_in_place(window) -> None:
    assert isinstance(window.findChild(QLineEdit, "kernelSpec"), QLineEdit)
    assert isinstance(window.findChild(QTableWidget, "kernelEditor"), QTableWidget)
    assert isinstance(window.findChild(QTableWidget, "timingTable"), QTableWidget)
    assert isinstance(window.findChild(QTabWidget, "compareView"), QTabWidget)
    combo = window.findChild(QComboBox, "strategyCombo")
    assert [combo.itemText(i) for i in range(combo.count())] == list(strategies.names())
    borders = window.findChild(QComboBox, "borderCombo")
    assert [borders.itemText(i) for i in range(5)] == ["clamp", "zero", "reflect", "mirror", "wrap"]


def test_window_opens_on_the_sample(qtbot, window) -> None:
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        assert window.open_sample()
    assert window.image_path is not None and window.image_path.name == "astronaut.png"
    assert "astronaut.png" in window.windowTitle()
    assert window.result is not None
    assert window.result.image.shape == window.image.shape == (512, 512, 3)
    assert window.compare.result_view.image_size() == (512, 512)


def test_typed_spec_updates_grid_and_result(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "box:3x5")
    assert window.kernel.spec == "box:3x5"
    grid = window.findChild(QTableWidget, "kernelEditor")
    window.kernel_tabs.setCurrentWidget(window.grid_editor)  # rebuilt when shown, not before
    assert (grid.rowCount(), grid.columnCount()) == (5, 3)
    assert float(grid.item(0, 0).text()) == pytest.approx(1 / 15)
    assert window.designer.family.currentText() == "box"
    assert (window.designer.width_.value(), window.designer.height_.value()) == (3, 5)
    expected = blurapp.filter_image(small_image, "box:3x5", border="clamp", strategy="cpu").image
    assert window.result.image.dtype == np.uint8
    np.testing.assert_array_equal(window.result.image, expected)


def test_typed_spec_applies_on_the_keystroke_that_makes_it_valid(qtbot, window, small_image):
    """No debounce: the keystroke that makes a valid spec applies it (no Enter, no pause);
    text that does not parse says so only after the pause; the keystrokes are one undo step."""
    show_image(qtbot, window, small_image)
    first = window.kernel.spec
    field = window.findChild(QLineEdit, "kernelSpec")
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Backspace)
    qtbot.keyClicks(field, "box:3x")  # "box:3" applied on its keystroke, "box:3x" is not valid
    assert window.kernel.spec == "box:3"
    assert not window.designer.has_error()  # not yet: the user is still typing
    assert field.text() == "box:3x"  # applying never rewrites what is being typed
    qtbot.waitUntil(window.designer.has_error, timeout=2000)  # after the pause, it says why
    assert window.kernel.spec == "box:3"  # and the last valid kernel stays
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        qtbot.keyClicks(field, "5")
    assert window.kernel.spec == "box:3x5" and not window.designer.has_error()
    expected = blurapp.filter_image(small_image, "box:3x5", border="clamp", strategy="cpu").image
    np.testing.assert_array_equal(window.result.image, expected)
    qtbot.keyClick(field, Qt.Key.Key_Return)  # already applied: Enter adds no step
    window.undo_stack.undo()
    assert window.kernel.spec == first  # box:3, box:3x5 and Enter were one step


@pytest.mark.parametrize("border", ["mirror", "wrap", "constant=0.5"])
def test_result_equals_engine_output_for_each_border(qtbot, window, small_image, border) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.border_combo.setCurrentText(border)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "sobel:x")
    expected = blurapp.filter_image(small_image, "sobel:x", border=border, strategy="cpu").image
    np.testing.assert_array_equal(window.result.image, expected)


def test_family_parameters_write_the_spec(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.designer.family.setCurrentText("box")
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.designer.width_.setValue(7)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.designer.height_.setValue(3)
    assert window.designer.spec.text() == "box:7x3"
    assert window.kernel.shape == (3, 7)


def test_bad_spec_leaves_the_last_result_in_place(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    kernel, result = window.kernel, window.result
    type_spec(qtbot, window, "gaussian:sigma=-1")
    qtbot.waitUntil(window.designer.has_error, timeout=WAIT_MS)
    assert "sigma" in window.designer.error.text()
    assert "\n" not in window.designer.error.text()
    assert window.kernel is kernel
    assert window.result is result
    assert not window.runner.is_busy("live")
    assert window.findChild(QLineEdit, "kernelSpec").text() == "gaussian:sigma=-1"
    # The next valid spec clears the error and filters again.
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "box:3")
    assert not window.designer.has_error()


def test_kernel_edits_undo_and_redo(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    first = window.kernel.spec
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "laplacian")
    window.undo_stack.undo()
    assert window.kernel.spec == first
    assert window.designer.spec.text() == first
    window.undo_stack.redo()
    assert window.kernel.spec == "laplacian"


def test_grid_edit_makes_a_matrix_kernel(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "identity")
    window.kernel_tabs.setCurrentWidget(window.grid_editor)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.grid_editor.set_cell(1, 2, 1.0)
    assert window.kernel.name == "matrix"
    np.testing.assert_array_equal(window.kernel.weights, [[0, 0, 0], [0, 1, 1], [0, 0, 0]])
    assert window.designer.spec.text() == window.kernel.spec
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.grid_editor.normalise.click()
    np.testing.assert_allclose(window.kernel.weights.sum(), 1.0)
    expected = blurapp.filter_image(small_image, window.kernel, strategy="cpu").image
    np.testing.assert_array_equal(window.result.image, expected)


def test_grid_resizes_to_31x31(qtbot, window) -> None:
    window.grid_editor.cols.setValue(31)
    window.grid_editor.rows.setValue(31)
    grid = window.findChild(QTableWidget, "kernelEditor")
    assert (grid.rowCount(), grid.columnCount()) == (31, 31)
    assert window.kernel.shape == (31, 31)


def test_inapplicable_strategy_is_explained_inline(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "laplacian")
    result = window.result
    window.strategy_combo.setCurrentText("separable")
    assert "rank-1" in window.run_info.text()
    assert window.result is result
    # The refused choice snaps back: the combo shows what the model holds.
    assert window.strategy_combo.currentText() == window.model.spec.strategy == "cpu"


def test_a_kernel_the_strategy_cannot_run_moves_it_to_auto(qtbot, window, small_image) -> None:
    window.strategy_combo.setCurrentText("separable")
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "laplacian")
    assert window.model.spec.strategy == "auto"
    assert window.strategy_combo.currentText() == "auto"
    assert "separable" in window.statusBar().currentMessage()
    # Undo brings back the kernel and the strategy it moved.
    before = window.model.kernel
    window.undo_stack.undo()
    assert window.model.kernel != before and window.model.spec.strategy == "separable"
    assert window.strategy_combo.currentText() == "separable"
    window.undo_stack.redo()
    assert window.model.kernel == before and window.model.spec.strategy == "auto"


def test_run_box_controls_write_the_model_and_show_it(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    alpha = window.findChild(QComboBox, "alphaCombo")
    linear = window.findChild(QCheckBox, "linearCheck")
    assert [alpha.itemText(i) for i in range(alpha.count())] == ["premultiply", "straight"]
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        alpha.setCurrentText("straight")
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        linear.setChecked(True)
    assert window.model.spec.alpha == "straight" and window.model.spec.linear
    assert window.result.spec == window.model.spec
    expected = blurapp.filter_image(small_image, window.model.spec).image
    np.testing.assert_array_equal(window.result.image, expected)
    # And the other way: the model's changes show in the controls.
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.model.update(alpha="premultiply", linear=False, border="constant=0.25")
    assert alpha.currentText() == "premultiply" and not linear.isChecked()
    assert window.border_combo.currentText() == "constant=0.25"
    window.model.set_strategy("direct")
    assert not window.tile_combo.isEnabled()
    window.model.set_strategy("tiled")
    assert window.tile_combo.isEnabled()


def test_grid_offset_and_range_mode_are_one_setting(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.grid_editor.offset.setChecked(True)
    assert window.model.spec.range_mode == "offset"
    assert window.range_combo.currentText() == "offset"
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.range_combo.setCurrentText("abs")
    assert not window.grid_editor.offset.isChecked()


def test_strategies_view_fills_one_row_per_applicable_strategy(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "laplacian")  # rank 2: separable and transpose cannot run it
    with qtbot.waitSignal(window.strategies_ready, timeout=WAIT_MS * 4):
        window.compare.setCurrentIndex(STRATEGIES_TAB)
    view = window.compare.strategies
    ran = [r for r in view.result.runs if r.why_not is None]
    assert [r.strategy for r in view.result.runs] == list(COMPARED_STRATEGIES)
    assert view.applicable_count() == len(ran)
    assert window.timing.strategies() == [r.strategy for r in ran]
    assert window.findChild(QTableWidget, "timingTable").rowCount() == len(ran)
    for name in ("separable", "transpose"):
        run = next(r for r in view.result.runs if r.strategy == name)
        assert run.why_not == strategies.why_not(name, window.kernel)
        assert view.panes[name].message.text().startswith("cannot run")
    cpu = next(r for r in view.result.runs if r.strategy == "cpu")
    assert cpu.max_error == 0.0
    for run in ran:
        assert run.max_error < 1e-4  # f32 accumulation against the float64 reference


def test_border_view_shows_five_panes(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.borders_ready, timeout=WAIT_MS):
        window.compare.setCurrentIndex(BORDERS_TAB)
    view = window.compare.borders
    assert view.filled_panes() == 5
    assert [p.mode for p in view.result.panes] == ["clamp", "zero", "reflect", "mirror", "wrap"]
    diffs = {p.mode: p.max_diff for p in view.result.panes}
    assert diffs["clamp"] == 0.0 and diffs["zero"] > 0.0
    with qtbot.waitSignal(window.borders_ready, timeout=WAIT_MS):
        view.reference.setCurrentText("wrap")
    assert {p.mode: p.max_diff for p in view.result.panes}["wrap"] == 0.0


def test_settings_persist_kernel_and_strategy(qtbot, settings, small_image) -> None:
    from blurapp.ui.main_window import MainWindow

    first = MainWindow(settings, probe_adapter=False)
    qtbot.addWidget(first)
    first.strategy_combo.setCurrentText("cpu")
    first.border_combo.setCurrentText("mirror")
    first.set_kernel(Kernel.parse("box:5x3"))
    first.close()
    second = MainWindow(settings, probe_adapter=False)
    qtbot.addWidget(second)
    assert second.kernel.spec == "box:5x3"
    assert second.border_combo.currentText() == "mirror"
    assert second.strategy_combo.currentText() == "cpu"


def test_settings_persist_the_whole_spec(qtbot, settings) -> None:
    from blurapp.ui.main_window import MainWindow

    first = MainWindow(settings, probe_adapter=False)
    qtbot.addWidget(first)
    first.strategy_combo.setCurrentText("tiled")
    first.tile_combo.setCurrentIndex(first.tile_combo.findData(16))
    first.model.update(
        border="constant=0.25", range_mode="offset", alpha="straight", linear=True,
        convolve=True, dtype="float32", channels="rgb",
    )  # fmt: skip
    spec = first.model.spec
    assert spec.channels == "rgb"
    first.close()
    second = MainWindow(settings, probe_adapter=False)
    qtbot.addWidget(second)
    assert second.model.spec == spec
    assert second.tile_combo.currentData() == 16
    assert second.alpha_combo.currentText() == "straight" and second.linear_check.isChecked()


def test_settings_that_no_longer_make_sense_are_skipped(qtbot, settings) -> None:
    from blurapp.ui.main_window import MainWindow

    settings.setValue("kernel/last", "laplacian")
    settings.setValue("run/strategy", "separable")  # cannot run laplacian
    settings.setValue("run/border", "sideways")
    settings.setValue("run/alpha", "straight")
    window = MainWindow(settings, probe_adapter=False)
    qtbot.addWidget(window)
    assert window.kernel.spec == "laplacian"
    assert window.model.spec.strategy == "auto" and window.model.spec.border.name == "clamp"
    assert window.model.spec.alpha == "straight"


def test_save_result_and_kernel_json(qtbot, window, small_image, tmp_path, save_and_wait) -> None:
    show_image(qtbot, window, small_image)
    out = tmp_path / "out.png"
    save_and_wait(window, out)
    np.testing.assert_array_equal(read_image(out).pixels, window.result.image)
    save_and_wait(window, tmp_path / "out.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), window.result.image)
    kernel_file = tmp_path / "k.json"
    assert window.save_kernel(kernel_file)
    saved = window.kernel
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "emboss")
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        assert window.load_kernel(kernel_file)
    assert window.kernel == saved


def test_unreadable_file_is_one_sentence_dialog(qtbot, window, tmp_path) -> None:
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a png")
    with qtbot.waitSignal(window.error_shown, timeout=WAIT_MS):
        assert window.open_path(bad)  # decoded off the UI thread: the dialog comes after
    assert "broken.png" in window.last_error
    assert "\n" not in window.last_error and "Traceback" not in window.last_error
    assert window.image is None


def test_export_cli_reproduces_the_settings(qtbot, window, small_image) -> None:
    show_image(qtbot, window, small_image)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.border_combo.setCurrentText("wrap")
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        type_spec(qtbot, window, "motion:length=9,angle=30")
    command = window.export_cli()
    args = shlex.split(command)
    assert args[:2] == ["blurapp", "apply"]
    assert args[args.index("--kernel") + 1] == "motion:length=9,angle=30"
    assert args[args.index("--border") + 1] == "wrap"
    assert args[args.index("--strategy") + 1] == "cpu"
    assert FilterSpec.from_argv(args[5:]) == window.model.spec
    # ImageMagick's line comes next to it, where its options can do the same (wrap: Tile).
    copied = QApplication.clipboard().text().splitlines()
    assert copied[0] == command and copied[1].startswith("# ImageMagick (within a level")
    magick = shlex.split(copied[2])
    assert magick[0] == "magick" and magick[magick.index("-virtual-pixel") + 1] == "Tile"
    assert magick[magick.index("Correlate") + 1].startswith("9x")
    # A mirror border has no ImageMagick equivalent: blurapp's line alone.
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.border_combo.setCurrentText("mirror")
    assert QApplication.clipboard().text() != window.export_cli()
    assert QApplication.clipboard().text() == window.export_cli()


def test_run_gui_opens_the_sample(qtbot, monkeypatch) -> None:
    """``blurapp`` with no file: run_gui shows the sample and filters it.

    The event loop is stood in for by qtbot: quitting the real QApplication inside a test run
    would stop every later test's timers.
    """
    from blurapp.ui import app as app_module
    from blurapp.ui.main_window import MainWindow

    seen: dict[str, object] = {}

    class LoopStandIn:
        def exec(self) -> int:
            windows = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
            window = next(w for w in windows if w.isVisible())
            qtbot.waitUntil(lambda: window.result is not None, timeout=WAIT_MS)
            seen["path"] = window.image_path
            seen["shape"] = window.result.image.shape
            window.close()
            return 0

    monkeypatch.setattr(app_module, "make_app", lambda argv=None: LoopStandIn())
    assert app_module.run_gui(None) == 0
    assert seen["path"].name == "astronaut.png"
    assert seen["shape"] == (512, 512, 3)


@pytest.mark.gpu
def test_live_preview_uploads_the_image_once_per_image(
    qtbot, gpu, window, small_image, monkeypatch
) -> None:
    """Changing the kernel or border reruns the GPU passes on the image the GPU already holds;
    opening another image uploads that one.

    At the default rates: the window's rates are the process's, and a slow GPU rate learned by
    earlier tests tiles even this 40x56 image, a new upload per tile (6 more here with a GPU
    rate of 1e5, as in one CI run); that is the rates' job, tested in test_live_schedule."""
    from blurapp.gpu.engine import get_filter
    from blurapp.live import plan
    from blurapp.ui import jobs

    monkeypatch.setattr(plan, "engine_rate", lambda kind: None)
    monkeypatch.setattr(jobs, "RATES", plan.Rates(dict(plan.DEFAULT_RATES)))

    f = get_filter()
    window.strategy_combo.setCurrentText("separable")
    show_image(qtbot, window, small_image)
    before = f.uploads
    for spec in ("box:3", "gaussian:sigma=1.5"):
        with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
            type_spec(qtbot, window, spec)
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.border_combo.setCurrentText("wrap")
    assert f.uploads == before
    expected = blurapp.filter_image(small_image, "gaussian:sigma=1.5", border="wrap").image
    np.testing.assert_array_equal(window.result.image, expected)
    before = f.uploads
    show_image(qtbot, window, small_image[::-1].copy())
    assert f.uploads == before + 1
    flipped = blurapp.filter_image(small_image[::-1], "gaussian:sigma=1.5", border="wrap").image
    np.testing.assert_array_equal(window.result.image, flipped)
