"""Adding a strategy is one module, one shader and a registry entry (docs/ARCHITECTURE.md):
a toy strategy registered the way the recipe says shows up in the command line's choices, the
planner and the engine, and agrees with the float64 reference."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from blurapp.core import planner
from blurapp.core import strategies as names
from blurapp.core.borders import BORDER_MODES, Border
from blurapp.core.kernel import Kernel
from blurapp.core.reference import correlate_float
from blurapp.core.strategies import StrategyInfo
from blurapp.gpu import shaders
from blurapp.gpu.strategies import base

TOY = Path(__file__).parent / "toy"


@pytest.fixture
def toy(monkeypatch: pytest.MonkeyPatch):
    """The registry entry, the module (which registers itself) and its shader, undone after."""
    from blurapp.cli import build_parser

    # Modules that take a list of names when imported (bench's default strategies) are
    # imported before the toy joins the registry, so that they do not keep it after.
    build_parser()
    monkeypatch.setitem(
        names.STRATEGIES, "toy", StrategyInfo("toy", "gpu", "every tap a loop", "#123456")
    )
    read = shaders._read_source

    def read_with_toy(name: str):
        path = TOY / name
        return (path.read_text(), None, lambda: True) if path.is_file() else read(name)

    monkeypatch.setattr(shaders, "_read_source", read_with_toy)
    shaders._environment.cache_clear()
    spec = importlib.util.spec_from_file_location("toy_loop", TOY / "toy_loop.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        yield module
    finally:
        base.STRATEGIES.pop("toy", None)
        planner.COST_MODELS.pop("toy", None)
        shaders._environment.cache_clear()


def test_registered_toy_is_everywhere(toy, gpu, capsys) -> None:
    from blurapp.cli import build_parser
    from blurapp.core.filterspec import FilterSpec
    from blurapp.engine import filter_float

    # The command line: in --strategy's help and accepted by the spec it builds.
    parser = build_parser()
    with pytest.raises(SystemExit):
        parser.parse_args(["apply", "--help"])
    assert "toy" in capsys.readouterr().out
    args = parser.parse_args(["apply", "in.png", "-o", "out.png", "--kernel", "box:3",
                              "--strategy", "toy"])  # fmt: skip
    assert FilterSpec.from_namespace(args).strategy == "toy"
    assert "toy" in names.gpu_names()

    # The planner: its cost model is registered, and it is the cheapest.
    kernel = Kernel.parse("matrix:3x2:1,2,0,-1,0.5,3")
    chosen = planner.plan(kernel, gpu.limits)
    assert chosen.strategy == "toy"
    assert dict(chosen.predicted)["toy"] < min(ms for name, ms in chosen.predicted if name != "toy")

    # The engine: auto runs it, on every border mode and odd shapes, as the reference does.
    rng = np.random.default_rng(7)
    for shape in ((1, 1, 1), (5, 7, 3), (13, 4, 4)):
        x = rng.random(shape, dtype=np.float32)
        for mode in (*BORDER_MODES, "constant=0.25"):
            got, timing, ran, reason = filter_float(x, kernel, mode, "auto")
            assert ran == "toy" and "toy" in reason
            ref = correlate_float(x.astype(np.float64), kernel, Border.parse(mode))
            np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
            assert [p.name for p in timing.passes] == ["toy"]


def test_a_name_outside_the_registry_is_refused() -> None:
    from blurapp.core.errors import StrategyError

    class Stray(base.Strategy):
        name = "stray"

        def passes(self, *args, **kwargs):
            return ()

        def estimate(self, *args, **kwargs):
            return None

    with pytest.raises(StrategyError, match="not a GPU entry"):
        base.register(Stray)
    assert "stray" not in base.STRATEGIES and "stray" not in planner.COST_MODELS
