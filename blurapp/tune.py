"""``blurapp tune``: calibrate the planner's cost table on this adapter, with a progress bar,
save it in the user's cache and print it (:mod:`blurapp.gpu.calibration`)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from blurapp.batch.progress import _Bar


class _TuneBar(_Bar):
    """``tune  12/31  separable 1024×1024 gaussian:sigma=7  0:04``"""

    def __init__(self) -> None:
        super().__init__(sys.stderr, None, 0.1)
        self.done, self.total, self.what = 0, 0, ""

    def line(self, now: float | None = None) -> str:
        now = time.perf_counter() if now is None else now
        width = 24
        filled = width * self.done // max(self.total, 1)
        bar = "#" * filled + "-" * (width - filled)
        seconds = int(now - self.start)
        clock = f"{seconds // 60}:{seconds % 60:02d}"
        return f"tune [{bar}] {self.done}/{self.total}  {self.what}  {clock}"

    def update(self, done: int, total: int, what: str) -> None:
        with self._lock:
            self.done, self.total, self.what = done, total, what
            now = time.perf_counter()
            if now - self._last >= self.min_interval or done == total:
                self._last = now
                self._draw(now)

    def close(self) -> None:
        if self._drawn:
            self._erase()


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--quick",
        action="store_true",
        help="the quick calibration auto starts by itself (smaller runs, about 10 s)",
    )
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument(
        "--dry-run", action="store_true", help="calibrate and print, but keep the cached table"
    )


def run_tune(args: argparse.Namespace) -> int:
    from blurapp.core import planner
    from blurapp.gpu import calibration, ndtune
    from blurapp.gpu.device import get_device

    ctx = get_device()
    bar = _TuneBar()
    try:
        cal = calibration.calibrate(
            ctx,
            quick=args.quick,
            budget_s=calibration.QUICK_BUDGET_S if args.quick else None,
            progress=bar.update,
        )
    finally:
        bar.close()
    saved = None if args.dry_run else calibration.save_table(cal)
    # blurapp.ndimage's own choice on a software adapter (texture or storage reads).
    nd = ndtune.tune(ctx, save=not args.dry_run)
    if args.json:
        print(json.dumps(
            {**cal.to_json(), "path": str(saved) if saved else None, "ndimage": nd}, indent=2
        ))  # fmt: skip
        return 0
    print(calibration.format_table(cal))
    if saved is not None:
        planner.use_table(cal.table())
        print(f"saved to {saved}: auto uses it on this adapter from now on")
    if nd is not None:
        print(f"ndimage: {ndtune.sentence(nd)}")
    return 0
