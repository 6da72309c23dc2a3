"""The window's actions, menus and toolbar: what each command is called, its shortcut and where
it appears. The slots themselves live with what they act on (the window, its files)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QMenu, QToolBar

if TYPE_CHECKING:
    from blurapp.ui.main_window import MainWindow

__all__ = ["WindowActions"]


def _action(
    parent: QMainWindow, text: str, slot: Callable[[], object], shortcut=None, tip: str = ""
) -> QAction:
    act = QAction(text, parent)
    if shortcut is not None:
        act.setShortcut(shortcut)
    if tip:
        act.setStatusTip(tip)
    act.triggered.connect(lambda _checked=False: slot())
    return act


def _fill(target: QMenu | QToolBar, actions: Sequence[QAction | None]) -> None:
    """Add ``actions`` in order; ``None`` is a separator."""
    for act in actions:
        if act is None:
            target.addSeparator()
        else:
            target.addAction(act)


class WindowActions:
    """Builds the actions of ``window`` and puts them in its menu bar and toolbar."""

    def __init__(self, window: MainWindow) -> None:
        w, files, keys = window, window.files, QKeySequence.StandardKey

        def view():
            return w.compare.current_view()

        self.open = _action(w, "&Open…", files.open_dialog, keys.Open)
        self.save = _action(w, "&Save result…", w.save_dialog, keys.Save)
        # GIMP's "Overwrite": replacing the open file is its own action, never a save's answer.
        self.overwrite_original = _action(
            w,
            "Overwrite &original…",
            lambda: (w.designer.flush(), files.overwrite_original_dialog()),
            tip="Replace the open image's file with the result (asks first)",
        )
        self.overwrite_original.setObjectName("overwriteOriginalAction")
        self.copy = _action(w, "&Copy result", w.copy_result, keys.Copy)
        self.export = _action(
            w, "&Export CLI", w.export_cli, "Ctrl+E", "Copy the blurapp apply command"
        )
        self.quit = _action(w, "&Quit", w.close, keys.Quit)
        self.fit = _action(w, "&Fit", lambda: view().fit(), "Ctrl+0")
        self.one = _action(w, "&1:1", lambda: view().actual_size(), "Ctrl+1")
        self.zoom_in = _action(w, "Zoom &in", lambda: view().zoom_by(1.25), keys.ZoomIn)
        self.zoom_out = _action(w, "Zoom &out", lambda: view().zoom_by(0.8), keys.ZoomOut)
        self.load_kernel = _action(w, "&Load kernel JSON…", files.load_kernel_dialog)
        self.save_kernel = _action(w, "Save &kernel JSON…", files.save_kernel_dialog)
        self.undo = w.undo_stack.createUndoAction(w, "&Undo")
        self.undo.setShortcut(keys.Undo)
        self.redo = w.undo_stack.createRedoAction(w, "&Redo")
        self.redo.setShortcut(keys.Redo)
        self.about = _action(w, "&About blurapp", w.about)
        self.licences = _action(w, "Sample &licences", w.show_licences)

        bar = w.menuBar()
        menu = bar.addMenu("&File")
        menu.addAction(self.open)
        self.recent_menu = menu.addMenu("Open &recent")
        _fill(
            menu,
            [
                self.save, self.overwrite_original, self.copy, None, self.load_kernel,
                self.save_kernel, None,
            ],
        )  # fmt: skip
        menu.addAction(self.quit)
        _fill(bar.addMenu("&Edit"), [self.undo, self.redo, None, self.export])
        _fill(
            bar.addMenu("&View"),
            [
                self.fit, self.one, self.zoom_in, self.zoom_out, None,
                w.kernel_dock.toggleViewAction(), w.timing_dock.toggleViewAction(),
            ],
        )  # fmt: skip
        _fill(bar.addMenu("&Help"), [self.about, self.licences])

        toolbar = w.addToolBar("Main")
        toolbar.setObjectName("mainToolbar")
        _fill(
            toolbar,
            [
                self.open, self.save, self.copy, None, self.undo, self.redo, None,
                self.fit, self.one, None, self.export,
            ],
        )  # fmt: skip
