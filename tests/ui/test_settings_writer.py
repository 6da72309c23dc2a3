"""The window's settings are written on a thread of their own (blurapp.ui.settings_writer):
QSettings' own write waits for two fdatasyncs on the thread that changed a value, which was
the UI thread after every spec edit (issue 24, item 6)."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QSettings

from blurapp.ui.settings_writer import BackgroundSettings, _Thread


def _on_disk(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_a_change_reads_back_at_once_and_reaches_the_file_from_the_writer_thread(
    qtbot, tmp_path
) -> None:
    path = tmp_path / "s.ini"
    store = BackgroundSettings(QSettings(str(path), QSettings.Format.IniFormat), delay_ms=20)
    # made with the settings, not at the first write: a thread started later on the UI thread
    # can wait for the dynamic loader while a worker loads the Vulkan driver
    assert _Thread.thread is not None and _Thread.thread.isRunning()
    writers: list[int] = []
    store.setValue("kernel/last", "gaussian:sigma=7")
    store.setValue("files/recent", ["/a.png", "/b.png"])
    assert store.value("kernel/last") == "gaussian:sigma=7"  # before any write
    assert store.value("files/recent") == ["/a.png", "/b.png"]
    assert _on_disk(path) == ""
    writer = _Thread.writer_object()
    record = writer.written.connect(lambda *_: writers.append(threading.get_ident()), _direct())
    try:
        qtbot.waitUntil(lambda: "sigma=7" in _on_disk(path), timeout=10000)
        qtbot.waitUntil(lambda: bool(writers), timeout=10000)
    finally:
        writer.written.disconnect(record)
    assert threading.main_thread().ident not in writers, "written on the UI thread"
    assert "/b.png" in _on_disk(path)
    # what another QSettings on the file reads
    assert QSettings(str(path), QSettings.Format.IniFormat).value("kernel/last") == (
        "gaussian:sigma=7"
    )
    qtbot.waitUntil(lambda: not store._in_flight, timeout=10000)
    assert store.value("kernel/last") == "gaussian:sigma=7"  # now read from the QSettings


def _direct():
    from PySide6.QtCore import Qt

    return Qt.ConnectionType.DirectConnection


def test_a_burst_of_changes_is_one_write_of_the_last_values(qtbot, tmp_path) -> None:
    path = tmp_path / "s.ini"
    store = BackgroundSettings(QSettings(str(path), QSettings.Format.IniFormat), delay_ms=200)
    handed: list[dict] = []
    writer = _Thread.writer_object()
    record = writer.apply.connect(lambda _n, _f, _t, items: handed.append(dict(items)), _direct())
    try:
        for sigma in range(1, 30):
            store.setValue("kernel/last", f"gaussian:sigma={sigma}")
        qtbot.waitUntil(lambda: "sigma=29" in _on_disk(path), timeout=10000)
    finally:
        writer.apply.disconnect(record)
    mine = [h for h in handed if "kernel/last" in h]
    assert mine == [{"kernel/last": "gaussian:sigma=29"}]


def test_sync_writes_everything_before_it_returns(tmp_path) -> None:
    path = tmp_path / "s.ini"
    QSettings(str(path), QSettings.Format.IniFormat).setValue("old/key", "x")
    store = BackgroundSettings(QSettings(str(path), QSettings.Format.IniFormat))
    store.setValue("run/strategy", "tiled")
    store.remove("old/key")
    assert store.value("old/key", "gone") == "gone"
    store.sync()
    text = _on_disk(path)
    assert "strategy=tiled" in text and "old" not in text
    assert not store._pending and not store._in_flight


def test_a_file_that_cannot_be_written_warns_once_and_changes_still_read_back(
    qtbot, tmp_path, caplog
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    path = tmp_path / "a-file" / "s.ini"  # its folder is a file: nobody can write it, root neither
    store = BackgroundSettings(QSettings(str(path), QSettings.Format.IniFormat), delay_ms=10)
    for border in ("wrap", "reflect", "clamp"):
        store.setValue("run/border", border)
        qtbot.waitUntil(lambda: not store._pending, timeout=10000)
    qtbot.waitUntil(lambda: not store._in_flight, timeout=10000)
    assert store.status() == QSettings.Status.AccessError
    warned = [r for r in caplog.records if "settings not saved" in r.getMessage()]
    assert len(warned) == 1, "one warning, not one per write"
    assert str(path) in warned[0].getMessage()
    assert store.value("run/border") == "clamp"  # the session keeps what it was told


def test_the_window_writes_its_spec_off_the_ui_thread_and_all_of_it_at_close(
    qtbot, settings
) -> None:
    from blurapp.ui.main_window import MainWindow

    path = Path(settings.fileName())
    window = MainWindow(settings, probe_adapter=False)
    qtbot.addWidget(window)
    assert isinstance(window.settings, BackgroundSettings)
    window.model.update(strategy="cpu")
    window.designer.sigma.setValue(4.5)
    qtbot.waitUntil(lambda: "sigma=4.5" in _on_disk(path), timeout=20000)
    window.designer.sigma.setValue(5.5)
    window.close()  # at once: the close writes what is pending
    assert "sigma=5.5" in _on_disk(path)
    assert QSettings(str(path), QSettings.Format.IniFormat).value("run/strategy") == "cpu"
