"""The layering of DESIGN.md: the import-linter contracts of pyproject.toml hold (core imports
no image codec, wgpu or Qt; gpu, batch, conv and io no Qt), function-level imports included; and
nothing touches the GPU at import time."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` (the [test] extra installs it) on the blurapp package found in ``cwd``."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which(
        "lint-imports"
    )
    if exe is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[test]' (import-linter)")
    return subprocess.run(
        [exe, "--no-cache", "--config", str(cwd / "pyproject.toml")],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_import_contracts_hold() -> None:
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize(
    ("module", "code", "needle"),
    [
        ("core", "from PIL import Image", "blurapp.core._probe -> PIL"),
        ("core", "import blurapp.engine", "blurapp.core._probe -> blurapp.engine"),
        ("batch", "from PySide6 import QtCore", "blurapp.batch._probe -> PySide6"),
        ("io", "import wgpu", "blurapp.io._probe -> wgpu"),
    ],
)
def test_contracts_see_function_level_imports(
    tmp_path: Path, module: str, code: str, needle: str
) -> None:
    """A lazy import inside a function breaks a contract as a top-level one would (the old check
    imported each module with the forbidden packages blocked, which never ran such code)."""
    shutil.copytree(ROOT / "blurapp", tmp_path / "blurapp", ignore=shutil.ignore_patterns("*.pyc"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    probe = f"def lazily():\n    {code}\n"
    (tmp_path / "blurapp" / module / "_probe.py").write_text(probe)
    proc = _lint_imports(tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert needle in proc.stdout, proc.stdout


def test_import_and_help_create_no_gpu_device() -> None:
    code = textwrap.dedent(
        """
        import sys, wgpu
        calls = []
        wgpu.gpu.request_adapter_sync = lambda *a, **k: calls.append(1)
        wgpu.gpu.enumerate_adapters_sync = lambda *a, **k: calls.append(1) or []
        import blurapp, blurapp.engine, blurapp.cli, blurapp.gpu.engine, blurapp.gpu.device
        try:
            blurapp.cli.main(["--help"])
        except SystemExit:
            pass
        blurapp.cli.main(["kernel", "box:3", "--no-plan"])
        assert not calls, "an adapter was requested at import or by --help"
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
