"""The one registry of strategy names, and the code that must agree with it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from blurapp.core import strategies
from blurapp.core.errors import StrategyError
from blurapp.core.kernel import Kernel
from blurapp.core.planner import DeviceLimits, Plan, plan

ROOT = Path(__file__).resolve().parents[2]


def test_names_and_kinds() -> None:
    assert strategies.names()[0] == "auto"
    assert set(strategies.gpu_names()) < set(strategies.compared_names())
    assert "auto" not in strategies.compared_names() and "cpu" in strategies.compared_names()
    for info in strategies.STRATEGIES.values():
        assert re.fullmatch(r"#[0-9a-f]{6}", info.colour) and info.summary


def test_unknown_names_are_refused_with_the_list() -> None:
    with pytest.raises(StrategyError, match="choose one of auto, direct"):
        strategies.get_info("fastest")
    assert "choose one of" in (strategies.why_not("fastest", Kernel.parse("box:3")) or "")


@pytest.mark.parametrize("name", strategies.names())
def test_why_not_follows_the_entry(name: str) -> None:
    rank2 = Kernel.parse("laplacian")
    info = strategies.get_info(name)
    assert (strategies.why_not(name, rank2) is not None) == info.needs_rank1
    assert strategies.why_not(name, Kernel.parse("gaussian:sigma=1")) is None


@pytest.mark.parametrize(
    "spec", ["box:1", "box:3x1", "gaussian:sigma=3", "laplacian", "disk:radius=6", "box:65"]
)
def test_the_planner_picks_registered_strategies(spec: str) -> None:
    for limits in (None, DeviceLimits(), DeviceLimits(workgroup_storage=1024)):
        chosen = plan(Kernel.parse(spec), limits)
        assert strategies.get_info(chosen.strategy).runs_on in ("gpu", "cpu")
    with pytest.raises(ValueError, match="not a strategy"):
        Plan("fastest", None, "")


def test_no_other_module_lists_the_names() -> None:
    """A tuple or list literal of two or more strategy names outside the registry is a copy.

    The conv lab's strategies (direct, im2col, implicit-gemm) are another registry of their
    own, in blurapp/conv/engine.py."""
    registries = {ROOT / "blurapp/core/strategies.py", ROOT / "blurapp/conv/engine.py"}
    quoted = "|".join(f'"{n}"' for n in strategies.names())
    pattern = re.compile(rf"[(\[]\s*(?:{quoted})\s*,\s*(?:{quoted})")
    found = [
        f"{path.relative_to(ROOT)}:{i}"
        for path in sorted((ROOT / "blurapp").rglob("*.py"))
        if path not in registries
        for i, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, f"strategy names listed outside blurapp/core/strategies.py: {found}"
