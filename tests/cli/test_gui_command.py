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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="display servers are Linux's")
def test_a_display_nobody_answers_is_one_line_not_a_core_dump() -> None:
    # DISPLAY=:99 with no X server there: Qt's xcb platform would abort (SIGABRT, core dump).
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    env["DISPLAY"] = ":93"
    if os.path.exists("/tmp/.X11-unix/X93"):
        pytest.skip("an X server listens on :93 here")
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "cannot open the display ':93'" in lines[0]
