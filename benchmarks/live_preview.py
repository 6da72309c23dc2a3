"""How live the live preview is: the real window, driven offscreen as a user would drive it.

On a 12-megapixel photo (4000×3000, the bundled rocket.jpg upscaled) at fit zoom:

- ``one_step``: one sigma step (5.0 → 5.1) to an updated image of the new sigma;
- ``burst``: 20 sigma steps 100 ms apart; how many images were shown during the burst and how
  long after the last input the last step's image was shown;
- ``direct_to_auto``: strategy direct at sigma 5, back to auto 1.5 s later; how long until
  auto's image is shown;
- ``sample_new_sigma``: the 512×512 sample, a never-seen separable sigma to an updated image;

and through all of it the longest gap of a 10 ms heartbeat QTimer (a UI stall). "An updated
image" is the first picture of the new settings on screen: a reduced preview where the window
shows one (``preview_ready``), else the full result (``result_ready``); both are reported.
JSON goes to stdout or ``--json FILE``. Timings describe this machine; they are not asserted
anywhere::

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/live_preview.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import itertools

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
HEARTBEAT_MS = 10
WAIT_S = 180.0


class Clock:
    """A 10 ms heartbeat and the window's update signals, timestamped."""

    def __init__(self, app, window) -> None:
        from PySide6.QtCore import QTimer

        self.app, self.window = app, window
        self.ticks: list[float] = []
        self.updates: list[tuple[float, str, object]] = []  # (time, kind, spec)
        self.timer = QTimer()
        self.timer.setInterval(HEARTBEAT_MS)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))
        self.timer.start()
        window.result_ready.connect(lambda: self._update("result"))
        if hasattr(window, "preview_ready"):
            window.preview_ready.connect(lambda: self._update("preview"))

    def _update(self, kind: str) -> None:
        w = self.window
        spec = getattr(w, "shown_spec", None)
        if spec is None and w.result is not None:
            spec = w.result.spec
        self.updates.append((time.perf_counter(), kind, spec))

    def pump(self, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.app.processEvents()
            time.sleep(0.001)

    def wait_shown(self, since: float, want, timeout: float = WAIT_S, kind: str | None = None):
        """Pump events until an update after ``since`` shows a spec for which ``want(spec)``."""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            for t, k, spec in self.updates:
                if t >= since and spec is not None and want(spec) and (kind in (None, k)):
                    return t
            self.app.processEvents()
            time.sleep(0.001)
        return None

    def max_stall_ms(self, start: float, end: float) -> float:
        ticks = [t for t in self.ticks if start <= t <= end]
        if len(ticks) < 2:
            return float("nan")
        return round(max(b - a for a, b in itertools.pairwise(ticks)) * 1e3, 1)


def _ms(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((a - b) * 1e3, 1)


def make_photo(path: Path) -> Path:
    from PIL import Image

    im = Image.open(ROOT / "assets" / "samples" / "rocket.jpg").convert("RGB")
    im.resize((4000, 3000), Image.Resampling.BICUBIC).save(path, quality=92)
    return path


def sigma_of(spec) -> float | None:
    text = spec.kernel.spec
    if not text.startswith("gaussian:sigma="):
        return None
    try:
        return float(text.split("=", 1)[1].split(",")[0])
    except ValueError:
        return None


def run(photo: Path, size: tuple[int, int]) -> dict:
    from PySide6.QtCore import QSettings

    from blurapp.ui.app import make_app
    from blurapp.ui.main_window import MainWindow

    app = make_app()
    settings = QSettings(str(Path(tempfile.mkdtemp()) / "bench.ini"), QSettings.Format.IniFormat)
    window = MainWindow(settings)
    window.resize(*size)
    window.show()
    clock = Clock(app, window)
    designer = window.designer
    out: dict = {}

    def set_sigma(value: float) -> None:
        designer.sigma.setValue(value)

    # --- open the photo (the window opens it; then wait for its first full result)
    window.strategy_combo.setCurrentText("auto")
    set_sigma(5.0)
    clock.pump(0.3)
    t0 = time.perf_counter()
    window.open_path(photo)
    t_open = time.perf_counter()
    shown = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.0)
    done = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.0, kind="result")
    out["open"] = {
        "call_ms": _ms(t_open, t0),
        "first_image_ms": _ms(shown, t0),
        "full_result_ms": _ms(done, t0),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    clock.pump(1.0)
    view = window.compare.result_view
    out["fit_scale"] = round(view.scale_factor(), 4)

    # --- one step
    t0 = time.perf_counter()
    set_sigma(5.1)
    shown = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.1)
    done = clock.wait_shown(t0, lambda s: sigma_of(s) == 5.1, kind="result")
    out["one_step"] = {
        "updated_image_ms": _ms(shown, t0),
        "full_result_ms": _ms(done, t0),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    clock.pump(0.5)

    # --- a burst of 20 steps, 100 ms apart
    sigmas = [round(5.2 + 0.1 * i, 1) for i in range(20)]
    t0 = time.perf_counter()
    last_input = t0
    for s in sigmas:
        last_input = time.perf_counter()
        set_sigma(s)
        clock.pump(0.1)
    shown = clock.wait_shown(last_input, lambda s: sigma_of(s) == sigmas[-1])
    done = clock.wait_shown(last_input, lambda s: sigma_of(s) == sigmas[-1], kind="result")
    during = [u for u in clock.updates if t0 <= u[0] <= last_input]
    out["burst"] = {
        "steps": len(sigmas),
        "updates_during_burst": len(during),
        "last_shown_after_last_input_ms": _ms(shown, last_input),
        "last_full_result_after_last_input_ms": _ms(done, last_input),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    clock.pump(0.5)

    # --- direct, then back to auto after 1.5 s
    set_sigma(5.0)
    clock.wait_shown(time.perf_counter() - 0.01, lambda s: sigma_of(s) == 5.0)
    t0 = time.perf_counter()
    window.strategy_combo.setCurrentText("direct")
    clock.pump(1.5)
    t_switch = time.perf_counter()
    window.strategy_combo.setCurrentText("auto")
    shown = clock.wait_shown(
        t_switch, lambda s: s.strategy == "auto" and sigma_of(s) == 5.0, timeout=WAIT_S
    )
    out["direct_to_auto"] = {
        "auto_shown_after_switch_ms": _ms(shown, t_switch),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    clock.pump(0.5)

    # --- the 512×512 sample, a never-seen separable sigma
    from PIL import Image

    sample = np.asarray(Image.open(ROOT / "assets" / "samples" / "astronaut.png").convert("RGB"))
    t0 = time.perf_counter()
    window.set_image(sample)
    clock.wait_shown(t0, lambda s: sigma_of(s) == 5.0, kind="result")
    clock.pump(0.5)
    t0 = time.perf_counter()
    set_sigma(3.37)
    shown = clock.wait_shown(t0, lambda s: sigma_of(s) == 3.37)
    done = clock.wait_shown(t0, lambda s: sigma_of(s) == 3.37, kind="result")
    out["sample_new_sigma"] = {
        "updated_image_ms": _ms(shown, t0),
        "full_result_ms": _ms(done, t0),
        "max_stall_ms": clock.max_stall_ms(t0, time.perf_counter()),
    }
    out["max_stall_ms_overall"] = clock.max_stall_ms(clock.ticks[0], clock.ticks[-1])
    window.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures here (else stdout)")
    parser.add_argument("--photo", type=Path, help="a photo to use instead of the 12 MP one")
    parser.add_argument("--size", default="1600x1000", help="window size WxH (1600x1000)")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    photo = args.photo or make_photo(Path(tempfile.mkdtemp()) / "photo12mp.jpg")
    figures = {
        "machine": f"{platform.machine()} · {os.cpu_count()} CPUs · {platform.python_version()}",
        "window": [width, height],
        "photo": str(photo),
        **run(photo, (width, height)),
    }
    text = json.dumps(figures, indent=2)
    if args.json:
        args.json.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
