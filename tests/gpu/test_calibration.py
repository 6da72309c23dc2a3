"""Calibration per adapter (blurapp.gpu.calibration, `blurapp tune`): the fit, the cache and
its key, corrupt and stale files, the background run that yields to user work."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from blurapp.core import planner
from blurapp.core.kernel import Kernel
from blurapp.core.planner import DeviceLimits
from blurapp.gpu import calibration, ndtune
from blurapp.gpu.ndpass import NdPasses
from blurapp.gpu.strategies import STRATEGIES

KEY = {
    "name": "Test GPU 9000", "vendor": "acme", "backend": "Vulkan", "driver": "1.2.3",
    "blurapp": "0.1.0", "shaders": "abcdef0123456789",
}  # fmt: skip


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """An empty cache directory of its own, calibration switched on, state forgotten after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv(calibration.ENV, "auto")
    calibration.reset()
    calibration._warned.clear()
    yield tmp_path
    thread = calibration.background_thread()
    if thread is not None:
        calibration.resume()
        thread.join(120)
    calibration.reset()


@pytest.fixture
def tiny_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two small micro-runs per strategy, so that a calibration takes seconds."""
    for name, strat in STRATEGIES.items():
        # lowrank leaves rank-1 kernels to separable: it calibrates on rank-2 ones.
        specs = (
            ("laplacian", "disk:radius=2") if name == "lowrank" else ("gaussian:sigma=1", "box:3")
        )
        monkeypatch.setattr(type(strat), "calibration", ((48, 40, specs[0]), (96, 64, specs[1])))


def fake_ctx(**changed: str) -> SimpleNamespace:
    info = {k: v for k, v in KEY.items() if k in ("name", "vendor", "backend", "driver")}
    info.update(changed)
    return SimpleNamespace(info=info, limits=DeviceLimits())


def a_table(key: dict[str, str]) -> calibration.Calibration:
    return calibration.Calibration(dict(key), {"direct": {"pixel": 5.0, "tap": 2.0}}, {"direct": 3})


def test_the_fit_recovers_known_coefficients() -> None:
    # Synthetic runs of direct's model: its built-in proportions (pixel 3 : tap 1) scaled to
    # 4 ns a tap, and a fixed cost of a run of 0.2 ms (its "pass", fitted on its own).
    model = STRATEGIES["direct"]
    true = {"pixel": 12.0, "tap": 4.0, "pass": 2e5}
    rows = []
    for (w, h), spec in [((64, 64), "box:3"), ((512, 512), "disk:radius=4"),
                         ((256, 128), "disk:radius=9"), ((1024, 1024), "laplacian")]:  # fmt: skip
        feats = model.estimate(Kernel.parse(spec), DeviceLimits(), (w, h)).features
        rows.append((feats, sum(true[f] * v for f, v in feats.items())))
    coef, err = calibration._fit(model, rows)
    assert err < 0.02
    for f, v in true.items():
        assert coef[f] == pytest.approx(v, rel=0.05), f


def test_a_table_round_trips_through_the_cache(cache) -> None:
    path = calibration.save_table(a_table(KEY))
    assert path.parent == cache / "blurapp" / "calibration" and path.is_file()
    back = calibration.load_table(KEY)
    assert back is not None and back.coefficients == {"direct": {"pixel": 5.0, "tap": 2.0}}
    table = back.table()
    assert table.name == "calibrated for Test GPU 9000 (Vulkan)" and table.unit_ns == 1.0
    # A strategy the table lacks falls back to its built-in coefficients, in ns.
    assert table.coefficient(STRATEGIES["tiled"], "pixel") == pytest.approx(
        STRATEGIES["tiled"].builtin["pixel"] * planner.BUILTIN_UNIT_NS
    )


@pytest.mark.parametrize(("field", "value"), [("driver", "1.2.4"), ("shaders", "0" * 16)])
def test_a_changed_driver_or_shader_hash_recalibrates(
    cache, monkeypatch: pytest.MonkeyPatch, capsys, field: str, value: str
) -> None:
    calibration.save_table(a_table(KEY))
    now = {**KEY, field: value}
    monkeypatch.setattr(calibration, "adapter_key", lambda ctx: dict(now))
    started = []
    monkeypatch.setattr(calibration, "_start_background", lambda ctx, key: started.append(key))
    table = calibration.ensure_table(fake_ctx())
    assert table is planner.BUILTIN_TABLE and planner.active_table() is planner.BUILTIN_TABLE
    assert started == [now]  # the stale table is not used: a new calibration starts
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stale" in err[0] and field in err[0]
    # The same key as cached: no calibration, the table is installed.
    monkeypatch.setattr(calibration, "adapter_key", lambda ctx: dict(KEY))
    calibration.reset()
    calibration.ensure_table(fake_ctx())
    assert started == [now] and planner.active_table().name.startswith("calibrated for Test GPU")


@pytest.mark.parametrize(
    "junk",
    [b"", b"{not json", b"\xff\xfe\x00", json.dumps({"format": 1}).encode(),
     json.dumps({"format": 1, "key": KEY, "coefficients": {"direct": {"tap": -1}}}).encode(),
     json.dumps({"format": 1, "key": KEY, "coefficients": {"direct": {"tap": "nan"}}}).encode(),
     json.dumps({"format": 99, "key": KEY, "coefficients": {}}).encode(), b"[1, 2]"],
)  # fmt: skip
def test_a_corrupt_file_warns_once_and_never_crashes(
    cache, monkeypatch: pytest.MonkeyPatch, capsys, junk: bytes
) -> None:
    path = calibration.cache_path(KEY)
    path.parent.mkdir(parents=True)
    path.write_bytes(junk)
    monkeypatch.setattr(calibration, "adapter_key", lambda ctx: dict(KEY))
    monkeypatch.setattr(calibration, "_start_background", lambda ctx, key: None)
    for _ in range(3):
        calibration.reset()
        assert calibration.ensure_table(fake_ctx()) is planner.BUILTIN_TABLE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "ignoring" in err[0], err
    # auto still plans, on the built-in costs.
    assert planner.plan(Kernel.parse("gaussian:sigma=2"), DeviceLimits()).strategy == "separable"


def test_off_never_calibrates_and_uses_the_built_in_table(monkeypatch, cache) -> None:
    monkeypatch.setenv(calibration.ENV, "off")
    calibration.save_table(a_table(KEY))
    monkeypatch.setattr(calibration, "adapter_key", lambda ctx: dict(KEY))
    monkeypatch.setattr(calibration, "_start_background", lambda ctx, key: pytest.fail("ran"))
    assert calibration.ensure_table(fake_ctx()) is planner.BUILTIN_TABLE
    assert "off" in calibration.status()


def test_tune_calibrates_saves_and_prints_the_table(gpu, cache, tiny_runs, capsys) -> None:
    from blurapp.cli import main

    assert main(["tune"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"cost table calibrated for {gpu.info['name']} ({gpu.info['backend']})")
    for name in STRATEGIES:
        assert f"  {name:<10} 2 runs, rms error " in out
    key = calibration.adapter_key(gpu)
    saved = calibration.load_table(key)
    assert saved is not None and f"saved to {calibration.cache_path(key)}" in out
    # Every coefficient in the table is a fitted, finite, non-negative number of ns.
    for name, coefs in saved.coefficients.items():
        assert set(coefs) >= set(STRATEGIES[name].builtin)
        assert all(np.isfinite(v) and v >= 0 for v in coefs.values())
    assert planner.active_table().name == saved.name
    # And blurapp.ndimage's choice of reads, measured and kept (blurapp.gpu.ndtune), where
    # there is one (not on wgpu's OpenGL backend: no fused pair reads a texture there).
    if ndtune.applies(NdPasses(gpu)):
        assert "ndimage: fused pairs read " in out and "(measured: texture " in out
        assert ndtune._load(ndtune._key(gpu))["plane_textures"]["textures"] in (True, False)
    else:
        assert "ndimage:" not in out and ndtune._load(ndtune._key(gpu)) is None
    # auto says which table it used.
    chosen = planner.choose(Kernel.parse("disk:radius=3"), gpu.limits, size=(64, 64))
    assert chosen.table == saved.name and "calibrated for" in chosen.explained
    assert main(["tune", "--json", "--dry-run"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (
        data["key"] == key and data["path"] is None and set(data["coefficients"]) == set(STRATEGIES)
    )
    if ndtune.applies(NdPasses(gpu)):
        assert isinstance(data["ndimage"]["textures"], bool)
    else:
        assert data["ndimage"] is None


def test_the_background_calibration_yields_to_user_work(gpu, cache, tiny_runs) -> None:
    calibration.pause()  # as the window's preview would while it works
    try:
        calibration.ensure_table(gpu)
        thread = calibration.background_thread()
        assert thread is not None and thread.is_alive()
        assert "calibrating" in calibration.status()
        time.sleep(1.0)
        assert thread.is_alive()  # held before its first micro-run
        assert not calibration.cache_path(calibration.adapter_key(gpu)).exists()
        # A user's run while it is paused is the user's alone; results are the reference's.
        from blurapp.engine import filter_float

        x = np.random.default_rng(1).random((20, 30, 3), dtype=np.float32)
        _, _, _, reason = filter_float(x, "box:3", "clamp", "auto")
        assert "built-in costs" in reason
    finally:
        calibration.resume()
    thread.join(300)
    assert not thread.is_alive()
    assert calibration.status().startswith("calibrated for") and "quick" in calibration.status()
    assert planner.active_table().calibrated
    assert calibration.load_table(calibration.adapter_key(gpu)) is not None


def test_user_runs_hold_the_calibration_off() -> None:
    stop = threading.Event()
    calibration.note_user_run()
    start = time.monotonic()
    calibration._wait_for_quiet(stop)
    assert time.monotonic() - start >= calibration.YIELD_S * 0.9


def test_a_command_with_the_background_calibration_exits_cleanly(gpu, tmp_path) -> None:
    # The first auto plan on an uncalibrated adapter starts the background calibration; the
    # command ends while it runs: exit 0, its file, no traceback (it is stopped between runs).
    import os
    import subprocess
    import sys

    from blurapp.io import read_image, write_image

    src, out = tmp_path / "in.png", tmp_path / "out.png"
    x = np.random.default_rng(4).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    write_image(src, x)
    env = {**os.environ, calibration.ENV: "auto", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-m", "blurapp", "apply", str(src), "-o", str(out), "--kernel", "box:3"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    import blurapp

    want = blurapp.filter_image(x, "box:3", strategy="cpu").image
    assert np.abs(np.asarray(read_image(out).pixels, int) - want.astype(int)).max() <= 1


def test_a_software_adapter_is_keyed_by_its_thread_count(monkeypatch, cache) -> None:
    # lavapipe with one thread ranks the strategies differently from two (tiled against
    # direct): LP_NUM_THREADS is part of the key and of the file's name; a hardware GPU's is not.
    cpu = fake_ctx(type="cpu")
    monkeypatch.setenv("LP_NUM_THREADS", "1")
    one = calibration.adapter_key(cpu)
    monkeypatch.setenv("LP_NUM_THREADS", "2")
    two = calibration.adapter_key(cpu)
    assert one["threads"] == "1" and two["threads"] in ("1", "2")  # never above the CPUs
    monkeypatch.delenv("LP_NUM_THREADS")
    assert calibration.adapter_key(cpu)["threads"] == calibration.host_threads()
    if two["threads"] == "2":
        assert calibration.cache_path(one) != calibration.cache_path(two)
        calibration.save_table(a_table(one))
        assert calibration.load_table(two) is None and calibration.load_table(one) is not None
    assert "threads" not in calibration.adapter_key(fake_ctx(type="discrete-gpu"))


def test_the_quick_budget_counts_compiles(gpu, monkeypatch) -> None:
    # Each micro-run is predicted from the longest so far (a new pipeline's compile dominates
    # on a software adapter): no run starts that would end past the budget.
    runs = [("direct", 32, 32, "box:3")] * 12
    monkeypatch.setattr(calibration, "_runs", lambda quick: runs)
    spans = []

    def slow(engine, x, kernel, strategy, repeats):
        time.sleep(0.3)
        spans.append(time.perf_counter())
        return 1.0

    monkeypatch.setattr(calibration, "_time_run", slow)
    start = time.perf_counter()
    cal = calibration.calibrate(gpu, quick=True, budget_s=1.0)
    assert time.perf_counter() - start < 1.0 + 0.2
    assert 2 <= len(spans) <= 3 and cal.runs["direct"] == len(spans)
    assert cal.seconds <= 1.0 + 0.2


def test_one_shot_commands_start_no_background_calibration(gpu, tmp_path) -> None:
    # `apply` and `batch` run and exit: a background calibration would be stopped at exit or
    # share the cores with the files. They use a cached table (none here, so the built-in
    # costs); no calibration file appears. An explicit BLURAPP_CALIBRATION=auto is obeyed.
    import os
    import subprocess
    import sys

    from blurapp.io import write_image

    src, out = tmp_path / "in.png", tmp_path / "out.png"
    write_image(src, np.random.default_rng(5).integers(0, 256, (20, 30, 3), dtype=np.uint8))
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != calibration.ENV}
    env["XDG_CACHE_HOME"] = str(cache)
    argv = [sys.executable, "-m", "blurapp", "apply", str(src), "-o", str(out), "-k", "box:3"]
    proc = subprocess.run(
        [*argv, "--timing"], capture_output=True, text=True, env=env, timeout=300
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "(built-in costs)" in proc.stdout + proc.stderr
    assert not (cache / "blurapp" / "calibration").exists()
    env[calibration.ENV] = "auto"  # asked for: the command calibrates while it runs
    proc = subprocess.run(
        [*argv, "--overwrite"], capture_output=True, text=True, env=env, timeout=300
    )  # fmt: skip
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
