"""``blurapp batch --scheduler``: one Dask task per file, every batch contract kept, on a
LocalCluster of two single-threaded worker processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from distributed import LocalCluster, WorkerPlugin
from PIL import Image

from blurapp.batch.distributed import parse_scheduler, run_distributed
from blurapp.batch.pipeline import EncodeSettings, Job
from blurapp.cli import main
from blurapp.core.errors import UsageError
from blurapp.core.filterspec import FilterSpec

KERNEL = ["--kernel", "gaussian:sigma=1.5", "--strategy", "direct"]


@pytest.fixture(scope="module")
def cluster():
    """Two worker processes of one thread each (the machine has two cores)."""
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=":0",
    ) as c:  # fmt: skip
        yield c


def _photos(folder: Path, count: int, size: tuple[int, int] = (48, 64)) -> list[Path]:
    folder.mkdir()
    rng = np.random.default_rng(16)
    paths = []
    for i in range(count):
        path = folder / f"p{i:02d}.png"
        Image.fromarray(rng.integers(0, 256, (*size, 3), dtype=np.uint8)).save(path)
        paths.append(path)
    return paths


def _plain(tmp_path: Path, inputs: Path) -> Path:
    out = tmp_path / "plain"
    assert main(["batch", str(inputs), "-o", str(out), *KERNEL, "--quiet"]) == 0
    return out


def _same_files(a: Path, b: Path) -> None:
    names = sorted(p.name for p in a.iterdir())
    assert names == sorted(p.name for p in b.iterdir())
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_scheduler_values() -> None:
    assert parse_scheduler("local:3") == ("local", 3)
    assert parse_scheduler("10.0.0.5:8786") == ("remote", "10.0.0.5:8786")
    assert parse_scheduler("tcp://sched:8786") == ("remote", "tcp://sched:8786")
    for bad in ("local:0", "local:x", "local:", "sched", "sched:port", ":8786", "h:70000"):
        with pytest.raises(UsageError, match="local:N"):
            parse_scheduler(bad)


def test_bad_scheduler_is_a_usage_error_before_any_work(tmp_path, capsys) -> None:
    _photos(tmp_path / "in", 1)
    code = main(["batch", str(tmp_path / "in"), "-o", str(tmp_path / "out"), *KERNEL,
                 "--scheduler", "local:none"])  # fmt: skip
    assert code == 2 and "local:N" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_local_cluster_writes_the_bytes_of_a_plain_batch(tmp_path, capsys) -> None:
    _photos(tmp_path / "in", 5)
    (tmp_path / "in" / "broken.png").write_bytes(b"not an image")
    out, report = tmp_path / "dask", tmp_path / "report.json"
    code = main(["batch", str(tmp_path / "in"), "-o", str(out), *KERNEL, "--quiet",
                 "--scheduler", "local:2", "--report", str(report)])  # fmt: skip
    assert code == 1  # the broken file failed, the others were written
    err = capsys.readouterr().err
    assert f"cannot read {tmp_path / 'in' / 'broken.png'}: not a" in err
    rows = {Path(f["input"]).name: f for f in json.loads(report.read_text())["files"]}
    assert rows["broken.png"]["status"] == "failed"
    assert all(rows[f"p{i:02d}.png"]["status"] == "ok" for i in range(5))
    assert rows["p00.png"]["size"] == [64, 48] and rows["p00.png"]["strategy"] == "direct"
    (tmp_path / "in" / "broken.png").unlink()
    _same_files(out, _plain(tmp_path, tmp_path / "in"))


def test_existing_outputs_are_refused_or_skipped(tmp_path, capsys) -> None:
    _photos(tmp_path / "in", 3)
    out = tmp_path / "out"
    out.mkdir()
    (out / "p01.png").write_bytes(b"keep me")
    args = ["batch", str(tmp_path / "in"), "-o", str(out), *KERNEL, "--quiet",
            "--scheduler", "local:2"]  # fmt: skip
    assert main(args) == 2
    assert "p01.png" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["p01.png"]
    assert main([*args, "--skip-existing"]) == 0
    assert (out / "p01.png").read_bytes() == b"keep me"
    assert sorted(p.name for p in out.iterdir()) == ["p00.png", "p01.png", "p02.png"]


def test_existing_cluster_and_progress_as_files_finish(tmp_path, cluster) -> None:
    inputs = _photos(tmp_path / "in", 4)
    out = tmp_path / "out"
    out.mkdir()
    jobs = [Job(p, out / p.name, "png") for p in inputs]
    spec = FilterSpec.from_argv(KERNEL)
    seen = []
    records = run_distributed(
        jobs, spec, EncodeSettings(), scheduler=cluster.scheduler_address,
        on_done=lambda r: seen.append(r.input),
    )  # fmt: skip
    assert [r.status for r in records] == ["ok"] * 4
    assert [r.input for r in records] == [str(p) for p in inputs]  # the jobs' order
    assert sorted(seen) == sorted(str(p) for p in inputs)  # one call per file, as they finish
    _same_files(out, _plain(tmp_path, tmp_path / "in"))


def _killer(markers: Path) -> WorkerPlugin:
    """Kills its worker process twice in a batch: as the first file starts, and right after the
    first file is published (before the scheduler hears of it). Defined here so that
    cloudpickle sends it by value."""

    class KillOnce(WorkerPlugin):
        name = "kill-once"

        def setup(self, worker) -> None:
            self.worker = worker

        def transition(self, key, start, finish, **kwargs) -> None:
            if not str(key).startswith("blurapp-file-"):
                return
            before, after = markers / "before-write", markers / "after-publish"
            if finish == "executing" and not before.exists():
                before.write_text(str(key))
                os._exit(1)
            if finish == "memory" and before.exists() and not after.exists():
                row = self.worker.data[key]
                if row["status"] == "ok":
                    st = os.stat(row["output"])
                    after.write_text(json.dumps([row["output"], st.st_ino, st.st_mtime_ns]))
                    os._exit(1)

    return KillOnce()


def test_a_killed_worker_loses_nothing_and_writes_nothing_twice(tmp_path, cluster) -> None:
    from distributed import Client

    _photos(tmp_path / "in", 6)
    markers = tmp_path / "markers"
    markers.mkdir()
    out, report = tmp_path / "out", tmp_path / "report.json"
    args = ["batch", str(tmp_path / "in"), "-o", str(out), *KERNEL, "--quiet",
            "--scheduler", cluster.scheduler_address, "--report", str(report)]  # fmt: skip
    with Client(cluster) as client:
        client.register_plugin(_killer(markers))
        try:
            code = main(args)
        finally:
            client.unregister_worker_plugin("kill-once")
    assert code == 0
    assert (markers / "before-write").exists()  # a worker died as a file started ...
    published, ino, mtime = json.loads((markers / "after-publish").read_text())
    # ... and one right after publishing a file: its retry recognised the file, not rewrote it
    st = os.stat(published)
    assert (st.st_ino, st.st_mtime_ns) == (ino, mtime)
    files = json.loads(report.read_text())["files"]
    assert [f["status"] for f in files] == ["ok"] * 6
    assert all(f["size"] == [64, 48] for f in files)
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temporary files
    _same_files(out, _plain(tmp_path, tmp_path / "in"))


@pytest.mark.slow
def test_ctrl_c_cancels_and_leaves_no_partial_file(tmp_path) -> None:
    # Ctrl-C in a terminal signals the whole process group: the command and its workers.
    _photos(tmp_path / "in", 16, size=(200, 300))
    out, report = tmp_path / "out", tmp_path / "report.json"
    cmd = [sys.executable, "-m", "blurapp", "batch", str(tmp_path / "in"), "-o", str(out),
           "--kernel", "box:41", "--strategy", "cpu", "--quiet", "--scheduler", "local:2",
           "--report", str(report)]  # fmt: skip
    proc = subprocess.Popen(cmd, start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if out.is_dir() and any(p.suffix == ".png" for p in out.iterdir()):
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    written = sorted(p.name for p in out.iterdir())
    assert all(not name.startswith(".") for name in written), written  # no .part left
    assert 0 < len(written) < 16
    for name in written:  # every file there is complete
        assert Image.open(out / name).size == (300, 200)
    rows = json.loads(report.read_text())["files"]
    statuses = {Path(f["output"]).name: f["status"] for f in rows}
    assert {n for n, s in statuses.items() if s == "ok"} == set(written)
    assert set(statuses.values()) <= {"ok", "cancelled"}


@pytest.mark.gpu
def test_correlate_on_the_cluster_equals_filter_image(gpu, cluster) -> None:
    # blurapp.dask on worker processes: each makes its own device; only arrays travel.
    import dask.array as da
    from distributed import Client

    import blurapp
    from blurapp.dask import correlate

    image = np.random.default_rng(9).random((40, 50, 3), dtype=np.float32)
    want = blurapp.filter_image(image, "gaussian:sigma=2", border="wrap", strategy="direct")
    lazy = correlate(da.from_array(image, chunks=(16, 21, 3)), "gaussian:sigma=2", "wrap", "direct")
    with Client(cluster) as client:
        got = client.compute(lazy).result()
    assert np.array_equal(got, want.image)
