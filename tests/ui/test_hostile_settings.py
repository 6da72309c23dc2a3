"""Hostile settings: specs that used to raise ZeroDivisionError (issue 18) are a message in the
spec box and lose only themselves from a saved setting; a value of any QVariant type in any
key the window reads is that key's default and one warning, and the window starts (issue 26
item 4; a recent-files entry `@Point(1 2)` killed it at every start)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from PySide6.QtCore import QSettings

from blurapp.core.filterspec import FilterSpec
from blurapp.ui.model import FilterModel
from blurapp.ui.window_settings import DEFAULT_SPEC, load_spec

BAD = ("gaussian:sigma=1e-200", "gaussian:sigma=5e-324", "matrix:1x1:1e39")


@pytest.mark.parametrize("spec", BAD)
def test_the_spec_box_shows_a_message(qtbot, spec: str) -> None:
    model = FilterModel()
    before = model.spec
    error = model.set_kernel(spec)
    assert error and "\n" not in error
    assert model.spec == before


@pytest.mark.parametrize("spec", BAD)
def test_a_saved_bad_spec_falls_back_to_the_default(tmp_path, spec: str) -> None:
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    settings.setValue("kernel/last", spec)
    assert load_spec(settings).kernel.spec == DEFAULT_SPEC


# ---- issue 26 item 4: a value of any type in any key is its default and one warning --------

#: Every key the window reads at start (window_settings, files).
KEYS = (
    "kernel/last", "run/strategy", "run/tile", "run/border", "run/range", "run/alpha",
    "run/dtype", "run/channels", "run/linear", "run/convolve", "run/tolerance",
    "window/geometry", "window/state", "files/recent", "files/lastFolder",
    "files/lastKernelFolder",
)  # fmt: skip


def _qvariant_junk() -> list[object]:
    """A value of (nearly) every type a QVariant in a settings file can hold."""
    from PySide6.QtCore import (
        QByteArray,
        QDate,
        QDateTime,
        QLine,
        QPoint,
        QPointF,
        QRect,
        QRectF,
        QSize,
        QSizeF,
        QTime,
        QUrl,
        QUuid,
    )  # fmt: skip
    from PySide6.QtGui import QColor, QFont, QKeySequence

    return [
        QPoint(1, 2), QPointF(1.5, 2), QSize(3, 4), QSizeF(1, 2), QRect(1, 2, 3, 4),
        QRectF(1, 2, 3, 4), QLine(1, 2, 3, 4), QByteArray(b"\x00\xffjunk"),
        QDateTime(QDate(2020, 1, 1), QTime(1, 2)), QDate(2020, 1, 1), QTime(1, 2), QUrl("http://x"),
        QUuid("{2bf7fa2a-7904-40ed-b29b-3fae244ab584}"), QColor("red"), QFont("Sans"),
        QKeySequence("Ctrl+S"), {"a": 1}, [1, "a", QPoint(1, 1)], b"bytes", ("t", 1),
    ]  # fmt: skip


PRIMITIVE_JUNK = (5, -1, 2.5, float("nan"), True, False, "", "x" * 300, "\x00nul", "1e999",
                  "@Point(1 2)", ["a", "b"])  # fmt: skip


def _start(qtbot, settings, caplog):
    from blurapp.ui.main_window import MainWindow

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="blurapp.ui.settings"):
        window = MainWindow(settings, probe_adapter=False)
        qtbot.addWidget(window)
        window.show()
        window.files.save_suggestion()  # reads files/lastFolder
        window.files._folder("files/lastKernelFolder")  # what the kernel dialogs read
    warned = [r.getMessage().split(" ")[1] for r in caplog.records]
    return window, warned


@pytest.mark.parametrize("junk", _qvariant_junk(), ids=lambda v: type(v).__name__)
def test_junk_of_any_qvariant_type_in_every_key_is_the_default_and_one_warning(
    qtbot, tmp_path, caplog, junk
) -> None:
    settings = QSettings(str(tmp_path / "junk.ini"), QSettings.Format.IniFormat)
    for key in KEYS:
        settings.setValue(key, junk)
    settings.sync()
    window, warned = _start(qtbot, settings, caplog)
    assert window.model.spec == FilterSpec.create(DEFAULT_SPEC)
    assert sorted(warned) == sorted(set(warned)), "one warning per key"
    assert set(warned) == set(KEYS) - {"run/tile"}  # the tile is read with a strategy only
    assert window.files.recent.paths() == [] or all(isinstance(p, str) for p in
                                                    window.files.recent.paths())  # fmt: skip
    assert "Settings: setting" in window.statusBar().currentMessage()
    # and the window works: it filters, and what it stores next is read back without a word
    with qtbot.waitSignal(window.result_ready, timeout=120000):  # a 2-core CPU under load
        window.set_image(np.zeros((8, 9, 3), np.uint8))
    window.close()
    window, warned = _start(qtbot, settings, caplog)
    # the spec and the layout were written back at close; the files' keys wait for a file
    assert set(warned) <= {"files/recent", "files/lastFolder", "files/lastKernelFolder"}


@pytest.mark.parametrize("junk", PRIMITIVE_JUNK, ids=repr)
def test_junk_text_and_numbers_in_every_key_start_the_window(qtbot, tmp_path, caplog, junk) -> None:
    settings = QSettings(str(tmp_path / "junk.ini"), QSettings.Format.IniFormat)
    for key in KEYS:
        settings.setValue(key, junk)
    window, warned = _start(qtbot, settings, caplog)
    assert len(warned) == len(set(warned))
    assert window.model.spec.kernel.spec == DEFAULT_SPEC


def test_a_settings_file_written_by_hand_with_junk_starts_the_window(
    qtbot, tmp_path, caplog
) -> None:
    """The file as Qt reads it from the disk (a path no QSettings of this process has cached):
    @Point, @Variant of bytes that are no QVariant, @ByteArray of garbage, a number as the
    recent list, a line that is no key=value."""
    path = tmp_path / "hand.ini"
    path.write_bytes(
        b"[files]\nrecent=@Point(1 2)\nlastFolder=@Variant(\\0\\0\\0\\x7f\\0\\0\\0\\x3zz)\n"
        b"lastKernelFolder=3\n"
        b"[kernel]\nlast=@Rect(1 2 3 4)\n"
        b"[run]\nstrategy=@Size(3 4)\ntile=@Invalid()\nlinear=maybe\nconvolve=2\n"
        b"tolerance=@ByteArray(\\xff)\nborder=@Variant(\\0\\0\\0\\n\\0)\n"
        b"[window]\ngeometry=@ByteArray(\\0\\xffjunk)\nstate=hello\n"
        b"this is not a setting\n\xff\xfe\x00\n"
    )
    settings = QSettings(str(path), QSettings.Format.IniFormat)
    window, warned = _start(qtbot, settings, caplog)
    assert window.model.spec == FilterSpec.create(DEFAULT_SPEC)
    assert len(warned) == len(set(warned))
    for key in ("files/recent", "kernel/last", "run/strategy", "run/linear", "run/convolve",
                "window/geometry", "window/state"):  # fmt: skip
        assert key in warned


def test_a_recent_list_with_some_junk_keeps_its_paths(qtbot, tmp_path, caplog) -> None:
    from PySide6.QtCore import QPoint

    settings = QSettings(str(tmp_path / "r.ini"), QSettings.Format.IniFormat)
    settings.setValue("files/recent", ["/a.png", QPoint(1, 2), 7, "/b.png"])
    window, warned = _start(qtbot, settings, caplog)
    assert window.files.recent.paths() == ["/a.png", "/b.png"]
    assert warned == ["files/recent"]
    window.files.recent.refresh()  # read again: no second warning
    assert len([r for r in caplog.records if "files/recent" in r.getMessage()]) == 1
