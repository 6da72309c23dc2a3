"""Start the desktop application: ``run_gui`` is what ``blurapp``, ``blurapp IMAGE`` and
``blurapp gui`` call."""

from __future__ import annotations

import sys

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from blurapp import __version__

ORGANIZATION = "blurapp"
APPLICATION = "blurapp"


def make_app(argv: list[str] | None = None) -> QApplication:
    """The process's QApplication (created once), named so QSettings finds its file."""
    QCoreApplication.setOrganizationName(ORGANIZATION)
    QCoreApplication.setApplicationName(APPLICATION)
    QCoreApplication.setApplicationVersion(__version__)
    app = QApplication.instance()
    if app is None:
        app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setDesktopFileName("blurapp")
    return app  # type: ignore[return-value]


def run_gui(image_path: str | None) -> int:
    """Open the main window on ``image_path`` (the bundled sample when ``None``) and run it.

    Arguments:
        image_path: an image file to open, or ``None`` for the bundled sample photo.

    Returns:
        The event loop's exit code (0 on a normal quit).
    """
    app = make_app()
    from blurapp.ui.main_window import MainWindow

    window = MainWindow()
    window.show()
    if image_path is None or not window.open_path(image_path):
        # A file that cannot be opened was explained in a dialog; show the sample meanwhile.
        window.open_sample()
    code = app.exec()
    window.runner.wait_idle()  # let a job in flight finish before its window goes away
    return code
