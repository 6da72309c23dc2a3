"""Fixtures for the desktop application's tests: offscreen Qt, private QSettings, small images."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np
import pytest
from PySide6.QtCore import QSettings


@pytest.fixture(scope="session", autouse=True)
def _private_settings(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Point every QSettings of the test session at a temporary folder, never the user's."""
    folder = tmp_path_factory.mktemp("qsettings")
    os.environ["XDG_CONFIG_HOME"] = str(folder)
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
        QSettings.setPath(QSettings.Format.IniFormat, scope, str(folder))


@pytest.fixture
def settings(tmp_path) -> QSettings:
    """A fresh settings file per test, so one test's last kernel cannot leak into the next."""
    return QSettings(str(tmp_path / "blurapp.ini"), QSettings.Format.IniFormat)


@pytest.fixture
def small_image() -> np.ndarray:
    """A 40×56 RGB uint8 image with edges and texture (deterministic)."""
    rng = np.random.default_rng(7)
    img = rng.integers(0, 256, size=(40, 56, 3), dtype=np.uint8)
    img[10:30, 15:40] = (250, 40, 20)
    return img


@pytest.fixture
def save_and_wait(qtbot):
    """Save a window's result as the user would (off the UI thread) and wait until written."""

    def save(window, path, timeout: int = 60000) -> None:
        with qtbot.waitSignal(window.saved, timeout=timeout):
            assert window.save_result(path)

    return save


@pytest.fixture
def window(qtbot, settings):
    """The main window on the CPU strategy (deterministic, no adapter needed), closed after."""
    from blurapp.ui.main_window import MainWindow

    win = MainWindow(settings, probe_adapter=False)
    win.strategy_combo.setCurrentText("cpu")
    qtbot.addWidget(win)
    # The offscreen screen is 800×600: a desktop-sized window, so that the small test images
    # show at 50 % or more (no reduced preview) as on a real screen.
    win.resize(1280, 860)
    win.show()
    yield win
    win.runner.cancel("live")
    win.runner.cancel("strategies")
    win.runner.cancel("borders")
    win.runner.wait_idle(20000)
    win.cpu_runner.wait_idle(20000)
