"""The window around the images (issue 19, item 4): docks closed and brought back from View,
the zoom in the status bar, the save dialog's suggestion, undo and redo of every setting."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget

from blurapp.ui.files import SAVE_FILTERS
from blurapp.ui.kernel_history import PARAM_MERGE_S

WAIT_MS = 30000


def show(qtbot, window, image: np.ndarray) -> None:
    with qtbot.waitSignal(window.result_ready, timeout=WAIT_MS):
        window.set_image(image)


def test_docks_close_and_come_back_from_the_view_menu(qtbot, window) -> None:
    for dock in (window.kernel_dock, window.timing_dock):
        assert dock.features() & QDockWidget.DockWidgetFeature.DockWidgetClosable
        toggle = window.findChild(QAction, f"{dock.objectName()}Toggle")
        assert toggle is dock.toggleViewAction()
        assert toggle.isEnabled()
        view_menu = next(a.menu() for a in window.menuBar().actions() if "View" in a.text())
        assert toggle in view_menu.actions()
        dock.close()
        qtbot.waitUntil(lambda d=dock: not d.isVisible())
        assert not toggle.isChecked()
        toggle.trigger()
        qtbot.waitUntil(lambda d=dock: d.isVisible())
        assert toggle.isChecked()


def test_zoom_is_shown_in_the_status_bar(qtbot, window, small_image) -> None:
    show(qtbot, window, small_image)
    view = window.compare.result_view
    view.set_scale(2.0)
    assert window.zoom_label.text() == "zoom 200 %"
    window.menu_actions.zoom_out.trigger()
    assert window.zoom_label.text() == "zoom 160 %"
    window.menu_actions.fit.trigger()
    assert window.zoom_label.text().endswith("(fit)")
    assert window.zoom_label.text() == f"zoom {100 * view.scale_factor():.0f} % (fit)"


def test_the_save_dialog_suggests_the_source_format(window, small_image, tmp_path) -> None:
    window.settings.setValue("files/lastFolder", str(tmp_path))
    cases = {
        "photo.JPEG": ("photo_filtered.JPEG", "jpg"),
        "scan.tif": ("scan_filtered.tif", "tiff"),
        "array.npy": ("array_filtered.npy", "npy"),
        "odd.xyz": ("odd_filtered.png", "png"),
    }
    for name, (suggested, fmt) in cases.items():
        window.model.set_image(small_image, path=tmp_path / name)
        path, selected = window.files.save_suggestion()
        assert Path(path) == tmp_path / suggested
        assert selected == SAVE_FILTERS[fmt]
    window.model.set_image(small_image)  # the sample or an array: PNG
    assert window.files.save_suggestion()[0].endswith("image_filtered.png")


def test_border_and_strategy_changes_undo_and_redo(qtbot, window, small_image) -> None:
    show(qtbot, window, small_image)
    start = window.spec
    window.border_combo.setCurrentText("wrap")
    window.strategy_combo.setCurrentText("direct")
    assert (window.spec.border.name, window.spec.strategy) == ("wrap", "direct")
    assert "strategy direct" in window.undo_stack.undoText()
    window.undo_stack.undo()
    assert (window.spec.border.name, window.spec.strategy) == ("wrap", "cpu")
    assert window.strategy_combo.currentText() == "cpu"
    window.undo_stack.undo()
    assert window.spec == start
    assert window.border_combo.currentText() == start.border.name
    window.undo_stack.redo()
    window.undo_stack.redo()
    assert (window.spec.border.name, window.spec.strategy) == ("wrap", "direct")
    assert window.border_combo.currentText() == "wrap"
    # What undo restores is filtered again: the live result follows the spec.
    qtbot.waitUntil(lambda: window.result is not None and window.result.spec == window.spec)


def test_every_pixel_setting_is_one_undo_step(window) -> None:
    steps = [
        lambda: window.range_combo.setCurrentText("abs"),
        lambda: window.alpha_combo.setCurrentText("straight"),
        lambda: window.linear_check.setChecked(True),
        lambda: window.convolve_check.setChecked(True),
        lambda: window.dtype_combo.setCurrentIndex(window.dtype_combo.findData("uint16")),
        lambda: window.strategy_combo.setCurrentText("tiled"),
        lambda: window.tile_combo.setCurrentIndex(window.tile_combo.findData(8)),
    ]
    specs = [window.spec]
    for step in steps:
        count = window.undo_stack.count()
        step()
        assert window.spec != specs[-1]
        assert window.undo_stack.count() == count + 1
        specs.append(window.spec)
    for spec in reversed(specs[:-1]):
        window.undo_stack.undo()
        assert window.spec == spec


def test_quick_steps_of_one_setting_merge(window, monkeypatch) -> None:
    count = window.undo_stack.count()
    start = window.spec
    for mode in ("wrap", "mirror", "reflect"):
        window.border_combo.setCurrentText(mode)
    assert window.undo_stack.count() == count + 1
    window.undo_stack.undo()
    assert window.spec == start
    window.undo_stack.redo()
    assert window.spec.border.name == "reflect"
    # A pause longer than the merge window makes the next change its own step.
    import blurapp.ui.kernel_history as history

    clock = [history.time.monotonic() + 2 * PARAM_MERGE_S]
    monkeypatch.setattr(history.time, "monotonic", lambda: clock[0])
    window.border_combo.setCurrentText("wrap")
    assert window.undo_stack.count() == count + 2
