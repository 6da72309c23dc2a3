"""blurapp.io.kernels: kernel files written atomically, read back bit for bit by Kernel.load."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np
import pytest

from blurapp.core.errors import BlurappError, OutputError
from blurapp.core.kernel import Kernel
from blurapp.io import TEMP_SUFFIX, kernel_json_text, save_kernel


@pytest.mark.parametrize("spec", ["gaussian:sigma=2x1,radius=5x3", "sobel:y,size=5", "box:4"])
def test_round_trip_is_bit_exact(tmp_path: Path, spec: str) -> None:
    k = Kernel.parse(spec)
    path = save_kernel(k, tmp_path / "k.json")
    loaded = Kernel.load(path)
    assert loaded == k and loaded.spec == k.spec
    assert loaded.weights.tobytes() == k.weights.tobytes()
    assert Kernel.parse(f"@{path}") == k


def test_raw_weights_round_trip(tmp_path: Path) -> None:
    w = np.random.default_rng(4).standard_normal((4, 6)) / 3
    w[0, 0] = -0.0
    k = Kernel.from_weights(w, name="learned")
    loaded = Kernel.load(save_kernel(k, tmp_path / "raw.json"))
    assert loaded.name == "learned" and loaded.weights.tobytes() == k.weights.tobytes()


def test_text_is_the_saved_form_one_row_per_line() -> None:
    k = Kernel.parse("box:7x3")
    text = kernel_json_text(k)
    assert json.loads(text) == k.to_json()
    assert text.count("\n") == 7 + 3 + 3  # fields, weight rows, brackets and braces


def test_kernel_files_follow_the_never_overwrite_rule(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    save_kernel(Kernel.parse("box:7x3"), path)
    with pytest.raises(OutputError, match=r"k\.json exists"):
        save_kernel(Kernel.parse("box:3"), path)
    assert Kernel.load(path) == Kernel.parse("box:7x3")
    save_kernel(Kernel.parse("box:3"), path, overwrite=True)
    assert Kernel.load(path) == Kernel.parse("box:3")
    assert stat.S_ISREG(path.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["k.json"]  # no temporary left
    assert not any(p.name.endswith(TEMP_SUFFIX) for p in tmp_path.iterdir())


def test_a_missing_folder_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(BlurappError, match="nodir") as info:
        save_kernel(Kernel.parse("box:3"), tmp_path / "nodir" / "k.json")
    assert "\n" not in str(info.value)
