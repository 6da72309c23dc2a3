"""Command-line front end: ``blurapp [IMAGE]`` opens the GUI; subcommands run headless.

Every subcommand imports what it needs when it runs, so ``blurapp --help`` and
``blurapp kernel`` start fast and work on a machine with no GPU adapter.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn

from blurapp import __version__
from blurapp.core.errors import BlurappError, UsageError, one_line

SUBCOMMANDS = ("gui", "apply", "batch", "kernel", "bench", "info", "tune", "conv")
#: Commands that run and exit: no background calibration (BLURAPP_CALIBRATION=cache unless set).
ONE_SHOT = ("apply", "batch", "kernel", "conv")
#: Commands whose work starts on the GPU: their device is made on a thread while the command
#: line's own modules import (:func:`_prefetch_device`).
PREFETCH_DEVICE = ("apply", "batch")

#: The signals that stop a command as Ctrl-C does (SIGHUP is not on Windows).
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2), as DESIGN.md asks."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def _cmd_gui(args: argparse.Namespace) -> int:
    from blurapp.ui.app import run_gui

    return run_gui(args.image)


def _cmd_kernel(args: argparse.Namespace) -> int:
    if args.im:
        from blurapp.core.im_kernels import im_string
        from blurapp.core.kernel import Kernel

        print(im_string(Kernel.parse(args.spec)))
        return 0
    from blurapp.kernel_report import format_kernel_report, kernel_report

    report = kernel_report(args.spec, with_plan=not args.no_plan, tolerance=args.tolerance)
    print(json.dumps(report, indent=2) if args.json else format_kernel_report(report))
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    from blurapp.gpu.info import format_report
    from blurapp.io import codecs

    if args.formats:  # no adapter needed
        report: dict[str, object] = {"formats": codecs.format_lines()}
        if args.json:
            report = {"formats": codecs.format_report()}
        print(json.dumps(report, indent=2) if args.json else format_report(report))
        return 0
    from blurapp.gpu.info import adapter_report

    report = adapter_report()
    if args.size:
        report["tiles"] = _tile_report(args)
    report["formats"] = codecs.format_report() if args.json else codecs.format_lines()
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def _tile_report(args: argparse.Namespace) -> dict[str, object]:
    """How an image of ``--size`` would be split into tiles on this adapter."""
    from blurapp.core.filterspec import FilterSpec
    from blurapp.engine import tile_grid

    try:
        width, height = (int(v) for v in args.size.lower().replace("×", "x").split("x"))
    except ValueError:
        raise UsageError(f"--size must be WxH, e.g. 20000x15000, not {args.size!r}") from None
    if width < 1 or height < 1:
        raise UsageError(f"--size must be at least 1x1, not {args.size!r}")
    spec = FilterSpec.create(args.kernel, strategy=args.strategy)
    grid = tile_grid((height, width), spec.kernel, spec.strategy, max_tile_side=args.max_tile_side)
    top, bottom, left, right = grid.halo
    return {
        "image": f"{width}×{height}",
        "kernel": spec.kernel.spec,
        "whole": grid.whole,
        "tiles": grid.count,
        "tile_side": min(grid.side, max(width, height)),
        "halo": f"{top} above, {bottom} below, {left} left, {right} right",
    }


def _cmd_apply(args: argparse.Namespace) -> int:
    from blurapp.batch.commands import run_apply

    return run_apply(args)


def _cmd_batch(args: argparse.Namespace) -> int:
    from blurapp.batch.commands import run_batch

    return run_batch(args)


def _cmd_bench(args: argparse.Namespace) -> int:
    from blurapp.bench import run_bench

    return run_bench(args)


def _cmd_tune(args: argparse.Namespace) -> int:
    from blurapp.tune import run_tune

    return run_tune(args)


def _cmd_conv(args: argparse.Namespace) -> int:
    from blurapp.conv.commands import run_conv

    return run_conv(args)


def build_parser() -> argparse.ArgumentParser:
    """The whole command line; the option sets of apply/batch/bench/conv live beside their code."""
    parser = _Parser(
        prog="blurapp",
        description="Filter images with convolution kernels on the GPU (WebGPU compute shaders).",
        epilog="Run 'blurapp' alone to open the desktop application on a sample photo.",
    )
    parser.add_argument("--version", action="version", version=f"blurapp {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("gui", help="open the desktop application (the default)")
    p.add_argument("image", nargs="?", help="image to open (a bundled sample when omitted)")
    p.set_defaults(func=_cmd_gui)

    from blurapp.core.filterspec import add_tolerance_argument

    p = sub.add_parser("kernel", help="show a kernel: weights, sum, rank, factors and plan")
    p.add_argument("spec", help="kernel spec, e.g. gaussian:sigma=2, box:7x3, @kernel.json")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--no-plan", action="store_true", help="do not ask the GPU adapter for the plan")
    p.add_argument(
        "--im",
        action="store_true",
        help="print the kernel as an ImageMagick kernel string, for -morphology Correlate "
        "(and for im:SPEC)",
    )
    add_tolerance_argument(p)
    p.set_defaults(func=_cmd_kernel)

    from blurapp.batch.options import add_apply_options, add_batch_options

    p = sub.add_parser("apply", help="filter one image into one output file")
    add_apply_options(p)
    p.set_defaults(func=_cmd_apply)

    p = sub.add_parser("batch", help="filter many images into a folder")
    add_batch_options(p)
    p.set_defaults(func=_cmd_batch)

    p = sub.add_parser("info", help="show the GPU adapter, backend, limits and features")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument(
        "--size", metavar="WxH", help="also show the tiles an image of this size runs in"
    )
    p.add_argument("--kernel", default="gaussian:sigma=2", metavar="SPEC", help="kernel for --size")
    p.add_argument("--strategy", default="auto", metavar="S", help="strategy for --size")
    p.add_argument("--max-tile-side", type=int, metavar="N", help="as apply's, for --size")
    p.add_argument(
        "--formats",
        action="store_true",
        help="only the image formats: extensions, pixel types, metadata, frames (no GPU needed)",
    )
    p.set_defaults(func=_cmd_info)

    _add_optional(sub, "bench", "blurapp.bench", "time strategies × sizes × radii", _cmd_bench)
    _add_optional(
        sub, "tune", "blurapp.tune", "calibrate auto's cost table on this adapter", _cmd_tune
    )
    _add_optional(sub, "conv", "blurapp.conv.commands", "convolution-layer lab", _cmd_conv)
    return parser


def _add_optional(
    sub: argparse._SubParsersAction,
    name: str,
    module: str,
    help_text: str,
    func: Callable[[argparse.Namespace], int],
) -> None:
    """Register a subcommand whose options are defined by ``module.add_options`` if it exists."""
    import importlib

    try:
        add_options = importlib.import_module(module).add_options
    except ModuleNotFoundError:
        return
    p = sub.add_parser(name, help=help_text)
    add_options(p)
    p.set_defaults(func=func)


def _tolerant_streams() -> None:
    """Let what blurapp prints (×, σ, →) through streams whose encoding cannot show it
    (PYTHONIOENCODING=ascii, a C locale): such a character becomes '?', not a
    UnicodeEncodeError after the work is done. Strict streams only; an entry point's change."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and getattr(stream, "errors", None) == "strict":
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):  # a stream that cannot change now: leave it
                pass


@contextmanager
def _terminate_as_interrupt(enabled: bool) -> Iterator[None]:
    """SIGTERM (``kill``, a service manager, a CI time limit) and SIGHUP (the terminal closed,
    an ssh session dropped) stop a command as Ctrl-C does: through KeyboardInterrupt, so the
    atomic writer removes its temporary file and the command says "interrupted" (exit 130)
    instead of dying with the file left behind. Not for the GUI (Qt's event loop), nor outside
    the main thread (where no handler can be set)."""
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 1 some inputs failed, 2 usage, 130
    interrupted by Ctrl-C, SIGTERM or SIGHUP).

    An entry point: it makes the process-wide set-up (:func:`blurapp.process.prepare_process`).
    """
    _tolerant_streams()
    args_list = list(sys.argv[1:] if argv is None else argv)
    if not args_list or (args_list[0] not in SUBCOMMANDS and not args_list[0].startswith("-")):
        args_list.insert(0, "gui")
    try:
        with _terminate_as_interrupt(args_list[0] != "gui"):
            return _run(args_list)
    except KeyboardInterrupt:  # at any point, parsing and start-up included
        _say_interrupted()
        return 130
    except Exception as err:
        # Python wraps an interrupt raised inside some machinery (a dataclass's __set_name__
        # while a module is imported) in a RuntimeError: still Ctrl-C, not a failure.
        if not _interrupted(err):
            raise
        _say_interrupted()
        return 130


def _say_interrupted() -> None:
    """The one line of an interrupted command; after SIGHUP the terminal may be gone (EIO),
    and failing to say it must not turn exit 130 into a traceback."""
    try:
        print("blurapp: interrupted", file=sys.stderr)
    except (OSError, ValueError):
        pass


def _interrupted(err: BaseException) -> bool:
    """Whether ``err`` was caused by a KeyboardInterrupt (Ctrl-C, SIGTERM or SIGHUP)."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _prefetch_device(args_list: list[str]) -> threading.Thread | None:
    """For ``apply`` and ``batch`` (not their ``--help``, nor ``--strategy cpu``), make the GPU
    device on a thread now, while the parser's and the command's modules import.

    Creating the device is 0.18 s of a one-shot command on the 2-core test machine (wgpu-native
    and the Vulkan driver loading, the adapters enumerated, almost all in C with the GIL free),
    and the imports before the first file is read are 0.3 s of Python: one after the other
    they were both on the critical path. The command's own ``get_device()`` waits for this one
    (its lock), and a failure here is not kept: that call tries again and reports it.
    """
    if args_list[0] not in PREFETCH_DEVICE or {"-h", "--help"} & set(args_list):
        return None
    for i, arg in enumerate(args_list):
        if arg == "--strategy=cpu" or (arg == "--strategy" and args_list[i + 1 : i + 2] == ["cpu"]):
            return None
    from blurapp.process import prepare_process

    prepare_process()  # the runtime folder and the cffi speed-up, before wgpu starts

    def make() -> None:
        try:
            from blurapp.gpu.device import get_device

            get_device()
        except BaseException:  # said by the command's own call (it tries again), or by none
            pass

    thread = threading.Thread(target=make, name="blurapp-device", daemon=True)
    thread.start()
    return thread


def _run(args_list: list[str]) -> int:
    prefetch = _prefetch_device(args_list)
    try:
        parser = build_parser()
        args = parser.parse_args(args_list)
    except BaseException:
        if prefetch is not None:  # a usage error: no exit while the driver is half made
            prefetch.join()
        raise
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    # After parsing: --help and usage errors stay instant. Before any command: the runtime
    # folder and the cffi speed-up must be in place before Qt or wgpu start.
    from blurapp.process import prepare_process

    prepare_process()
    if args_list[0] in ONE_SHOT:
        # A one-shot command uses the adapter's cached cost table but starts no background
        # calibration: `apply` would stop it at exit, and `batch` would share the cores with
        # its files (six 4K PNGs on lavapipe: 18.6 s against 15.2 s). The window and library
        # callers calibrate in the background; `blurapp tune` calibrates on request.
        os.environ.setdefault("BLURAPP_CALIBRATION", "cache")
    try:
        return int(args.func(args))
    except BlurappError as err:
        print(f"blurapp: error: {one_line(str(err))}", file=sys.stderr)
        return err.exit_code
    except BrokenPipeError:
        return 0


def gui_main(argv: Sequence[str] | None = None) -> int:
    """The ``blurapp-gui`` launcher of desktop menus: ``blurapp gui [IMAGE]``, nothing else.

    Unlike ``blurapp IMAGE``, an image named like a subcommand (``apply``) still opens.

    Arguments:
        argv: the arguments after the program name (``sys.argv[1:]`` when ``None``).

    Returns:
        The exit code, as :func:`main` returns it.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    return main(["gui", *args_list])
