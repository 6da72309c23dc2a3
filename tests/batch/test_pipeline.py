"""blurapp.batch in-process: colour curves, memory budget, threaded pipeline, inputs, options."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

import numpy as np
import pytest

from blurapp.batch.inputs import expand_inputs, plan_jobs, split_existing
from blurapp.batch.options import add_apply_options, add_batch_options
from blurapp.batch.pipeline import (
    EncodeSettings,
    FilterSettings,
    Job,
    MemoryBudget,
    filter_pixels,
    linear_to_srgb,
    run_pipeline,
    srgb_to_linear,
)
from blurapp.batch.progress import Progress, format_duration
from blurapp.core.errors import StrategyError, UsageError
from blurapp.core.reference import correlate


def test_srgb_curves_invert_each_other() -> None:
    x = np.linspace(-1, 2, 1001)
    np.testing.assert_allclose(linear_to_srgb(srgb_to_linear(x)), x, atol=1e-12)
    assert srgb_to_linear(np.array([0.5]))[0] == pytest.approx(0.214041, abs=1e-6)


def test_without_alpha_or_linear_it_is_the_reference() -> None:
    image = np.random.default_rng(0).integers(0, 256, (9, 8, 3)).astype(np.uint8)
    settings = FilterSettings.create("gaussian:sigma=1", "wrap", "cpu")
    got, outcome = filter_pixels(image, settings)
    np.testing.assert_array_equal(got, correlate(image, "gaussian:sigma=1", "wrap"))
    assert outcome.strategy == "cpu" and outcome.timing.pixels == 72


def test_settings_are_checked_up_front() -> None:
    with pytest.raises(StrategyError, match="rank"):
        FilterSettings.create("laplacian", strategy="separable")
    with pytest.raises(UsageError, match="wide"):
        FilterSettings.create("box:3", range_mode="wide")
    with pytest.raises(UsageError, match="sideways"):
        FilterSettings.create("box:3", alpha="sideways")
    flipped = FilterSettings.create("matrix:3x1:1,2,3", convolve=True)
    np.testing.assert_array_equal(flipped.kernel.weights, [[3.0, 2.0, 1.0]])


def test_memory_budget_lets_one_big_item_through_and_blocks_the_rest() -> None:
    budget = MemoryBudget(100)
    stop = threading.Event()
    assert budget.acquire(500, stop)  # alone, bigger than the budget
    got = []
    t = threading.Thread(target=lambda: got.append(budget.acquire(10, stop)))
    t.start()
    t.join(0.3)
    assert t.is_alive()  # waits while the big one is held
    budget.release(500)
    t.join(5)
    assert got == [True] and budget.peak == 500
    stop.set()
    assert budget.acquire(200, stop) is False


def test_pipeline_records_every_file_in_order(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    jobs = []
    images = []
    for i in range(7):
        image = rng.integers(0, 256, (5 + i, 6, 3)).astype(np.uint8)
        np.save(tmp_path / f"i{i}.npy", image)
        images.append(image)
        jobs.append(Job(tmp_path / f"i{i}.npy", tmp_path / f"o{i}.npy", "npy"))
    (tmp_path / "i3.npy").write_bytes(b"junk")
    seen = []
    settings = FilterSettings.create("box:3", strategy="cpu")
    records = run_pipeline(
        jobs, settings, EncodeSettings(), workers=3, on_done=seen.append, memory_budget=1
    )
    assert [r.input for r in records] == [str(j.input) for j in jobs]
    assert [r.status for r in records] == ["ok"] * 3 + ["failed"] + ["ok"] * 3
    assert len(seen) == 7
    for i in (0, 1, 2, 4, 5, 6):
        np.testing.assert_array_equal(
            np.load(tmp_path / f"o{i}.npy"), correlate(images[i], "box:3")
        )
    assert "i3.npy" in (records[3].error or "")


def test_pipeline_stop_cancels_the_rest(tmp_path: Path) -> None:
    np.save(tmp_path / "i.npy", np.zeros((4, 4), np.uint8))
    jobs = [Job(tmp_path / "i.npy", tmp_path / f"o{i}.npy", "npy") for i in range(5)]
    stop = threading.Event()
    stop.set()
    records = run_pipeline(
        jobs, FilterSettings.create("box:3", strategy="cpu"), EncodeSettings(), workers=2,
        stop=stop,
    )  # fmt: skip
    assert {r.status for r in records} == {"cancelled"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i.npy"]


def test_inputs_and_plans(tmp_path: Path) -> None:
    (tmp_path / "d" / "sub").mkdir(parents=True)
    for name in ("d/a.png", "d/b.JPG", "d/notes.txt", "d/.hidden.png", "d/sub/c.tif"):
        (tmp_path / name).write_bytes(b"x")
    flat = expand_inputs([str(tmp_path / "d")])
    assert [p.name for p in flat] == ["a.png", "b.JPG"]
    deep = expand_inputs([str(tmp_path / "d")], recursive=True)
    assert [p.name for p in deep] == ["a.png", "b.JPG", "c.tif"]
    globbed = expand_inputs([str(tmp_path / "d" / "*.png"), str(tmp_path / "d" / "a.png")])
    assert [p.name for p in globbed] == ["a.png"]  # each input once
    with pytest.raises(UsageError, match="no file matches"):
        expand_inputs([str(tmp_path / "*.webp")])
    with pytest.raises(UsageError, match="no such file"):
        expand_inputs([str(tmp_path / "missing.png")])
    jobs = plan_jobs(deep, tmp_path / "out", suffix="_s")
    assert [j.output.name for j in jobs] == ["a_s.png", "b_s.jpg", "c_s.tiff"]
    with pytest.raises(UsageError, match="separator"):
        plan_jobs(deep, tmp_path / "out", suffix="/x")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "b_s.jpg").write_bytes(b"old")
    with pytest.raises(UsageError, match=r"b_s\.jpg"):
        split_existing(jobs, overwrite=False, skip_existing=False)
    run, skip = split_existing(jobs, overwrite=False, skip_existing=True)
    assert [j.output.name for j in skip] == ["b_s.jpg"] and len(run) == 2


def test_help_names_match_the_registries() -> None:
    from blurapp.batch import options
    from blurapp.core.imageio import FORMATS
    from blurapp.core.numbers import RANGE_MODES
    from blurapp.engine import STRATEGIES

    assert options._STRATEGY_HELP.replace(" or ", ", ").split(", ") == list(STRATEGIES)
    assert options._RANGE_HELP.replace(" or ", ", ").split(", ") == list(RANGE_MODES)
    assert set(options._FORMATS) == set(FORMATS)
    for add in (add_apply_options, add_batch_options):
        parser = argparse.ArgumentParser()
        add(parser)
        assert "--kernel" in parser.format_help()


def test_progress_line() -> None:
    progress = Progress(4, enabled=False)
    progress.advance(2_000_000)
    line = progress.line(progress.start + 1.0)
    assert "1/4 files" in line and "2.0 Mpix/s" in line and "ETA 0:03" in line
    assert format_duration(3725) == "1:02:05"


# ------------------------------------------------------------------ fast paths (issue 4)


def test_which_inputs_are_uploaded_as_stored() -> None:
    from blurapp.batch.pipeline import _filter_input, _quantiser

    auto = FilterSettings.create("gaussian:sigma=1")
    rgb8 = np.zeros((4, 5, 3), np.uint8)
    x, storage = _filter_input(rgb8, auto, np.float32)
    assert storage == "rgba8" and x.dtype == np.uint8 and x.shape == (4, 5, 3)
    x, storage = _filter_input(rgb8[:, :, 0], auto, np.float32)  # grey: H×W×1, same bytes
    assert storage == "rgba8" and x.shape == (4, 5, 1)
    # Anything that needs float work before the kernel goes as floats.
    rgba8 = np.zeros((4, 5, 4), np.uint8)
    assert _filter_input(rgba8, auto, np.float32)[1] == "rgba32f"  # premultiplied
    straight = FilterSettings.create("gaussian:sigma=1", alpha="straight")
    assert _filter_input(rgba8, straight, np.float32)[1] == "rgba8"
    linear = FilterSettings.create("gaussian:sigma=1", linear=True)
    assert _filter_input(rgb8, linear, np.float32)[1] == "rgba32f"
    assert _filter_input(rgb8.astype(np.uint16), auto, np.float32)[1] == "rgba32f"
    cpu = FilterSettings.create("gaussian:sigma=1", strategy="cpu")
    assert _filter_input(rgb8, cpu, np.float64)[1] == "rgba32f"
    # Quantised in the filter stage only where _finish would only quantise.
    assert _quantiser(auto, 3, np.dtype(np.uint8), False) is not None
    assert _quantiser(auto, 4, np.dtype(np.uint8), False) is None  # un-premultiply first
    assert _quantiser(auto, 3, np.dtype(np.float32), False) is None
    signed = FilterSettings.create("sobel:x", range_mode="abs")
    assert _quantiser(signed, 3, np.dtype(np.uint8), False) is None


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1, 3), (37, 53, 3), (20, 31), (16, 9, 4), (5, 7, 2)])
@pytest.mark.parametrize("strategy", ["separable", "tiled", "auto"])
def test_rgba8_upload_matches_the_reference(gpu, shape, strategy) -> None:
    """8-bit pixels uploaded as stored, quantised from the readback: within 1 level of the
    float64 reference (the GPU's f32 sums may land on the other side of a .5)."""
    image = np.random.default_rng(sum(shape)).integers(0, 256, shape).astype(np.uint8)
    settings = FilterSettings.create("gaussian:sigma=2", "mirror", strategy, alpha="straight")
    got, outcome = filter_pixels(image, settings)
    want = correlate(image, "gaussian:sigma=2", "mirror")
    assert got.shape == image.shape and got.dtype == np.uint8
    assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
    assert outcome.strategy != "cpu"


@pytest.mark.gpu
def test_engine_takes_uint8_for_rgba8_and_converts_in_place(gpu) -> None:
    from blurapp.core.numbers import to_float
    from blurapp.engine import filter_float

    image = np.random.default_rng(3).integers(0, 256, (23, 41, 3)).astype(np.uint8)
    floats, *_ = filter_float(to_float(image, np.float32), "box:5", "clamp", "separable")
    stored, *_ = filter_float(image, "box:5", "clamp", "separable", storage="rgba8")
    np.testing.assert_allclose(stored, floats, atol=1e-6)
    seen = []

    def convert(y: np.ndarray) -> np.ndarray:
        seen.append((y.dtype, y.shape))
        return (y * 2).astype(np.float64)

    doubled, *_ = filter_float(image, "box:5", "clamp", "separable", storage="rgba8",
                               convert=convert)  # fmt: skip
    assert seen == [(np.float32, (23, 41, 3))] and doubled.dtype == np.float64
    np.testing.assert_allclose(doubled, 2 * floats, atol=1e-6)
    # cpu with a uint8 rgba8 input means v / 255 too, and applies convert.
    ref, *_ = filter_float(image, "box:5", "clamp", "cpu", storage="rgba8", convert=np.negative)
    np.testing.assert_allclose(ref, -floats, atol=1e-6)


@pytest.mark.gpu
def test_many_files_with_a_tiny_budget_all_come_through(gpu, tmp_path: Path) -> None:
    """One image at a time in flight (budget of 1 byte), sizes changing between files (the GPU's
    per-size textures are dropped), uint8 and uint16, 3 and 4 channels: every file written and
    equal to the reference within a level."""
    rng = np.random.default_rng(5)
    jobs, images = [], []
    for i in range(12):
        shape = (20 + i % 3, 17 + i % 2, 3 + i % 2)
        dtype = np.uint16 if i % 5 == 0 else np.uint8
        image = rng.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)
        np.save(tmp_path / f"i{i:02d}.npy", image)
        images.append(image)
        jobs.append(Job(tmp_path / f"i{i:02d}.npy", tmp_path / f"o{i:02d}.npy", "npy"))
    settings = FilterSettings.create("gaussian:sigma=1.5", "reflect", alpha="straight")
    records = run_pipeline(jobs, settings, EncodeSettings(), workers=2, memory_budget=1)
    assert [r.status for r in records] == ["ok"] * 12
    for i, image in enumerate(images):
        got = np.load(tmp_path / f"o{i:02d}.npy")
        want = correlate(image, "gaussian:sigma=1.5", "reflect")
        assert got.dtype == image.dtype
        assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1


def test_estimate_counts_what_each_path_holds() -> None:
    from blurapp.batch.pipeline import _estimate_bytes

    float_path = _estimate_bytes(3840, 2160, 3, 1, 4)
    fast = _estimate_bytes(3840, 2160, 3, 1, 4, stored=True, quantised=True)
    assert fast == 3840 * 2160 * 3 * 3  # in, out and the encoder's buffers: 75 MB
    assert float_path > 5 * fast


# ------------------------------------------------- rgba8 output texture (peak memory, issue 4)


def test_which_outputs_the_gpu_quantises() -> None:
    from blurapp.batch.pipeline import _filter_output, _quantiser

    auto = FilterSettings.create("gaussian:sigma=1")
    u8, u16, f32 = np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32)
    # 8-bit output that only needs clamping and rounding: the rgba8unorm output texture.
    assert _filter_output(_quantiser(auto, 3, u8, False), u8) == "rgba8"
    assert _filter_output(_quantiser(auto, 1, u8, True), u8) == "rgba8"
    straight = FilterSettings.create("gaussian:sigma=1", alpha="straight")
    assert _filter_output(_quantiser(straight, 4, u8, False), u8) == "rgba8"
    # Anything else keeps float results: 16-bit or float files, float work after the filter
    # (un-premultiply, sRGB encoding) or another range mode.
    assert _filter_output(_quantiser(auto, 3, u16, False), u16) == "rgba32f"
    assert _filter_output(_quantiser(auto, 3, f32, False), f32) == "rgba32f"
    assert _filter_output(_quantiser(auto, 4, u8, False), u8) == "rgba32f"
    linear = FilterSettings.create("gaussian:sigma=1", linear=True)
    assert _filter_output(_quantiser(linear, 3, u8, False), u8) == "rgba32f"
    offset = FilterSettings.create("sobel:x", range_mode="offset")
    assert _filter_output(_quantiser(offset, 3, u8, False), u8) == "rgba32f"


def test_quantiser_takes_uint8_results_as_they_are() -> None:
    from blurapp.batch.pipeline import _quantiser

    auto = FilterSettings.create("gaussian:sigma=1")
    y = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)[:, :, :1]  # a strided view
    got = _quantiser(auto, 1, np.dtype(np.uint8), True)(y)
    assert got.shape == (2, 3) and got.flags.c_contiguous and not np.shares_memory(got, y)
    np.testing.assert_array_equal(got, y[:, :, 0])
    got = _quantiser(auto, 1, np.dtype(np.uint8), False)(y)
    assert got.shape == (2, 3, 1) and not np.shares_memory(got, y)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 1, 3), (37, 23, 3), (20, 31), (16, 9, 4)])
def test_8bit_outputs_come_from_an_rgba8_texture(gpu, shape) -> None:
    """The batch's 8-bit path reads back rgba8 (4 bytes per texel, no float readback buffer)
    and still matches the float64 reference within a level, for 8- and 16-bit inputs."""
    from blurapp.core.borders import Border
    from blurapp.core.kernel import Kernel
    from blurapp.core.numbers import from_float, to_float
    from blurapp.core.reference import correlate_float
    from blurapp.gpu.engine import get_filter

    rng = np.random.default_rng(sum(shape) + 7)
    for dtype in (np.uint8, np.uint16):
        image = rng.integers(0, np.iinfo(dtype).max + 1, shape).astype(dtype)
        get_filter().clear()
        settings = FilterSettings.create("gaussian:sigma=2", "reflect", alpha="straight")
        got, _ = filter_pixels(image, settings, np.uint8)
        assert got.shape == image.shape and got.dtype == np.uint8
        ref = correlate_float(
            to_float(image), Kernel.parse("gaussian:sigma=2"), Border.parse("reflect")
        )
        want = from_float(ref, np.uint8, squeeze=image.ndim == 2)
        assert np.abs(got.astype(int) - want.astype(int)).max() <= 1
        (res,) = get_filter()._shapes.values()
        assert set(res.readbacks) == {"rgba8"}
        assert ("output", shape[1], shape[0], "rgba8unorm") in res.textures
    # 16-bit output keeps the float texture.
    image = rng.integers(0, 65536, shape).astype(np.uint16)
    get_filter().clear()
    got, _ = filter_pixels(image, FilterSettings.create("gaussian:sigma=2", alpha="straight"))
    assert got.dtype == np.uint16
    (res,) = get_filter()._shapes.values()
    assert set(res.readbacks) == {"rgba32f"}
