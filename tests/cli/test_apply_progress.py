"""``blurapp apply`` shows a progress bar on a terminal when the filter runs over a second (issue
18: a long run was silent), and nothing with --quiet, off a terminal or on a quick run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.batch.progress import WorkProgress


def test_apply_in_tiles_draws_a_bar_and_erases_it(tmp_path: Path, on_a_tty) -> None:
    def _on_a_tty(*args: str, delay: str = "0") -> tuple[str, int]:
        return on_a_tty("apply", *args, env={"BLURAPP_PROGRESS_DELAY": delay})

    src = tmp_path / "in.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (200, 300, 3), np.uint8)).save(src)
    tiles = ("--kernel", "box:5", "--strategy", "cpu", "--max-tile-side", "64")  # 24 tiles
    shown, code = _on_a_tty(str(src), "-o", str(tmp_path / "a.png"), *tiles)
    assert code == 0
    assert "%  in.png" in shown and "[" in shown
    assert shown.endswith("\r\x1b[K")  # erased: the terminal is left clean
    quiet, code = _on_a_tty(str(src), "-o", str(tmp_path / "b.png"), *tiles, "--quiet")
    assert code == 0 and quiet == ""
    # The default delay: a run that ends within a second draws nothing (one whole-image run
    # reports (1, 1) only, so nothing at all).
    quick, code = _on_a_tty(str(src), "-o", str(tmp_path / "c.png"), "--kernel", "box:3",
                            delay="1")  # fmt: skip
    assert code == 0 and quick == ""
    a = np.asarray(Image.open(tmp_path / "a.png"))
    np.testing.assert_array_equal(a, np.asarray(Image.open(tmp_path / "b.png")))


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_the_bands_of_a_long_gpu_pass_report_progress(monkeypatch) -> None:
    """On an image that runs whole, a pass in bands reports (bands done, bands in all)."""
    from blurapp.core.filterspec import FilterSpec
    from blurapp.gpu.engine import GpuFilter
    from blurapp.pipeline import filter_pixels

    monkeypatch.setattr(GpuFilter, "BAND_MACS", 40_000)
    seen: list[tuple[int, int]] = []
    image = np.random.default_rng(0).integers(0, 256, (96, 64, 3), np.uint8)
    spec = FilterSpec.create("disk:radius=3", strategy="direct")
    out = filter_pixels(image, spec, progress=lambda d, n: seen.append((d, n)))
    assert len(seen) >= 4 and seen[-1] == (1, 1)
    bands = seen[:-1]
    assert [d for d, _ in bands] == list(range(1, len(bands) + 1))
    assert len({n for _, n in bands}) == 1 and bands[-1][0] < bands[-1][1]
    monkeypatch.setattr(GpuFilter, "BAND_MACS", None)
    np.testing.assert_array_equal(out.image, filter_pixels(image, spec).image)


def test_work_progress_line_and_delay() -> None:
    import io

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    bar = WorkProgress("x.tif", stream=out, delay=0.0, min_interval=0.0)
    bar.update(1, 4)
    assert "25 %  x.tif  ETA" in out.getvalue()
    done = Tty()
    WorkProgress("z", stream=done, delay=0.0).update(1, 1)  # finished before any bar
    assert done.getvalue() == ""
    bar.update(4, 4)
    assert "100 %" in bar.line()
    bar.close()
    assert out.getvalue().endswith("\r\x1b[K")
    silent = Tty()
    WorkProgress("y", stream=silent, delay=60.0).update(1, 2)
    assert silent.getvalue() == ""
