"""Issue 25's promises: SIGHUP (the terminal closed) stops a command as SIGTERM and Ctrl-C do,
with nothing half-written left and exit 130; an adapter error (none, or a ``BLURAPP_ADAPTER``
that matches nothing) is exit 2, before any work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.cli import STOP_SIGNALS, main
from blurapp.core.errors import GpuUnavailableError
from blurapp.io import TEMP_SUFFIX


def leftovers(folder: Path, pattern: str = f"*{TEMP_SUFFIX}") -> list[str]:
    return [p.name for p in folder.rglob(pattern)]


def test_sighup_while_apply_writes_leaves_no_temporary(tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    pixels = np.random.default_rng(1).integers(0, 256, (1000, 1400, 3), np.uint8)
    Image.fromarray(pixels).save(big, compress_level=1)
    out = tmp_path / "o.png"
    proc = subprocess.Popen(
        [sys.executable, "-m", "blurapp", "apply", big, "-o", out, "-k", "box:3",
         "--strategy", "cpu", "--compress-level", "9"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    writing = f".o.png.*{TEMP_SUFFIX}"
    while not leftovers(tmp_path, writing) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert leftovers(tmp_path, writing), "the temporary file never appeared"
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip() == "blurapp: interrupted"
    assert not leftovers(tmp_path) and not out.exists()


def test_sighup_mid_batch_leaves_no_part_file(tmp_path: Path) -> None:
    """The issue's case: the terminal closed mid-batch left a temporary ('.part') file."""
    src = tmp_path / "in"
    src.mkdir()
    rng = np.random.default_rng(2)
    for i in range(6):
        Image.fromarray(rng.integers(0, 256, (700, 900, 3), np.uint8)).save(
            src / f"p{i}.png", compress_level=1
        )
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "blurapp", "batch", src, "-o", out, "-k", "box:3",
         "--strategy", "cpu", "--compress-level", "9", "--quiet", "-j", "2"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not leftovers(tmp_path) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    assert proc.poll() is None, "the batch ended before it could be hung up"
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not leftovers(tmp_path)
    # What was published is whole: every output there reads back at full size.
    for done in out.glob("*.png"):
        assert Image.open(done).size == (900, 700)


def test_sighup_is_an_interrupt_in_process_and_the_handler_is_restored(
    capsys, tmp_path, monkeypatch
) -> None:
    import blurapp.batch.commands as commands

    png = tmp_path / "in.png"
    Image.fromarray(np.zeros((5, 7, 3), np.uint8)).save(png)

    def hung_up(*args: object, **kwargs: object) -> None:
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)  # the handler raises first
        raise AssertionError("SIGHUP did not interrupt")

    monkeypatch.setattr(commands, "process_file", hung_up)
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    assert signal.SIGHUP in before and signal.SIGTERM in before
    capsys.readouterr()
    code = main(["apply", str(png), "-o", str(tmp_path / "o.png"), "-k", "box:3"])
    assert code == 130
    assert capsys.readouterr().err.strip() == "blurapp: interrupted"
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == before
    assert not (tmp_path / "o.png").exists()


# ------------------------------------------------------------------ adapter errors: exit 2


@pytest.mark.parametrize("command", ["apply", "batch"])
def test_adapter_name_matching_nothing_is_exit_2_before_any_work(
    tmp_path: Path, command: str
) -> None:
    png = tmp_path / "in.png"
    Image.fromarray(np.zeros((5, 7, 3), np.uint8)).save(png)
    out = tmp_path / ("o.png" if command == "apply" else "out")
    env = dict(os.environ, BLURAPP_ADAPTER="no-such-adapter-anywhere")
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp", command, png, "-o", out, "-k", "box:3"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no-such-adapter-anywhere" in lines[0], proc.stderr
    assert lines[0].startswith("blurapp: error: ")
    assert not out.exists() and not leftovers(tmp_path)


@pytest.mark.parametrize("command", ["apply", "batch"])
def test_no_adapter_is_exit_2_before_the_input_is_read(
    capsys, tmp_path: Path, monkeypatch, command: str
) -> None:
    import blurapp.batch.commands as commands
    import blurapp.gpu.device as device

    def no_adapter() -> None:
        raise GpuUnavailableError(device.NO_ADAPTER_MESSAGE)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started without an adapter")

    monkeypatch.setattr(device, "get_device", no_adapter)
    monkeypatch.setattr(commands, "process_file", never)
    png = tmp_path / "in.png"
    Image.fromarray(np.zeros((5, 7, 3), np.uint8)).save(png)
    out = tmp_path / ("o.png" if command == "apply" else "out")
    capsys.readouterr()
    code = main([command, str(png), "-o", str(out), "-k", "box:3", "--strategy", "separable"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.strip().startswith("blurapp: error: no WebGPU adapter found"), err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_apply_and_batch_make_their_device_while_they_import(monkeypatch) -> None:
    """The device (0.18 s of wgpu-native and the driver, the GIL free) is made on a thread
    while the parser's and the command's modules import; not for --help or --strategy cpu."""
    import threading

    import blurapp.cli as cli
    from blurapp.gpu import device

    made: list[str] = []
    monkeypatch.setattr(device, "get_device", lambda: made.append(threading.current_thread().name))
    for argv in (["batch", "a.png", "-o", "out"], ["apply", "a.png", "-o", "b.png"]):
        thread = cli._prefetch_device(argv)
        assert thread is not None
        thread.join(10)
    assert made == ["blurapp-device", "blurapp-device"]
    for argv in (
        ["batch", "--help"],
        ["apply", "a.png", "-o", "b.png", "-h"],
        ["apply", "a.png", "-o", "b.png", "--strategy", "cpu"],
        ["batch", "a.png", "-o", "out", "--strategy=cpu"],
        ["kernel", "gaussian:sigma=2"],
        ["info"],
    ):
        assert cli._prefetch_device(argv) is None, argv
    assert len(made) == 2


def test_a_failed_prefetch_is_said_by_the_command_itself(monkeypatch, capsys, tmp_path) -> None:
    """The thread's failure is not kept: the command's own call tries again, exit 2, one line."""
    from blurapp.gpu import device

    calls = []

    def no_adapter():
        calls.append(1)
        raise GpuUnavailableError("no WebGPU adapter (a test)")

    monkeypatch.setattr(device, "get_device", no_adapter)
    png = tmp_path / "a.png"
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(png)
    code = main(["batch", str(png), "-o", str(tmp_path / "out"), "-k", "box:3",
                 "--strategy", "direct"])  # fmt: skip
    assert code == 2 and len(calls) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["blurapp: error: no WebGPU adapter (a test)"]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_usage_error_waits_for_the_prefetch_and_exits_2(tmp_path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "blurapp", "batch", "x.png", "-o", str(tmp_path), "--bogus"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 2
    assert run.stderr.startswith("blurapp batch: error: ") and len(run.stderr.splitlines()) == 1
