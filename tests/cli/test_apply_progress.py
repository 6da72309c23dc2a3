"""``blurapp apply`` shows a progress bar on a terminal when the filter runs over a second (issue
18: a long run was silent), and nothing with --quiet, off a terminal or on a quick run."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.batch.progress import WorkProgress


def _on_a_tty(*args: str) -> tuple[str, int]:
    primary, secondary = pty.openpty()
    with subprocess.Popen(
        [sys.executable, "-m", "blurapp", "apply", *args], stdout=secondary,
        stderr=subprocess.PIPE,
    ) as p:  # fmt: skip
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = p.wait(timeout=120)
    os.close(primary)
    return b"".join(chunks).decode(), code


@pytest.mark.gpu
@pytest.mark.usefixtures("gpu")
def test_a_long_apply_draws_a_bar_and_erases_it(tmp_path: Path) -> None:
    src = tmp_path / "in.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (384, 384, 3), np.uint8)).save(src)
    # A 51x51 disk run direct: about 4e8 multiply-adds, two bands of about a second on lavapipe.
    long = ("--kernel", "disk:radius=25", "--strategy", "direct")
    shown, code = _on_a_tty(str(src), "-o", str(tmp_path / "a.png"), *long)
    assert code == 0
    assert "%  in.png" in shown and "[" in shown
    assert shown.endswith("\r\x1b[K")  # erased: the terminal is left clean
    quiet, code = _on_a_tty(str(src), "-o", str(tmp_path / "b.png"), *long, "--quiet")
    assert code == 0 and quiet == ""
    quick, code = _on_a_tty(str(src), "-o", str(tmp_path / "c.png"), "--kernel", "box:3")
    assert code == 0 and quick == ""
    a = np.asarray(Image.open(tmp_path / "a.png"))
    np.testing.assert_array_equal(a, np.asarray(Image.open(tmp_path / "b.png")))


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
