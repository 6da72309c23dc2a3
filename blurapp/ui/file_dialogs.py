"""The questions the window asks before it writes or opens a file: replacing a file, the open
photo refused as a destination, overwriting the original on purpose, a large image, and
closing while a save is in progress.

Each question is a real QMessageBox (or, for closing, a small QDialog) whose buttons have
object names, so that tests answer them by clicking the button they name
(``QMessageBox.exec`` patched to click it) and screenshots show them as users see them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

__all__ = [
    "CloseWhileSaving",
    "ask",
    "ask_large_image",
    "ask_overwrite_original",
    "ask_replace",
    "refuse_destination",
]

Role = QMessageBox.ButtonRole


def ask(
    parent: QWidget,
    name: str,
    icon: QMessageBox.Icon,
    text: str,
    informative: str,
    buttons: Sequence[tuple[str, QMessageBox.ButtonRole, str]],
    *,
    default: str,
    escape: str = "cancel",
) -> str | None:
    """Ask with a modal QMessageBox (object name ``name``); returns the object name of the
    button clicked (``None`` when the box was closed another way)."""
    box = QMessageBox(icon, "blurapp", text, parent=parent)
    box.setObjectName(name)
    box.setInformativeText(informative)
    box.setTextFormat(Qt.TextFormat.PlainText)  # file names are text, never markup
    made: dict[object, str] = {}
    for label, role, button_name in buttons:
        button = box.addButton(label, role)
        button.setObjectName(button_name)
        made[button] = button_name
        if button_name == default:
            box.setDefaultButton(button)
        if button_name == escape:
            box.setEscapeButton(button)
    box.exec()
    return made.get(box.clickedButton())


def ask_replace(parent: QWidget, path: Path) -> str | None:
    """``path`` exists: ``"replace"``, ``"another"`` (choose another name) or ``None``."""
    return ask(
        parent,
        "replaceDialog",
        QMessageBox.Icon.Question,
        f"{path.name} already exists in {path.parent}.",
        "Replace it? Its contents are lost.",
        [
            ("Replace", Role.DestructiveRole, "replace"),
            ("Choose another name…", Role.ActionRole, "another"),
            ("Cancel", Role.RejectRole, "cancel"),
        ],
        default="another",
    )


def refuse_destination(parent: QWidget, text: str, informative: str) -> str | None:
    """A destination that is never written (the open photo, a folder, a FIFO): ``"another"``
    (choose another name) or ``None``."""
    return ask(
        parent,
        "refusedDialog",
        QMessageBox.Icon.Warning,
        text,
        informative,
        [
            ("Choose another name…", Role.AcceptRole, "another"),
            ("Cancel", Role.RejectRole, "cancel"),
        ],
        default="another",
    )


def ask_overwrite_original(parent: QWidget, path: Path, what: str, lost: str) -> bool:
    """The explicit *Overwrite original* action's own confirmation, naming what is lost."""
    answer = ask(
        parent,
        "overwriteOriginalDialog",
        QMessageBox.Icon.Warning,
        f"Overwrite the original {path.name} with {what}?",
        f"{lost} This cannot be undone. (Save result… writes a copy instead.)",
        [
            ("Overwrite original", Role.DestructiveRole, "overwrite"),
            ("Cancel", Role.RejectRole, "cancel"),
        ],
        default="cancel",
    )
    return answer == "overwrite"


def ask_large_image(parent: QWidget, text: str, informative: str, *, can_open: bool) -> bool:
    """An image over the megapixel limit: ``True`` to open it anyway (for this file)."""
    buttons = [("Cancel", Role.RejectRole, "cancel")]
    if can_open:
        buttons.insert(0, ("Open anyway", Role.AcceptRole, "openAnyway"))
    answer = ask(
        parent,
        "largeImageDialog",
        QMessageBox.Icon.Warning if can_open else QMessageBox.Icon.Critical,
        text,
        informative,
        buttons,
        default="cancel",
    )
    return answer == "openAnyway"


class CloseWhileSaving(QDialog):
    """Shown when the window is asked to close while a save is in progress: the save's
    progress, *Don't close* (the save goes on, the window stays) and *Stop saving and close*.
    When every save has finished the window closes by itself (:attr:`finished_saving`)."""

    stop_and_close = Signal()

    def __init__(self, parent: QWidget, names: Sequence[str]) -> None:
        super().__init__(parent)
        self.setObjectName("closeWhileSavingDialog")
        self.setWindowTitle("blurapp")
        self.setModal(True)
        layout = QVBoxLayout(self)
        self.label = QLabel(objectName="closeWhileSavingText")
        self.label.setWordWrap(True)
        layout.addWidget(self.label)
        self.progress = QProgressBar(objectName="closeWhileSavingProgress")
        self.progress.setRange(0, 0)
        layout.addWidget(self.progress)
        note = QLabel("The window closes as soon as the file is written.")
        note.setStyleSheet("color: palette(mid);")
        layout.addWidget(note)
        buttons = QDialogButtonBox()
        self.stay = QPushButton("Don't close", objectName="dontClose")
        self.stop = QPushButton("Stop saving and close", objectName="stopSavingAndClose")
        buttons.addButton(self.stay, QDialogButtonBox.ButtonRole.RejectRole)
        buttons.addButton(self.stop, QDialogButtonBox.ButtonRole.DestructiveRole)
        self.stay.setDefault(True)
        layout.addWidget(buttons)
        self.stay.clicked.connect(self.reject)
        self.stop.clicked.connect(self._stop)
        self.set_names(names)

    def set_names(self, names: Sequence[str]) -> None:
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        self.label.setText(f"Saving {shown}… Closing now would lose it.")

    def set_progress(self, done: int, total: int) -> None:
        if total > 0:
            self.progress.setRange(0, 100)
            self.progress.setValue(round(100 * done / total))

    def _stop(self) -> None:
        self.stop_and_close.emit()
        self.accept()
