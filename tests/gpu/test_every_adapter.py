"""Every WebGPU adapter on the machine, not only the one the suite runs on, against the float64
references: the border modes whose addressing takes the remainder of a negative offset
(reflect, mirror, wrap), through the engine's strategies and blurapp.ndimage's looped passes
(which small arrays run while their unrolled pipeline compiles).

On wgpu's OpenGL backend over llvmpipe, WGSL's ``%`` of a negative i32 gave wrong indices
(GLSL leaves the remainder of negative operands undefined): the engine's reflect, mirror and
wrap borders and the looped ndimage passes were off by up to 1.4 on unit-variance data while
every test on the Vulkan adapter passed. Each adapter runs in a process of its own
(``BLURAPP_ADAPTER`` takes its index)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from blurapp.gpu.device import ADAPTER_ENV, list_adapters

pytestmark = pytest.mark.gpu

CHECK = r"""
import warnings

import numpy as np
from scipy import ndimage as sn

from blurapp import ndimage as bnd
from blurapp.core.borders import Border
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.core.strategies import gpu_names
from blurapp.gpu import ndpass
from blurapp.gpu.device import get_device
from blurapp.gpu.engine import get_filter

# An adapter whose compiler contracts a * b + c says once that float64 runs on the CPU.
warnings.simplefilter("ignore", RuntimeWarning)
print(get_device().info["backend"])
ndpass.BAKE_IN_BACKGROUND = False  # small arrays keep the looped shaders (nd_border_index)
rng = np.random.default_rng(7)
bad = []
for shape in [(9, 40, 71), (300,), (5, 1)]:
    x = rng.standard_normal(shape).astype(np.float32)
    for mode in ("reflect", "mirror", "wrap", "grid-wrap", "nearest", "constant"):
        for axis in range(x.ndim):
            # truncate=6: 19 taps, longer than the axes of 1 and 5 (reflections repeat)
            got = bnd.gaussian_filter1d(x, 1.5, axis=axis, mode=mode, truncate=6.0)
            want = sn.gaussian_filter1d(x, 1.5, axis=axis, mode=mode, truncate=6.0)
            err = float(np.abs(got - want).max())
            if not err < 1e-5:
                bad.append(f"ndimage {shape} {mode} axis {axis}: {err:.3g}")
image = rng.random((23, 37, 3), dtype=np.float32)
for spec in ("gaussian:sigma=1", "box:4", "gaussian:sigma=9"):  # sigma 9: 55 taps > 23 rows
    k = Kernel.parse(spec)
    for border in ("reflect", "mirror", "wrap", "clamp", "constant=0.5"):
        want = correlate_float(image, k, Border.parse(border))
        for strategy in gpu_names():
            if strategy in ("lowrank", "fft"):
                continue  # approximations, with tolerances of their own (test_engine)
            got, _ = get_filter().run(image, k, Border.parse(border), strategy)
            err = float(np.abs(got - want).max())
            if not err < 1e-5:
                bad.append(f"engine {strategy} {spec} {border}: {err:.3g}")
print("\n".join(bad) or "all agree")
raise SystemExit(1 if bad else 0)
"""


def test_every_adapter_agrees_with_the_references(gpu) -> None:
    adapters = list_adapters()
    assert adapters, "no adapter listed, though the suite has one"
    for index, info in enumerate(adapters):
        env = dict(os.environ, **{ADAPTER_ENV: str(index)})
        proc = subprocess.run(
            [sys.executable, "-c", CHECK], env=env, capture_output=True, text=True, timeout=900
        )
        assert proc.returncode == 0, (info["summary"], proc.stdout[-3000:], proc.stderr[-3000:])
        assert proc.stdout.splitlines()[0] == info["backend"], (info, proc.stdout)
