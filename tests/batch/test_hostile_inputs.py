"""Batch inputs as a careless or hostile user leaves them (issue 18): symlink loops under ``**``,
names that differ only in case, a FIFO among the images."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from blurapp.batch.inputs import _case_insensitive, expand_inputs, plan_jobs
from blurapp.core.errors import UsageError


def png(path: Path) -> Path:
    Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(path)
    return path


def test_symlink_loops_under_a_double_star_glob_end(tmp_path: Path) -> None:
    (tmp_path / "lp" / "sub").mkdir(parents=True)
    png(tmp_path / "lp" / "sub" / "x.png")
    png(tmp_path / "lp" / ".hidden.png")
    (tmp_path / "lp" / "sub" / "up").symlink_to("..")
    (tmp_path / "lp" / "loop").symlink_to(tmp_path / "lp")
    found = expand_inputs([f"{tmp_path}/lp/**/*.png"])
    assert found == [tmp_path / "lp" / "sub" / "x.png"]
    # A relative pattern, and a folder scanned recursively, end too.
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert expand_inputs(["lp/**/*.png"]) == [Path("lp/sub/x.png")]
    finally:
        os.chdir(cwd)
    assert expand_inputs([str(tmp_path / "lp")], recursive=True) == found


def test_names_differing_in_case_collide_only_where_case_is_ignored(tmp_path: Path) -> None:
    inputs = [png(tmp_path / "a.png"), png(tmp_path / "A.png")]
    out = tmp_path / "out"
    if _case_insensitive(tmp_path):
        with pytest.raises(UsageError, match="collision"):
            plan_jobs(inputs, out)
    else:
        jobs = plan_jobs(inputs, out)
        assert [j.output.name for j in jobs] == ["a.png", "A.png"]


def test_the_case_probe_leaves_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "123"
    folder.mkdir()
    assert _case_insensitive(folder / "not" / "yet") in (True, False)
    assert list(folder.iterdir()) == []
