"""Start the desktop application: ``run_gui`` is what ``blurapp``, ``blurapp IMAGE`` and
``blurapp gui`` call."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication

from blurapp import __version__
from blurapp.core.errors import BlurappError

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


def check_screen(environ: Mapping[str, str] | None = None) -> None:
    """Fail with one line, not Qt's abort, when a Linux session has no display server."""
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux") or env.get("QT_QPA_PLATFORM"):
        return
    if not (env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")):
        raise BlurappError(
            "no screen to open the window on (DISPLAY and WAYLAND_DISPLAY are unset): run it "
            "in a desktop session, or filter headlessly with "
            "'blurapp apply IN -o OUT --kernel SPEC'"
        )


def run_gui(image_path: str | None) -> int:
    """Open the main window on ``image_path`` (the bundled sample when ``None``) and run it.

    Arguments:
        image_path: an image file to open, or ``None`` for the bundled sample photo.

    Returns:
        The event loop's exit code (0 on a normal quit).

    Raises:
        BlurappError: on Linux with no screen to open a window on (Qt would abort instead).
    """
    check_screen()
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
