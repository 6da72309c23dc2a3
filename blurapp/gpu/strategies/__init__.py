"""The GPU strategies, one self-registering module each: how a strategy splits a correlation
into compute passes, and what those passes cost.

Each module of this package (``direct``, ``tiled``, ``separable``, ``transpose``, ``lowrank``,
``fft``, and any added beside them) defines one :class:`~blurapp.gpu.strategies.base.Strategy`
subclass decorated with :func:`~blurapp.gpu.strategies.base.register`: its passes, its cost
model, the micro-runs that calibrate it. Importing the package imports every module in it, so
adding a strategy is one file here, its shader in ``shaders/`` and its entry in the registry of
names, :data:`blurapp.core.strategies.STRATEGIES` (docs/ARCHITECTURE.md, "Adding a strategy").
``base`` and ``lines`` hold what strategies share.
"""

from __future__ import annotations

import importlib
import pkgutil

from blurapp.core import strategies as _names
from blurapp.core.planner import BAKED_TAPS, line_block
from blurapp.gpu.strategies.base import (
    OUTPUT_FORMATS,
    STRATEGIES,
    TEXEL_BYTES,
    PassSpec,
    Strategy,
    get_strategy,
    register,
    with_output,
)
from blurapp.gpu.strategies.lines import LOOP_BUCKET, TAP_BUCKETS, buffer_variant, with_channels

_SHARED = {"base", "lines"}
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module not in _SHARED and not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")
# In the registry of names' order, whatever order the modules registered in.
_order = {name: i for i, name in enumerate(_names.STRATEGIES)}
for _name in sorted(STRATEGIES, key=_order.__getitem__):
    STRATEGIES[_name] = STRATEGIES.pop(_name)

from blurapp.gpu.strategies.direct import DirectStrategy  # noqa: E402
from blurapp.gpu.strategies.fft import FftStrategy  # noqa: E402
from blurapp.gpu.strategies.lowrank import LowRankStrategy  # noqa: E402
from blurapp.gpu.strategies.separable import SeparableStrategy  # noqa: E402
from blurapp.gpu.strategies.tiled import TiledStrategy  # noqa: E402
from blurapp.gpu.strategies.transpose import TransposeStrategy  # noqa: E402

__all__ = [
    "BAKED_TAPS",
    "LOOP_BUCKET",
    "OUTPUT_FORMATS",
    "STRATEGIES",
    "TAP_BUCKETS",
    "TEXEL_BYTES",
    "DirectStrategy",
    "FftStrategy",
    "LowRankStrategy",
    "PassSpec",
    "SeparableStrategy",
    "Strategy",
    "TiledStrategy",
    "TransposeStrategy",
    "buffer_variant",
    "get_strategy",
    "line_block",
    "register",
    "with_channels",
    "with_output",
]
