"""``blurapp batch --scheduler``: one Dask task per file, on a LocalCluster or an existing one.

Every batch contract holds as in :func:`blurapp.batch.pipeline.run_pipeline`: outputs are
checked before any work (by :func:`blurapp.batch.commands.run_batch`, before it gets here),
written atomically and never replace a file without ``--overwrite``; a bad file is recorded and
the others go on; the progress bar advances as the cluster finishes files (``as_completed``);
Ctrl-C stops every worker at its next step and leaves no partial file.

Nothing made by wgpu crosses a process boundary: a task receives paths and the filter as its
command line (:meth:`FilterSpec.to_argv`) and returns a :class:`FileRecord` as a dict; each
worker process creates its own device on its first file (``BLURAPP_ADAPTER`` picks it).

A worker that dies mid-run (killed, out of memory) loses nothing: the scheduler gives its files
to another worker. A retried file whose output the dead worker had already published (it died
after the atomic publish, before reporting) is recognised, by filtering it again and comparing
the bytes, and reported as written, not as "exists"; the publish never replaces a file, so
nothing is written twice. Temporary files that a dead worker left are removed at the end.
"""

from __future__ import annotations

import contextlib
import dataclasses
import filecmp
import functools
import logging
import os
import re
import signal
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blurapp import pipeline
from blurapp.batch.pipeline import (
    BatchInterrupted,
    EncodeSettings,
    FileRecord,
    Job,
    StreamPlan,
    file_dtype,
    filter_frames,
    linear_curves,
    process_file,
    stream_file,
    stream_plan,
)
from blurapp.core.errors import BlurappError, OutputError, UsageError
from blurapp.core.filterspec import FilterSpec
from blurapp.io import with_pixels, write_image
from blurapp.io.atomic import TEMP_SUFFIX, temp_name

__all__ = ["FileTask", "check_scheduler", "parse_scheduler", "run_distributed", "run_file"]

LOCAL_PREFIX = "local:"


def parse_scheduler(text: str) -> tuple[str, int | str]:
    """``("local", N)`` for ``local:N``, else ``("remote", address)`` for ``HOST:PORT``.

    Raises:
        UsageError: neither form (the message shows both).
    """
    value = text.strip()
    usage = f"--scheduler {text!r}: expected local:N (N worker processes) or HOST:PORT"
    if value.startswith(LOCAL_PREFIX):
        count = value[len(LOCAL_PREFIX) :]
        if not count.isdigit() or not 1 <= int(count) <= 256:
            raise UsageError(f"{usage}, with N from 1 to 256")
        return "local", int(count)
    address = value.split("://", 1)[-1]
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(usage)
    return "remote", value


def check_scheduler(text: str) -> None:
    """Refuse a bad ``--scheduler``, or one without Dask installed, before any work."""
    import importlib.util

    parse_scheduler(text)
    if importlib.util.find_spec("distributed") is None:
        raise UsageError("--scheduler needs Dask distributed: pip install 'blurapp[dask]'")


@dataclass(frozen=True)
class FileTask:
    """One file's work, as plain data (the task's only argument)."""

    input: str  # as given: the record's name for it
    output: str
    source: str  # absolute: what the worker opens
    destination: str
    format: str
    argv: tuple[str, ...]  # the FilterSpec
    encode: EncodeSettings
    existed: bool  # the output existed when the batch started (so --overwrite replaces it)
    stop: str | None  # the name of the distributed Event that Ctrl-C sets


class _StoppedError(Exception):
    """The batch was interrupted: this file is left undone."""


@functools.lru_cache(maxsize=8)
def _spec(argv: tuple[str, ...]) -> FilterSpec:
    return FilterSpec.from_argv(argv)


def _stop_check(name: str | None) -> Callable[[], None]:
    if name is None:
        return lambda: None
    from distributed import Event

    event = Event(name)

    def check() -> None:
        if event.is_set():
            raise _StoppedError

    return check


def _record(task: FileTask, result: pipeline.FilterResult, record: FileRecord) -> None:
    timing = result.timing
    record.strategy, record.reason, record.timer = result.strategy, result.reason, timing.timer
    record.filter_ms = timing.total_ms
    record.gpu_ms = timing.total_ms if timing.timer == "gpu" else None
    record.status = "ok"


def _published_before(task: FileTask, record: FileRecord) -> None:
    """The output appeared after the batch started: a dead worker's attempt at this very file
    published it (then died before reporting), or someone else wrote it. Filtering again into a
    private folder and comparing the bytes tells which; equal bytes are this file's output."""
    with tempfile.TemporaryDirectory(prefix="blurapp-retry-") as folder:
        probe = Path(folder) / Path(task.destination).name
        plain = dataclasses.replace(task.encode, overwrite=False)
        spec = _spec(task.argv)
        plan = _band_plan_of(task, spec)  # written as run_file writes it, to compare bytes
        if plan is not None:
            result = stream_file(Path(task.source), probe, spec, plain, plan)
        else:
            result = process_file(Path(task.source), probe, task.format, spec, plain)
        if not filecmp.cmp(probe, task.destination, shallow=False):
            raise OutputError(f"{task.output} exists (use --overwrite to replace it)")
    _record(task, result, record)


_slot: int | None = None  # this worker's place among a LocalCluster's workers (adapter choice)


def _choose_adapter() -> None:
    """On a machine with several GPUs, spread a LocalCluster's workers over them: worker k uses
    the k-th hardware adapter, unless BLURAPP_ADAPTER says otherwise. Done on the first file,
    not at start-up: a worker makes no device before it has work."""
    global _slot
    if _slot is None:
        return
    slot, _slot = _slot, None
    from blurapp.gpu.device import ADAPTER_ENV, list_adapters

    if os.environ.get(ADAPTER_ENV):
        return
    native = {"Vulkan", "Metal", "D3D12"}
    hardware = [
        i for i, a in enumerate(list_adapters()) if a["type"] != "cpu" and a["backend"] in native
    ]
    if len(hardware) > 1:
        # The worker process's own set-up (its entry point), read by get_device.
        os.environ[ADAPTER_ENV] = str(hardware[slot % len(hardware)])


def _as_given(task: FileTask, message: str) -> str:
    """A message with the paths as the user gave them, as a plain batch says them."""
    return message.replace(task.source, task.input).replace(task.destination, task.output)


def run_file(task: FileTask) -> dict[str, Any]:
    """Read, filter and write one file on a worker; the :class:`FileRecord` as a dict.

    Never raises for a bad file: the record says ``failed`` and why (one line), or
    ``cancelled`` when the batch was interrupted before the file was written.
    """
    record = FileRecord(task.input, task.output)
    started = time.perf_counter()
    check = _stop_check(task.stop)
    try:
        check()
        _choose_adapter()
        spec = _spec(task.argv)
        if not task.existed and os.path.lexists(task.destination):
            _published_before(task, record)
        elif (plan := _band_plan_of(task, spec)) is not None:
            # A PNG into a PNG a band at a time, as plain batch runs it: the same bytes.
            result = stream_file(
                task.source, task.destination, spec, task.encode, plan, check=check
            )
            _record(task, result, record)
        else:
            image = task.encode.read(task.source)  # --frame and --raw-linear as batch's
            height, width = image.pixels.shape[:2]
            record.width, record.height = width, height
            record.channels, record.dtype = image.channels, image.pixels.dtype.name
            record.frames, record.notes = image.frame_count, image.notes
            dtype = file_dtype(spec, image.pixels.dtype, task.format)
            if image.frame_count > 1:  # every frame, as batch does
                result, filtered = filter_frames(image, spec, dtype, task.encode, check=check)
            else:
                result = pipeline.filter_pixels(
                    image.pixels, spec, dtype=dtype, max_tile_side=task.encode.max_tile_side,
                    check=check, curves=linear_curves(spec, image.icc_profile),
                )  # fmt: skip
                filtered = with_pixels(image, result.image)
            check()
            del image
            enc = task.encode
            write_image(
                task.destination, filtered, fmt=task.format, quality=enc.quality,
                compress_level=enc.compress_level, lossless=enc.lossless, overwrite=enc.overwrite,
            )  # fmt: skip
            _record(task, result, record)
    except _StoppedError:
        record.status = "cancelled"
    except BlurappError as err:
        record.status, record.error = "failed", _as_given(task, str(err))
    except Exception as err:  # a bug or an odd file must not stop the other files
        record.status, record.error = "failed", _as_given(task, f"{type(err).__name__}: {err}")
    if record.width is None and record.status == "ok":
        with contextlib.suppress(Exception):
            from blurapp.io import probe_image

            info = probe_image(task.source)
            record.width, record.height = info.width, info.height
            record.channels, record.dtype = info.channels, info.dtype.name
    record.total_ms = (time.perf_counter() - started) * 1e3
    row = dataclasses.asdict(record)
    row.pop("started")
    return row


def _band_plan_of(task: FileTask, spec: FilterSpec) -> StreamPlan | None:
    """The band plan plain batch would use for this file (:func:`stream_plan`), or ``None``."""
    from blurapp.io import check_pixel_limit, probe_image

    info = probe_image(task.source)
    check_pixel_limit(task.source, info, task.encode.max_pixels)
    plan = stream_plan(task.source, info, task.format, spec, task.encode, bands=True)
    return plan if plan is not None and plan.kind == "png" else None


def _worker_plugin(local: bool) -> Any:
    from distributed import WorkerPlugin

    class BlurappWorker(WorkerPlugin):
        """Each worker process's set-up (its entry point for blurapp): blurapp's process-wide
        changes; on a LocalCluster, its place among the workers for the adapter choice, and
        Ctrl-C left to the command, which stops the workers' files cleanly (a terminal's
        Ctrl-C reaches the whole process group, and a worker killed mid-write would leave
        its temporary file)."""

        name = "blurapp"

        def setup(self, worker: Any) -> None:
            global _slot
            from blurapp.process import prepare_process

            prepare_process()
            if local:
                if isinstance(worker.name, int):
                    _slot = worker.name
                if threading.current_thread() is threading.main_thread():
                    signal.signal(signal.SIGINT, signal.SIG_IGN)

    return BlurappWorker()


@contextlib.contextmanager
def _client(scheduler: str) -> Iterator[Any]:
    """A distributed Client on a new LocalCluster (closed afterwards) or an existing one."""
    kind, where = parse_scheduler(scheduler)
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise UsageError(
            "--scheduler needs Dask distributed: pip install 'blurapp[dask]'"
        ) from None
    if kind == "local":
        # The scheduler serves HTTP (health, metrics) even without a dashboard: on a free port,
        # not on 8787, which another cluster may hold.
        cluster = LocalCluster(
            n_workers=int(where), threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address=":0", silence_logs=logging.ERROR,
        )  # fmt: skip
        try:
            with Client(cluster) as client:
                client.register_plugin(_worker_plugin(local=True))
                yield client
        finally:
            cluster.close()
        return
    try:
        client = Client(str(where), timeout="10s")
    except OSError as err:
        raise UsageError(f"--scheduler {where}: cannot reach the scheduler ({err})") from None
    try:
        client.register_plugin(_worker_plugin(local=False))
        yield client
    finally:
        client.close()


def _remove_orphans(jobs: Sequence[Job]) -> None:
    """Remove the temporary files that workers killed while writing left beside the outputs
    (every task of the batch has ended, so none of them is being written)."""
    for job in jobs:
        folder = job.output.parent
        sample = temp_name(folder, job.output.name)  # ".<name>.<8 hex>.part", name cut to fit
        prefix = sample[: -(8 + len(TEMP_SUFFIX))]
        pattern = re.compile(re.escape(prefix) + r"[0-9a-f]{8}" + re.escape(TEMP_SUFFIX))
        with contextlib.suppress(OSError):
            for entry in os.scandir(folder):
                if pattern.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    with contextlib.suppress(OSError):
                        os.unlink(entry.path)


def run_distributed(
    jobs: Sequence[Job],
    spec: FilterSpec,
    encode: EncodeSettings,
    *,
    scheduler: str,
    on_done: Callable[[FileRecord], None] | None = None,
) -> list[FileRecord]:
    """Run ``jobs`` on Dask, one task per file, as :func:`run_pipeline` runs them on threads.

    Arguments:
        jobs: the files to do (existing outputs already refused or skipped).
        spec, encode: the filter and the encoder settings.
        scheduler: ``local:N`` (a LocalCluster of N single-threaded worker processes, closed
            at the end) or ``HOST:PORT`` of a running ``dask scheduler``; the paths must be the
            same on every worker (a shared file system).
        on_done: called in this thread with each finished record, as the cluster finishes them.

    Returns:
        One :class:`FileRecord` per job, in the jobs' order.

    Raises:
        BatchInterrupted: Ctrl-C; the files in flight were finished or left unwritten (their
            records say which), and the rest are ``cancelled``.
        UsageError: a bad ``scheduler``, no Dask, or an unreachable scheduler.
    """
    parse_scheduler(scheduler)  # a usage error before anything starts
    records = [FileRecord(str(j.input), str(j.output)) for j in jobs]
    if not jobs:
        return records
    argv = tuple(spec.to_argv())
    with _client(scheduler) as client:
        from distributed import Event, as_completed, wait

        stop_name = f"blurapp-stop-{uuid.uuid4().hex}"
        stop = Event(stop_name, client=client)
        resources = None
        workers = client.scheduler_info().get("workers", {})
        if spec.runs_on_gpu and any("GPU" in w.get("resources", {}) for w in workers.values()):
            resources = {"GPU": 1}  # one file per GPU at a time on workers that declare GPUs
        tasks = iter(enumerate(jobs))
        futures = as_completed()
        index_of: dict[str, int] = {}  # the files in flight: task key -> job index
        in_flight: dict[str, Any] = {}  # task key -> future

        sized = [0.0, 2]  # when the window was last sized, and its size

        def window() -> int:
            # Files in flight: enough to keep every worker thread busy, few enough that a
            # million-file batch does not become a million futures, and Ctrl-C waits for few.
            # Sized again every second: workers may join or leave.
            now = time.monotonic()
            if now - sized[0] > 1.0:
                sized[:] = [now, max(2, 2 * sum(client.nthreads().values()))]
            return int(sized[1])

        def submit(count: int) -> None:
            for _ in range(count):
                nxt = next(tasks, None)
                if nxt is None:
                    return
                i, job = nxt
                task = FileTask(
                    str(job.input), str(job.output), os.path.abspath(job.input),
                    os.path.abspath(job.output), job.format, argv, encode,
                    os.path.lexists(job.output), stop_name,
                )  # fmt: skip
                future = client.submit(
                    run_file, task, key=f"blurapp-file-{stop_name[-12:]}-{i}", pure=False,
                    resources=resources,
                )  # fmt: skip
                index_of[future.key] = i
                in_flight[future.key] = future
                futures.add(future)

        def settle(future: Any) -> FileRecord:
            # Idempotent, and the file leaves the in-flight set only once its record is in:
            # Ctrl-C may strike anywhere in here, and then every file still in flight is
            # settled again.
            i = index_of[future.key]
            try:
                row = future.result()
            except Exception as err:  # KilledWorker: the file took down several workers
                row = {**dataclasses.asdict(records[i]), "status": "failed"}
                row.pop("started")
                row["error"] = f"{type(err).__name__}: {err}".strip()
            records[i] = FileRecord(**row)
            index_of.pop(future.key, None)
            in_flight.pop(future.key, None)
            return records[i]

        interrupted = False
        try:
            submit(window())
            for future in futures:
                record = settle(future)
                if on_done is not None:
                    on_done(record)
                submit(window() - len(index_of))
        except KeyboardInterrupt:
            interrupted = True
            stop.set()  # the files in flight end at their next step; no more are submitted
            last = list(in_flight.values())
            wait(last)
            for future in last:
                settle(future)
        finally:
            if not interrupted or not index_of:
                _remove_orphans(jobs)
    for record in records:
        if record.status == "pending":
            record.status = "cancelled"
    if interrupted:
        raise BatchInterrupted(records)
    return records
