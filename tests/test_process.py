"""blurapp.process: the process-wide set-up happens at the entry points, and only there."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile

import pytest

from blurapp.process import NO_CFFI_SPEEDUP_ENV, ensure_runtime_dir

# Runs an entry point in a fresh interpreter, then reports what it changed in the process.
_PROBE = """
import json, os, sys
from cffi import cparser
before_env, before_parse = dict(os.environ), cparser.Parser._parse
{call}
from blurapp.gpu import cffi_speedup
print(json.dumps({{
    "installed": cffi_speedup.installed(),
    "parse_replaced": cparser.Parser._parse is not before_parse,
    "runtime_dir": os.environ.get("XDG_RUNTIME_DIR"),
    "env_changed": sorted(set(os.environ.items()) ^ set(before_env.items())),
}}))
"""


def _probe(call: str, **env_changes: str | None) -> dict[str, object]:
    env = dict(os.environ)
    env.pop("XDG_RUNTIME_DIR", None)
    env.pop(NO_CFFI_SPEEDUP_ENV, None)
    env.update({k: v for k, v in env_changes.items() if v is not None})
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(call=call)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


CLI_KERNEL = "from blurapp.cli import main; main(['kernel', 'box:3', '--no-plan'])"


def test_the_command_line_installs_the_speedup_and_a_runtime_dir() -> None:
    seen = _probe(CLI_KERNEL)
    assert seen["installed"] is True and seen["parse_replaced"] is True
    assert seen["runtime_dir"] and os.path.isdir(str(seen["runtime_dir"]))
    assert [k for k, _ in seen["env_changed"]] == ["XDG_RUNTIME_DIR"]  # nothing else


def test_the_opt_out_keeps_cffis_own_parse() -> None:
    seen = _probe(CLI_KERNEL, **{NO_CFFI_SPEEDUP_ENV: "1"})
    assert seen["installed"] is False and seen["parse_replaced"] is False
    assert seen["runtime_dir"]  # the rest of the set-up still happens
    assert _probe(CLI_KERNEL, **{NO_CFFI_SPEEDUP_ENV: "0"})["installed"] is True


def test_a_usable_runtime_dir_is_left_as_it_is(tmp_path) -> None:
    seen = _probe(CLI_KERNEL, XDG_RUNTIME_DIR=str(tmp_path))
    assert seen["runtime_dir"] == str(tmp_path) and seen["env_changed"] == []


def test_importing_blurapp_changes_nothing() -> None:
    seen = _probe("import blurapp, blurapp.cli, blurapp.gpu.device, blurapp.gpu.engine")
    assert seen == {"installed": False, "parse_replaced": False, "runtime_dir": None,
                    "env_changed": []}  # fmt: skip


def test_starting_the_gui_without_the_command_line_prepares_the_process() -> None:
    """python -m blurapp.ui.screenshot creates its QApplication through make_app directly."""
    seen = _probe("from blurapp.ui.app import make_app; make_app()", QT_QPA_PLATFORM="offscreen")
    assert seen["installed"] is True and seen["runtime_dir"]


def test_runtime_dir_is_kept_when_usable(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert ensure_runtime_dir() == str(tmp_path)


@pytest.mark.parametrize("value", [None, "", "/nonexistent/blurapp-runtime"])
def test_private_runtime_dir_when_missing_or_invalid(value, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    if value is None:
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    else:
        monkeypatch.setenv("XDG_RUNTIME_DIR", value)
    path = ensure_runtime_dir()
    assert os.environ["XDG_RUNTIME_DIR"] == path
    assert path == str(tmp_path / f"blurapp-runtime-{os.getuid()}")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    # A folder of that name that others may write to is not used.
    os.chmod(path, 0o777)
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    other = ensure_runtime_dir()
    assert other != path and other.startswith(str(tmp_path / "blurapp-runtime-"))
    assert stat.S_IMODE(os.stat(other).st_mode) == 0o700
