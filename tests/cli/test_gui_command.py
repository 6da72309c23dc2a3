"""`blurapp` with no screen: one clear line and exit 1, not Qt's abort."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="display servers are Linux's")
def test_no_screen_is_one_line() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "no screen" in lines[0] and "blurapp apply" in lines[0]
