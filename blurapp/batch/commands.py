"""``blurapp apply`` and ``blurapp batch``: check everything, then filter files into files.

Both check their options, kernel and outputs before reading a single pixel, so that a usage
error (exit 2) never leaves half a run behind.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from blurapp.batch.pipeline import (
    BatchInterrupted,
    EncodeSettings,
    FileRecord,
    process_file,
    run_pipeline,
)
from blurapp.core.errors import OutputError, UsageError, one_line
from blurapp.core.filterspec import FilterSpec
from blurapp.heap import bound_heap

if TYPE_CHECKING:
    from blurapp.pipeline import FilterResult
from blurapp.io import (
    check_name_length,
    check_output,
    check_writable,
    format_from_path,
    output_dtype,
    remove_stale_temporaries,
)

__all__ = ["format_timing", "run_apply", "run_batch", "settings_from_args"]


def settings_from_args(args: argparse.Namespace) -> tuple[FilterSpec, EncodeSettings]:
    """The checked filter spec and encoder settings of apply's or batch's options."""
    spec = FilterSpec.from_namespace(args)
    encode = EncodeSettings(
        quality=args.quality,
        compress_level=args.compress_level,
        lossless=args.lossless,
        overwrite=args.overwrite,
        # 1e308 megapixels is infinite pixels: no limit, not an OverflowError
        max_pixels=int(min(args.max_megapixels * 1e6, sys.maxsize)),
        max_tile_side=args.max_tile_side,
        frame=args.frame,
        raw_linear=args.raw_linear,
    )
    return spec, encode


def format_timing(outcome: FilterResult) -> str:
    """The ``--timing`` lines: strategy and reason, passes, timer, Mpix/s and modelled GB/s."""
    t = outcome.timing
    lines = [
        f"strategy    {outcome.strategy}" + (f"  ({outcome.reason})" if outcome.reason else "")
    ]
    for p in t.passes:
        traffic = f"{p.bytes_modelled / 1e6:10.2f} MB modelled" if p.bytes_modelled else ""
        lines.append(f"pass        {p.name:<12} {p.ms:9.3f} ms  {traffic}".rstrip())
    lines.append(
        f"timer       {t.timer}  (passes {t.total_ms:.3f} ms; whole call {t.wall_ms:.3f} ms, "
        "upload and readback included)"
    )
    if t.first_run:
        lines.append(
            f"compile     {t.compile_ms:.3f} ms of the whole call compiling shaders; a first run "
            "(the driver may finish compiling inside the first passes: warm runs are faster)"
        )
    rate = f"{t.mpix_per_s:.1f} Mpix/s" if t.total_ms > 0 else "n/a"
    if t.bytes_modelled:
        traffic = f"{t.bytes_modelled / 1e6:.2f} MB modelled, {t.gbps_effective:.2f} GB/s"
    else:
        traffic = "no modelled traffic (cpu reference)"
    lines.append(f"throughput  {t.pixels / 1e6:.3f} Mpix at {rate}; {traffic}")
    return "\n".join(lines)


def check_dtype_fits(spec: FilterSpec, formats: Iterable[str]) -> None:
    """Refuse, before any work, a ``--dtype`` that an output's format cannot hold (``--dtype
    float32`` into a PNG would otherwise become 16-bit without a word).

    Raises:
        UsageError: one line naming the formats and what they hold.
    """
    if spec.dtype is None:
        return
    wanted = np.dtype(spec.dtype)
    bad = sorted({f for f in formats if output_dtype(wanted, f) != wanted})
    if not bad:
        return
    from blurapp.io import codecs

    holds = "; ".join(f"{f.upper()} holds {' and '.join(codecs.get_codec(f).dtypes)}" for f in bad)
    raise UsageError(
        f"--dtype {spec.dtype} cannot be written as {', '.join(f.upper() for f in bad)} "
        f"({holds}): write TIFF or .npy, or choose another --dtype"
    )


def run_apply(args: argparse.Namespace) -> int:
    """``blurapp apply IN -o OUT --kernel SPEC ...``; returns the exit code."""
    spec, encode = settings_from_args(args)
    source, output = Path(args.input), Path(args.output)
    fmt = format_from_path(output)
    check_dtype_fits(spec, [fmt])
    if not os.path.lexists(source):
        raise UsageError(f"no such file: {source}")
    check_output(output, overwrite=args.overwrite, inputs=[source])
    _check_adapter(spec)  # exit 2 before the file is read, as batch does
    remove_stale_temporaries(output.parent, [output.name])  # a killed run's leftover
    from blurapp.batch.progress import WorkProgress

    progress = WorkProgress(source.name, enabled=False if args.quiet else None)
    _say_write_notes([fmt])
    try:
        outcome = process_file(
            source, output, fmt, spec, encode, progress=progress.update, note=_say_note
        )
    finally:
        progress.close()
    if args.timing:
        print(format_timing(outcome), file=sys.stderr)
    return 0


def _say_note(text: str) -> None:
    print(f"blurapp: note: {one_line(text)}", file=sys.stderr)


def _say_write_notes(formats: Iterable[str]) -> None:
    """What the output formats lose (GIF's palettes), said once before the work."""
    from blurapp.io import codecs

    for fmt in sorted(set(formats)):
        if codecs.get_codec(fmt).write_note:
            _say_note(codecs.get_codec(fmt).write_note)


def _remove_on_error(created: list[Path]) -> Callable[..., bool]:
    """An ExitStack callback: on an error, remove the folders ``created`` (deepest first) that
    are still empty; a folder with an output in it stays."""

    def remove(exc_type: type[BaseException] | None, *_: object) -> bool:
        if exc_type is not None:
            for folder in created:
                try:
                    os.rmdir(folder)
                except OSError:
                    break
        return False

    return remove


def _check_adapter(spec: FilterSpec) -> None:
    """Fail once, before any work, when the strategy asked for needs a GPU adapter that is
    not there (or BLURAPP_ADAPTER names none); ``auto`` and ``cpu`` run without one."""
    from blurapp.core.strategies import STRATEGIES
    from blurapp.engine import gpu_limits

    if STRATEGIES[spec.strategy].runs_on == "gpu":
        from blurapp.gpu.device import get_device

        get_device()
    elif spec.runs_on_gpu:
        gpu_limits()  # auto: raises only when BLURAPP_ADAPTER names no adapter


def run_batch(args: argparse.Namespace) -> int:
    """``blurapp batch IN... -o DIR --kernel SPEC ...``; returns the exit code (0, 1 or 2)."""
    bound_heap()  # streamed bands are freed by the thousand: give them back (blurapp.heap)
    with ExitStack() as stack:
        # (SIGTERM is Ctrl-C for every command: blurapp.cli.) Whatever stops the run removes
        # the temporary files.
        return _run_batch(args, stack)


def _reserve_report(
    args: argparse.Namespace, rows: list[tuple[str, str]], spec: FilterSpec, stack: ExitStack
) -> BinaryIO:
    """The report's temporary file, opened with an upper bound of its size allocated, so that
    a full disk is a usage error before any work; it is published (or removed) with ``stack``.
    """
    from blurapp.batch.report import report_size_bound
    from blurapp.io import atomic_output

    report = Path(args.report)
    remove_stale_temporaries(report.parent, [report.name])  # a killed run's leftover
    bound = report_size_bound(rows, spec)
    try:
        return stack.enter_context(atomic_output(report, overwrite=args.overwrite, reserve=bound))
    except OutputError as err:
        raise UsageError(str(err)) from None  # names the report and the problem


def _run_batch(args: argparse.Namespace, stack: ExitStack) -> int:
    from blurapp.batch.inputs import expand_inputs, plan_jobs, split_existing
    from blurapp.batch.progress import Progress
    from blurapp.batch.report import build_report, report_text

    spec, encode = settings_from_args(args)
    scheduler = getattr(args, "scheduler", None)
    if scheduler:
        from blurapp.batch.distributed import check_scheduler

        check_scheduler(scheduler)  # a usage error before any work
    out_dir = Path(args.output)
    try:
        if not stat.S_ISDIR(os.stat(out_dir).st_mode):
            raise UsageError(f"-o {out_dir} is not a folder")
    except (FileNotFoundError, NotADirectoryError):
        pass  # made below, or refused there
    except OSError as err:  # a name too long, a loop of links
        raise UsageError(f"cannot use the folder {out_dir}: {err.strerror or err}") from None
    inputs = expand_inputs(args.inputs, recursive=args.recursive, exclude=[out_dir])
    jobs = plan_jobs(inputs, out_dir, fmt=args.format, suffix=args.suffix)
    check_dtype_fits(spec, {j.format for j in jobs})
    check_name_length(j.output for j in jobs)  # a long --suffix: refused now, not per file
    if args.report:  # the report follows the rule of every output, before any work
        check_output(args.report, overwrite=args.overwrite, inputs=inputs)
        report_key = os.path.normcase(os.path.abspath(args.report))
        if any(os.path.normcase(os.path.abspath(j.output)) == report_key for j in jobs):
            raise UsageError(f"the report {args.report} would be one of the outputs")
    to_run, skipped = split_existing(
        jobs, overwrite=args.overwrite, skip_existing=args.skip_existing
    )
    report_fh = None
    if args.report:  # its disk space taken now: a full disk is found before any work
        rows = [(str(j.input), str(j.output)) for j in jobs]
        report_fh = _reserve_report(args, rows, spec, stack)
    if to_run and not scheduler:
        _check_adapter(spec)  # once, not the same line per file
    missing = [out_dir, *out_dir.parents]
    missing = missing[: next((i for i, p in enumerate(missing) if os.path.isdir(p)), 0)]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot create the folder {out_dir}: {err.strerror or err}") from None
    stack.push(_remove_on_error(missing))  # a usage error found later leaves no empty folder
    check_writable(out_dir, f"into {out_dir}")
    # Temporaries of a run killed with kill -9 (unlocked: their writer is gone).
    remove_stale_temporaries(out_dir, [j.output.name for j in jobs])

    progress = Progress(len(to_run), enabled=False if args.quiet else None)
    _say_write_notes(j.format for j in to_run)

    def on_done(record: FileRecord) -> None:
        for text in record.notes:
            progress.message(f"blurapp: note: {one_line(text)}")
        if record.status == "failed":
            message = record.error or ""
            if record.input not in message:  # a filter's message that does not say which file
                message = f"{record.input}: {message}"
            progress.message(f"blurapp: error: {one_line(message)}")
        progress.advance(record.pixels if record.status == "ok" else 0)

    def ordered(records: list[FileRecord]) -> list[FileRecord]:
        skipped_records = [
            FileRecord(str(j.input), str(j.output), status="skipped") for j in skipped
        ]
        by_input = {r.input: r for r in (*records, *skipped_records)}
        return [by_input[str(j.input)] for j in jobs]

    start = time.perf_counter()
    interrupted: BatchInterrupted | None = None
    try:
        if scheduler:
            from blurapp.batch.distributed import run_distributed

            records = run_distributed(to_run, spec, encode, scheduler=scheduler, on_done=on_done)
        else:
            records = run_pipeline(to_run, spec, encode, workers=args.jobs, on_done=on_done)
    except BatchInterrupted as stopped:  # an interrupted run's report still says what was done
        interrupted, records = stopped, stopped.records
    finally:
        progress.close()
    wall_s = time.perf_counter() - start

    rows = ordered(records)
    if report_fh is not None:  # into the space reserved before the work
        report_fh.write(report_text(build_report(rows, spec, wall_s)).encode("ascii"))
        stack.close()  # published now, before the summary line
    if interrupted is not None:
        raise interrupted
    failed = sum(1 for r in rows if r.status == "failed")
    written = sum(1 for r in rows if r.status == "ok")
    if not args.quiet:
        mpix = sum(r.pixels for r in rows if r.status == "ok") / 1e6
        print(
            f"blurapp: {written} written, {failed} failed, {len(skipped)} skipped "
            f"in {wall_s:.1f} s ({mpix / wall_s if wall_s > 0 else 0:.1f} Mpix/s) "
            f"-> {one_line(str(out_dir))}",
            file=sys.stderr,
        )
    return 1 if failed else 0
