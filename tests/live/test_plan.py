"""The live preview's sizing (blurapp.live.plan): the first picture's reduction follows the
measured rate, tiles never compute more than the image needs, and the rate follows runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from blurapp import pipeline
from blurapp.core.checks import checking
from blurapp.core.filterspec import FilterSpec
from blurapp.core.kernel import Kernel
from blurapp.live import plan
from blurapp.live.plan import MIN_PICTURE_SIDE, Rates


@pytest.fixture(autouse=True)
def _no_engine_rate(monkeypatch, request) -> None:
    """The rates given, not the engine's measurement of this machine's adapter (another test
    in the session may have run the GPU)."""
    if "reads_the_engine" not in request.node.name:
        monkeypatch.setattr(plan, "engine_rate", lambda kind: None)


def _rates(gpu: float = 6.7e8, cpu: float = 1e9) -> Rates:
    return Rates({"gpu": gpu, "cpu": cpu})


def test_first_picture_is_exact_when_the_reference_is_fast_enough() -> None:
    kernel = Kernel.parse("gaussian:sigma=3.37")
    choice = _rates().first_picture((512, 512), 3, kernel, "auto", 1)
    assert choice.factor == 1 and choice.strategy == "cpu"
    assert choice.estimate_ms <= plan.FIRST_BUDGET_MS


def test_a_slower_rate_reduces_the_first_picture_more_never_less_than_the_view() -> None:
    kernel = Kernel.parse("gaussian:sigma=5")
    fast = _rates(cpu=1e9).first_picture((3000, 4000), 3, kernel, "auto", 6)
    slow = _rates(cpu=1e8).first_picture((3000, 4000), 3, kernel, "auto", 6)
    assert fast.factor == 6  # the view's own reduction fits the budget
    assert slow.factor > fast.factor and slow.factor % 6 == 0  # a multiple of the view's
    assert slow.estimate_ms <= plan.FIRST_BUDGET_MS
    hopeless = _rates(cpu=1e3).first_picture((3000, 4000), 3, kernel, "auto", 6)
    assert max(-(-3000 // hopeless.factor), -(-4000 // hopeless.factor)) >= MIN_PICTURE_SIDE


def test_the_gpu_makes_the_first_picture_only_when_ready_and_faster() -> None:
    kernel = Kernel.parse("box:31")
    rates = _rates(gpu=1e12, cpu=1e9)
    assert rates.first_picture((512, 512), 3, kernel, "direct", 1).strategy == "cpu"
    ready = rates.first_picture((512, 512), 3, kernel, "direct", 1, gpu_ready=True)
    assert ready.strategy == "direct" and ready.factor == 1
    assert rates.first_picture((512, 512), 3, kernel, "cpu", 1, gpu_ready=True).strategy == "cpu"


def test_learning_follows_measured_runs() -> None:
    rates = _rates(cpu=1e9)
    kernel = Kernel.parse("box:5")
    work = plan.work("cpu", kernel, 512 * 512, 3)
    for _ in range(30):
        rates.learn("cpu", kernel, 512 * 512, work / 2e8 * 1e3, 3)  # runs at 2e8 per second
    assert rates.rate("cpu") == pytest.approx(2e8, rel=0.01)
    assert rates.runs("cpu") == 30
    rates.learn("cpu", kernel, 10, 5.0)  # too small to say anything
    assert rates.runs("cpu") == 30


def test_the_engines_measured_rate_is_used_where_it_has_one(monkeypatch) -> None:
    monkeypatch.setattr(plan, "engine_rate", lambda kind: 3.5e11 if kind == "gpu" else None)
    rates = _rates(gpu=1e8)
    assert rates.rate("gpu") == 3.5e11  # no run of ours yet: the engine's
    assert rates.rate("cpu") == 1e9  # the reference is ours to measure
    kernel = Kernel.parse("box:5")
    rates.learn("direct", kernel, 512 * 512, plan.work("direct", kernel, 512 * 512) / 2e9 * 1e3)
    assert rates.rate("gpu") < 3.5e11  # ours (wall clock, transfers included) is slower
    monkeypatch.setattr(plan, "engine_rate", lambda kind: None)
    assert _rates(gpu=1e8).rate("gpu") == 1e8


def test_engine_rate_reads_the_engine_without_creating_a_device(monkeypatch) -> None:
    from blurapp.gpu import device
    from blurapp.gpu import engine as gpu_engine

    monkeypatch.setattr(gpu_engine, "mac_rate", lambda strategy="direct": 2.5e9)
    monkeypatch.setattr(device, "_context", None)
    assert plan.engine_rate("gpu") is None  # asking would create the device
    monkeypatch.setattr(device, "_context", object())
    assert plan.engine_rate("gpu") == 4 * 2.5e9  # per channel value: four per RGBA texel
    assert plan.engine_rate("cpu") is None


@pytest.mark.parametrize(
    ("shape", "spec"),
    [((40, 56, 3), "disk:radius=120"), ((40, 56, 3), "box:81"), ((1, 1, 3), "box:513x3")],
)
def test_no_tiles_for_a_kernel_as_large_as_the_image(shape, spec) -> None:
    """Issue 26: a tile computes its padded outputs; with a halo larger than the image, tiles
    would filter far more than the image (radius 120 on 40x56: no result in 20 s)."""
    rates = _rates(cpu=1e6)  # slow enough that the image would otherwise be tiled
    assert rates.tile_side(shape, FilterSpec.create(spec, "mirror", "cpu")) is None


def test_tiles_take_about_the_budget_and_are_never_narrower_than_the_halo() -> None:
    rates = _rates(gpu=6.7e8)
    spec = FilterSpec.create("gaussian:sigma=5", "clamp", "direct")
    kernel = spec.effective_kernel
    side = rates.tile_side((3000, 4000, 3), spec)
    assert side is not None
    pad = max(kernel.shape) - 1
    assert side - pad >= pad
    tile_ms = rates.estimate_ms("direct", kernel, side * side)
    assert tile_ms <= 4 * plan.TILE_BUDGET_MS  # at most the halo's 4x beyond the budget
    small = rates.tile_side((3000, 4000, 3), FilterSpec.create("box:3", "clamp", "direct"))
    assert small is not None
    assert rates.estimate_ms("direct", Kernel.parse("box:3"), small**2) <= plan.TILE_BUDGET_MS
    assert rates.tile_side((64, 64, 3), FilterSpec.create("box:3", "clamp", "direct")) is None


def test_a_cpu_run_with_a_large_kernel_stops_between_blocks_of_taps() -> None:
    """The reference calls the thread's installed check: a new spec stops a long cpu run (or a
    tile in progress) within a block of taps, not after the whole run."""
    image = np.random.default_rng(1).integers(0, 256, (40, 56, 3), dtype=np.uint8)
    spec = FilterSpec.create("disk:radius=40", "mirror", "cpu")
    calls = []

    class StopError(Exception):
        pass

    def check() -> None:
        calls.append(1)
        if len(calls) >= 3:
            raise StopError

    with pytest.raises(StopError):
        pipeline.filter_pixels(image, spec, check=check)
    taps = int((spec.effective_kernel.weights != 0).sum())
    assert len(calls) == 3 and taps > 64 * 10  # stopped long before the end


def test_the_tile_loop_checks_inside_a_tile_in_progress() -> None:
    image = np.random.default_rng(2).integers(0, 256, (90, 90, 3), dtype=np.uint8)
    spec = FilterSpec.create("disk:radius=12", "reflect", "cpu")
    calls: list[int] = []

    class StopError(Exception):
        pass

    def check() -> None:
        calls.append(1)
        if len(calls) == 4:  # the loop's own check before tile 1 is call 1
            raise StopError

    progress: list[tuple[int, int]] = []
    with pytest.raises(StopError):
        pipeline.filter_pixels(
            image, spec, max_tile_side=64, check=check, in_flight=1,
            progress=lambda d, t: progress.append((d, t)),
        )  # fmt: skip
    assert progress == []  # stopped inside the first tile, not after it


def test_an_untiled_cpu_run_costs_what_filter_image_costs() -> None:
    """The window's full result for disk:radius=120 on 40x56 with cpu is one whole run, the
    same pixels as filter_image."""
    import blurapp
    from blurapp.ui.jobs import Viewport, run_full

    image = np.random.default_rng(3).integers(0, 256, (40, 56, 3), dtype=np.uint8)
    spec = FilterSpec.create("disk:radius=120", "mirror", "cpu")
    checks: list[int] = []
    with checking(None):
        result = run_full(image, spec, lambda: checks.append(1), lambda p: None, 1,
                          Viewport.whole(image.shape))  # fmt: skip
    np.testing.assert_array_equal(result.image, blurapp.filter_image(image, spec).image)
    assert "tiles" not in result.reason
    assert len(checks) > 10  # the run checked between its blocks of taps
    assert math.isfinite(result.timing.wall_ms)
