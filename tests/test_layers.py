"""The layering of DESIGN.md: core imports neither Qt nor wgpu; gpu, batch and conv import no Qt;
nothing touches the GPU at import time."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CHECK = textwrap.dedent(
    """
    import importlib, pkgutil, sys
    blocked = {blocked!r}
    for name in blocked:
        sys.modules[name] = None  # any import of it now raises ImportError
    import {package} as pkg
    names = [pkg.__name__] + [
        m.name for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
    ]
    for name in names:
        importlib.import_module(name)
    print(len(names))
    """
)


@pytest.mark.parametrize(
    ("package", "blocked"),
    [
        ("blurapp.core", ["PySide6", "wgpu", "scipy"]),
        ("blurapp.gpu", ["PySide6"]),
        ("blurapp.batch", ["PySide6"]),
        ("blurapp.conv", ["PySide6"]),
    ],
)
def test_package_imports_without(package: str, blocked: list[str]) -> None:
    code = CHECK.format(blocked=blocked, package=package)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout.strip()) >= 1


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
