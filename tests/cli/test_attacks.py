"""Issue 18's attacks through the command line, as a careless or hostile user would make them:
each ends in one line on stderr and the right exit code (2 usage, 1 failure), no traceback,
nothing overwritten, no leftovers (DESIGN.md "Contracts"; docs/RELIABILITY.md lists them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.cli import main


def run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """``blurapp ARGS`` in this process: (exit code, stderr), stderr checked to be one line."""
    capsys.readouterr()
    code = main([str(a) for a in args])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    if code:
        lines = err.strip().splitlines()
        assert len(lines) == 1, err
        assert lines[0].startswith("blurapp: error: "), err
    return code, err


def subprocess_run(*args: str | Path, env: dict[str, str] | None = None, timeout: float = 60):
    """``blurapp ARGS`` as its own process (for what only a process shows: hangs, aborts)."""
    return subprocess.run(
        [sys.executable, "-m", "blurapp", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def png(tmp_path: Path) -> Path:
    path = tmp_path / "in.png"
    pixels = np.random.default_rng(0).integers(0, 256, (12, 16, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path


# ------------------------------------------------------------------ numbers float32 cannot hold


@pytest.mark.parametrize(
    "options",
    [
        ("--kernel", "matrix:1x1:1e39"),
        ("--kernel", "matrix:3x1:0,4e38,0"),
        ("--kernel", "matrix:1x1:1e300", "--strategy", "separable"),
        ("--kernel", "box:3", "--border", "constant=1e300"),
    ],
)
def test_numbers_beyond_float32_are_usage_errors(capsys, png, tmp_path, options) -> None:
    out = tmp_path / "out.png"
    code, err = run(capsys, "apply", png, "-o", out, *options)
    assert code == 2 and "float32" in err
    assert not out.exists()
