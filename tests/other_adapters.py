"""The GPU tests (tests/gpu) and blurapp.ndimage's (tests/ndimage: scipy's own test_filters.py
among them; tests/dask) again on every other WebGPU adapter the machine lists, each in a
pytest process of its own (``BLURAPP_ADAPTER`` takes the adapter's index): ``make
test-adapters``, which CI runs after ``make test``.

Here that is llvmpipe through wgpu's OpenGL backend beside lavapipe through Vulkan: another
shader compiler (GLSL, not SPIR-V), another queue (the work runs inside the submission), no
64-bit integers and no subgroups. The OpenGL backend found a wrong border addressing (WGSL's
``%`` of a negative number, undefined in GLSL) that every test on Vulkan passed, and the baked
and buffer variants of the separable passes differing by an ulp (a compiler that contracts
a * b + c); test_every_adapter.py is left out (the main run already takes every adapter).

    .venv/bin/python tests/other_adapters.py [pytest arguments]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from blurapp.gpu.device import ADAPTER_ENV, get_device, list_adapters

ROOT = Path(__file__).resolve().parents[1]
SUITES = ("tests/gpu", "tests/ndimage", "tests/dask")


def _identity(info: dict[str, str]) -> tuple[str, str, str]:
    return info["name"], info["backend"], info["driver"]


def main(argv: list[str]) -> int:
    default = _identity(get_device().info)
    others: dict[tuple[str, str, str], int] = {}
    for index, info in enumerate(list_adapters()):
        if _identity(info) != default:
            others.setdefault(_identity(info), index)  # wgpu may list one adapter twice
    if not others:
        print(f"{' '.join(SUITES)} on other adapters: none besides {' '.join(default)}")
        return 0
    failed = []
    for (name, backend, _), index in others.items():
        print(f"{' '.join(SUITES)} on adapter {index}: {name} via {backend}", flush=True)
        command = [sys.executable, "-m", "pytest", "-q", *SUITES,
                   "--ignore=tests/gpu/test_every_adapter.py", *argv]  # fmt: skip
        env = dict(os.environ, **{ADAPTER_ENV: str(index)})
        if subprocess.run(command, cwd=ROOT, env=env).returncode != 0:
            failed.append(f"{name} via {backend}")
    if failed:
        print(f"{' '.join(SUITES)} failed on: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
