"""blurapp.batch in-process: memory budget, threaded pipeline, inputs, options."""

from __future__ import annotations

import argparse
import threading
from pathlib import Path

import numpy as np
import pytest

from blurapp.batch.inputs import expand_inputs, plan_jobs, split_existing
from blurapp.batch.options import add_apply_options, add_batch_options
from blurapp.batch.pipeline import EncodeSettings, Job, MemoryBudget, run_pipeline
from blurapp.batch.progress import Progress, format_duration
from blurapp.core.errors import UsageError
from blurapp.core.filterspec import FilterSpec
from blurapp.core.reference import correlate


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
    settings = FilterSpec.create("box:3", strategy="cpu")
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
        jobs, FilterSpec.create("box:3", strategy="cpu"), EncodeSettings(), workers=2,
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
    from blurapp.core.numbers import RANGE_MODES
    from blurapp.core.strategies import STRATEGIES
    from blurapp.io import FORMATS, codecs

    assert set(codecs.writable_formats()) == set(FORMATS)
    for add in (add_apply_options, add_batch_options):
        parser = argparse.ArgumentParser()
        add(parser)
        text = " ".join(parser.format_help().split())
        assert "--kernel" in text
        assert ", ".join(STRATEGIES) in text and ", ".join(RANGE_MODES) in text
        if add is add_batch_options:  # --format's choices are the registry's writers
            assert "{" + ",".join(FORMATS) + "}" in text


def test_progress_line() -> None:
    progress = Progress(4, enabled=False)
    progress.advance(2_000_000)
    line = progress.line(progress.start + 1.0)
    assert "1/4 files" in line and "2.0 Mpix/s" in line and "ETA 0:03" in line
    assert format_duration(3725) == "1:02:05"


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
    settings = FilterSpec.create("gaussian:sigma=1.5", "reflect", alpha="straight")
    records = run_pipeline(jobs, settings, EncodeSettings(), workers=2, memory_budget=1)
    assert [r.status for r in records] == ["ok"] * 12
    for i, image in enumerate(images):
        got = np.load(tmp_path / f"o{i:02d}.npy")
        want = correlate(image, "gaussian:sigma=1.5", "reflect")
        assert got.dtype == image.dtype
        assert np.abs(got.astype(np.int64) - want.astype(np.int64)).max() <= 1
