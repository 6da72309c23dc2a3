"""blurapp.gpu.ndtune: the texture-or-storage choice of fused pairs, measured once per adapter
and CPU, kept in the user's cache, and the same values either way."""

from __future__ import annotations

import json

import numpy as np
import pytest

from blurapp import ndimage as bnd
from blurapp.gpu import calibration, ndpass, ndtune
from blurapp.gpu.ndpass import NdPasses

pytestmark = pytest.mark.gpu


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """An empty cache directory, the measurement switched on (as outside the tests), and a
    probe small enough to take a fraction of a second (still split into interior and border
    strips, so that the two variants differ)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(calibration.ENV, "auto")
    monkeypatch.setattr(ndtune, "PROBE_SHAPE", (128, 512))
    monkeypatch.setattr(ndtune, "ROUNDS", 3)
    return tmp_path


def _answer(textures: bool) -> dict:
    ms = {"texture": {"min": 1.0, "median": 1.0}, "storage": {"min": 2.0, "median": 2.0}}
    return {"textures": textures, "shape": [1, 1], "ms": ms}


def _measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the probe runs."""

    def fail(engine: NdPasses, rounds: int = 0) -> dict:
        pytest.fail("measured again")

    monkeypatch.setattr(ndtune, "measure_plane_textures", fail)


def test_measures_once_then_reads_the_cache(gpu, cache, monkeypatch) -> None:
    engine = NdPasses(gpu)
    answer = ndtune.plane_textures(engine)
    assert isinstance(answer, bool)
    key = ndtune._key(gpu)
    path = ndtune.cache_path(key)
    assert path.parent == cache / "blurapp" / "ndtune" and path.is_file()
    data = json.loads(path.read_text())
    assert data["key"] == key and key["cpu"] == ndtune.cpu_identity() != ""
    found = data["answers"]["plane_textures"]
    assert found["textures"] is answer and found["shape"] == [128, 512]
    for side in ("texture", "storage"):
        assert 0 < found["ms"][side]["min"] <= found["ms"][side]["median"]
    # The rule: storage only where it is MARGIN faster than the texture.
    ms = found["ms"]
    assert answer == (not ms["storage"]["min"] < ms["texture"]["min"] * (1 - ndtune.MARGIN))
    # A new engine (a new process's) reads it; the same one remembers it.
    _measured(monkeypatch)
    assert ndtune.plane_textures(NdPasses(gpu)) is answer
    assert ndtune.plane_textures(engine) is answer
    assert ndtune.sentence(found) in ndtune.describe(gpu)


def test_the_probe_times_both_variants_of_one_pair(gpu, cache, monkeypatch) -> None:
    engine = NdPasses(gpu)
    seen: list[tuple] = []
    run = engine.run

    def spy(data, dispatches, *args, **kwargs):
        seen.append(tuple(d.texin for d in dispatches if d.shader == "nd_plane"))
        return run(data, dispatches, *args, **kwargs)

    monkeypatch.setattr(engine, "run", spy)
    ndtune.measure_plane_textures(engine, rounds=2)
    assert set(seen) == {("rgba32float", "rgba32float"), ("", "")}  # interior and border
    assert len(seen) == 2 * (2 + 2)  # two compiling runs and two timed ones each


@pytest.mark.parametrize("trouble", ["corrupt", "not json", "stale", "no answer"])
def test_a_bad_or_stale_file_is_measured_afresh_and_replaced(gpu, cache, monkeypatch, trouble):
    key = ndtune._key(gpu)
    path = ndtune.cache_path(key)
    path.parent.mkdir(parents=True)
    if trouble == "corrupt":
        path.write_bytes(b"\xff\x00{")
    elif trouble == "not json":
        path.write_text("[1, 2]")
    elif trouble == "stale":  # another CPU under the same adapter name
        other = {**key, "cpu": "GenuineIntel 6 85 7 Some Xeon"}
        path.write_text(json.dumps({"key": other, "answers": {"plane_textures": _answer(True)}}))
    else:
        path.write_text(json.dumps({"key": key, "answers": {"plane_textures": {"x": 1}}}))
    monkeypatch.setattr(ndtune, "measure_plane_textures", lambda engine: _answer(False))
    assert ndtune.plane_textures(NdPasses(gpu)) is False
    data = json.loads(path.read_text())
    assert data["key"] == key and data["answers"]["plane_textures"] == _answer(False)
    assert not list(path.parent.glob("*.tmp*")) and len(list(path.parent.iterdir())) == 1


def test_cache_and_off_modes_and_forced_choices_never_measure(gpu, cache, monkeypatch) -> None:
    _measured(monkeypatch)
    monkeypatch.setenv(calibration.ENV, "cache")
    assert ndtune.plane_textures(NdPasses(gpu)) is True  # nothing cached: the built-in choice
    assert not (cache / "blurapp" / "ndtune").exists()
    key = ndtune._key(gpu)
    ndtune._save(key, {"plane_textures": _answer(False)})
    assert ndtune.plane_textures(NdPasses(gpu)) is False  # cache: read, not measured
    monkeypatch.setenv(calibration.ENV, "off")
    assert ndtune.plane_textures(NdPasses(gpu)) is True  # off: the built-in choice
    monkeypatch.setenv(calibration.ENV, "auto")
    for forced in (True, False):
        monkeypatch.setattr(ndpass, "TEXTURE_PLANES", forced)
        assert ndtune.plane_textures(NdPasses(gpu)) is forced


def test_a_cache_that_cannot_be_written_still_answers(gpu, cache, monkeypatch) -> None:
    (cache / "blurapp").write_text("a file where the directory would be")  # root ignores modes
    measured: list[int] = []

    def measure(engine: NdPasses) -> dict:
        measured.append(1)
        return _answer(False)

    monkeypatch.setattr(ndtune, "measure_plane_textures", measure)
    engine = NdPasses(gpu)
    assert ndtune.plane_textures(engine) is False and ndtune.plane_textures(engine) is False
    assert measured == [1] and (cache / "blurapp").read_text().startswith("a file")


@pytest.mark.parametrize("textures", [True, False])
def test_blurapp_ndimage_follows_the_answer_with_the_same_values(
    gpu, cache, monkeypatch, textures: bool
) -> None:
    """The answer decides what the fused pairs of a call read; the values are the same bit for
    bit either way (and the texture is asked only where a chain has a pair that splits)."""
    engine = NdPasses(gpu)
    monkeypatch.setattr(ndpass, "get_passes", lambda: engine)
    key = ndtune._key(gpu)
    ndtune._save(key, {"plane_textures": _answer(textures)})
    x = np.random.default_rng(3).random((96, 520), dtype=np.float32)
    runs: list[tuple] = []
    run = engine.run

    def spy(data, dispatches, *args, **kwargs):
        runs.append(tuple(d.texin for d in dispatches if d.shader == "nd_plane"))
        return run(data, dispatches, *args, **kwargs)

    monkeypatch.setattr(engine, "run", spy)
    for call in (lambda: bnd.uniform_filter(x, 5), lambda: bnd.gaussian_filter(x, 1.5)):
        got = call()
        engine.wait_baked()
        got = call()
        monkeypatch.setattr(ndpass, "TEXTURE_PLANES", not textures)
        other = call()
        engine.wait_baked()
        other = call()
        monkeypatch.setattr(ndpass, "TEXTURE_PLANES", "probe")
        np.testing.assert_array_equal(got, other)
    tex, other_tex = ("rgba32float", "") if textures else ("", "rgba32float")
    assert runs[1] == (tex, tex) and runs[3] == (other_tex, other_tex)
    # No pair (one axis, or a small array): not asked.
    _measured(monkeypatch)
    monkeypatch.setattr(ndtune, "plane_textures", lambda engine: pytest.fail("asked"))
    bnd.uniform_filter1d(x, 5)
    bnd.uniform_filter(x[:8, :16], 3)


def test_cpu_identity_names_the_model() -> None:
    ident = ndtune.cpu_identity()
    assert ident and ident == ndtune.cpu_identity()
    try:
        with open("/proc/cpuinfo") as f:
            family = next(line for line in f if line.startswith("cpu family"))
    except (OSError, StopIteration):
        return
    assert family.split(":")[1].strip() in ident.split()
