"""Take the README's pictures of the real window: docs/screenshot.png (the main window) and
docs/compare.png (the border-modes view), on the bundled sample.

Run it under a display server; with no screen, under Xvfb::

    xvfb-run -a -s "-screen 0 1600x1000x24" python -m blurapp.ui.screenshot --out docs
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QEventLoop, QSettings, QTimer, SignalInstance

TIMEOUT_MS = 300_000  # lavapipe runs every strategy on the CPU: allow minutes, not seconds


def wait_for(signal: SignalInstance, start=None, timeout_ms: int = TIMEOUT_MS) -> bool:
    """Run the event loop until ``signal`` fires (after calling ``start``) or the timeout."""
    loop = QEventLoop()
    fired: list[bool] = []

    def done(*_args: object) -> None:
        fired.append(True)
        loop.quit()

    signal.connect(done)
    QTimer.singleShot(timeout_ms, loop.quit)
    if start is not None:
        start()
    if not fired:
        loop.exec()
    signal.disconnect(done)
    return bool(fired)


def settle(ms: int = 300) -> None:
    """Let pending paints and layouts happen."""
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def take_screenshots(out: Path, *, spec: str = "gaussian:sigma=3", size=(1500, 940)) -> list[Path]:
    """Open the sample, run every strategy and the border view, and save the two pictures.

    Arguments:
        out: the folder for screenshot.png and compare.png (created if needed).
        spec: the kernel shown.
        size: the window size in pixels.

    Returns:
        The paths written.
    """
    from blurapp.ui.app import make_app

    app = make_app()
    from blurapp.ui.compare import BORDERS_TAB, SPLIT_TAB, STRATEGIES_TAB
    from blurapp.ui.main_window import MainWindow

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # Private settings: the pictures must not depend on the user's last kernel or layout.
        settings = QSettings(str(Path(tmp) / "blurapp.ini"), QSettings.Format.IniFormat)
        settings.setValue("kernel/last", spec)
        window = MainWindow(settings)
        window.resize(*size)
        window.show()
        wait_for(window.adapter_ready)
        wait_for(window.result_ready, window.open_sample)
        wait_for(window.strategies_ready, lambda: window.compare.setCurrentIndex(STRATEGIES_TAB))
        # Run the live result again: the first run pays for compiling the pipelines, and the
        # picture should show the time a user sees while adjusting the kernel.
        wait_for(window.result_ready, lambda: window.schedule_live(0))
        window.compare.setCurrentIndex(SPLIT_TAB)
        window.compare.split_view.fit()
        settle()
        written = [out / "screenshot.png", out / "compare.png"]
        window.grab().save(str(written[0]))
        wait_for(window.borders_ready, lambda: window.compare.setCurrentIndex(BORDERS_TAB))
        settle()
        window.grab().save(str(written[1]))
        window.close()
        app.processEvents()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs"), help="output folder")
    parser.add_argument("--kernel", default="gaussian:sigma=3", help="kernel spec to show")
    args = parser.parse_args(argv)
    for path in take_screenshots(args.out, spec=args.kernel):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
