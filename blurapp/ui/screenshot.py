"""Take the README's pictures of the real window: docs/screenshot.png (the main window) and
docs/compare.png (the border-modes view), on the bundled sample; or the window at a screen's
size, scale and theme (docs/screenshots/).

Run it under a display server; with no screen, under Xvfb::

    xvfb-run -a -s "-screen 0 1600x1000x24" python -m blurapp.ui.screenshot --out docs
    xvfb-run -a -s "-screen 0 2560x1440x24" env QT_SCALE_FACTOR=2 \
        python -m blurapp.ui.screenshot --out docs/screenshots --size screen --theme dark \
        --name 2560x1440-200-dark --main-only
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


def take_screenshots(
    out: Path,
    *,
    spec: str = "gaussian:sigma=3",
    size: tuple[int, int] | None = (1500, 940),
    theme: str = "light",
    names: tuple[str, str] = ("screenshot", "compare"),
    main_only: bool = False,
) -> list[Path]:
    """Open the sample, run every strategy and the border view, and save the two pictures.

    Arguments:
        out: the folder for the pictures (created if needed).
        spec: the kernel shown.
        size: the window size in (logical) pixels; ``None``: the whole available screen.
        theme: ``light``, ``dark`` or ``auto`` (see :mod:`blurapp.ui.theme`).
        names: the two pictures' file names, without ``.png``.
        main_only: only the main window (with the split view), not the border modes.

    Returns:
        The paths written.
    """
    from blurapp.ui.app import make_app
    from blurapp.ui.theme import apply_theme

    app = make_app()
    apply_theme(app, theme)
    from blurapp.ui.compare import BORDERS_TAB, SPLIT_TAB, STRATEGIES_TAB
    from blurapp.ui.main_window import MainWindow

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # Private settings: the pictures must not depend on the user's last kernel or layout.
        settings = QSettings(str(Path(tmp) / "blurapp.ini"), QSettings.Format.IniFormat)
        settings.setValue("kernel/last", spec)
        window = MainWindow(settings)
        if size is None:
            screen = app.primaryScreen().availableGeometry()
            window.setGeometry(screen)
        else:
            window.resize(*size)
        window.show()
        wait_for(window.adapter_ready)
        wait_for(window.result_ready, window.open_sample)
        wait_for(window.strategies_ready, lambda: window.compare.setCurrentIndex(STRATEGIES_TAB))
        # Run the live result again: the first run pays for compiling the pipelines, and the
        # picture should show the time a user sees while adjusting the kernel.
        wait_for(window.result_ready, lambda: window.schedule_live())
        window.compare.setCurrentIndex(SPLIT_TAB)
        window.compare.split_view.fit()
        settle()
        written = [out / f"{names[0]}.png", out / f"{names[1]}.png"]
        window.grab().save(str(written[0]))
        if main_only:
            written = written[:1]
        else:
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
    parser.add_argument(
        "--size",
        default="1500x940",
        help="window size WxH in logical pixels, or 'screen' for the whole screen",
    )
    parser.add_argument("--theme", choices=("light", "dark", "auto"), default="light")
    parser.add_argument(
        "--name",
        default=None,
        help="file name stem: NAME.png (and NAME-compare.png) instead of screenshot/compare",
    )
    parser.add_argument("--main-only", action="store_true", help="only the main window")
    args = parser.parse_args(argv)
    if args.size == "screen":
        size = None
    else:
        try:
            w, h = (int(v) for v in args.size.lower().split("x"))
        except ValueError:
            parser.error(f"--size {args.size!r}: expected WxH, e.g. 1366x768, or 'screen'")
        size = (w, h)
    names = (args.name, f"{args.name}-compare") if args.name else ("screenshot", "compare")
    paths = take_screenshots(
        args.out,
        spec=args.kernel,
        size=size,
        theme=args.theme,
        names=names,
        main_only=args.main_only,
    )
    for path in paths:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
