"""FilterSpec: the one request object that decides the pixels, checked once where it enters.

The command line (``apply``, ``batch``), the GUI's model and the Python API build a
:class:`FilterSpec` and hand it down to :mod:`blurapp.pipeline`; nothing below re-parses a
border or re-checks a strategy. :meth:`FilterSpec.to_argv` and :meth:`FilterSpec.from_argv`
are inverse (``from_argv(s.to_argv()) == s``), so the GUI's "Export CLI" reproduces what is
on screen by construction. The argparse options live here too (:func:`add_filter_arguments`),
so the command line and the round trip cannot drift apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from blurapp.core.borders import BORDER_MODES, Border
from blurapp.core.errors import StrategyError, UsageError
from blurapp.core.kernel import Kernel
from blurapp.core.lowrank import DEFAULT_TOLERANCE, check_tolerance
from blurapp.core.numbers import RANGE_MODES, SUPPORTED_DTYPES
from blurapp.core.planner import TILE_SIDES
from blurapp.core.strategies import STRATEGIES, get_info

__all__ = [
    "ALPHA_MODES",
    "DTYPES",
    "FilterSpec",
    "add_filter_arguments",
    "add_tolerance_argument",
]

ALPHA_MODES: tuple[str, ...] = ("premultiply", "straight")
DTYPES: tuple[str, ...] = tuple(d.name for d in SUPPORTED_DTYPES)


@dataclass(frozen=True)
class FilterSpec:
    """Everything that decides the output pixels; build it with :meth:`create`.

    Attributes:
        kernel: the kernel as the user gave it (``convolve`` flips it when it runs).
        border: the border mode.
        strategy: a name of :data:`blurapp.core.strategies.STRATEGIES`.
        tile: the tile side for strategies that take one (``tiled``, and ``auto`` when it
            picks tiled); ``None`` lets the planner choose. Always ``None`` for the others.
        convolve: flip the kernel (true convolution instead of correlation).
        range_mode: how signed results map into integer outputs (DESIGN.md "Numbers").
        alpha: ``premultiply`` (filter colour weighted by alpha: no fringes) or ``straight``.
        linear: filter in linear light (sRGB decoded before, encoded after).
        dtype: the output's pixel type by name, or ``None`` for the input's (as far as the
            output file format holds it).
        tolerance: the output error ``lowrank`` may make per unit of max |input|
            (:mod:`blurapp.core.lowrank`), for strategies that take one (``lowrank``, and
            ``auto`` when it picks lowrank); ``None``: the default, half an 8-bit step.
            Always ``None`` for the others.
        channels: the channels filtered, as letters of ``rgba`` (GIMP's channel toggles:
            ``rgb`` keeps alpha as it is); the others are copied from the input. ``None``:
            all. A grey image's one colour channel is filtered when any of r, g, b is.
    """

    kernel: Kernel
    border: Border = field(default_factory=lambda: Border.parse("clamp"))
    strategy: str = "auto"
    tile: int | None = None
    convolve: bool = False
    range_mode: str = "clamp"
    alpha: str = "premultiply"
    linear: bool = False
    dtype: str | None = None
    tolerance: float | None = None
    channels: str | None = None

    @classmethod
    def create(
        cls,
        kernel: Kernel | str,
        border: Border | str = "clamp",
        strategy: str = "auto",
        tile: int | None = None,
        *,
        convolve: bool = False,
        range_mode: str = "clamp",
        alpha: str = "premultiply",
        linear: bool = False,
        dtype: str | np.dtype | type | None = None,
        tolerance: float | None = None,
        channels: str | None = None,
    ) -> FilterSpec:
        """A checked spec; every bad value is a :class:`UsageError` naming it (exit 2).

        Arguments:
            kernel: a :class:`Kernel` or a spec string (``"gaussian:sigma=2"``).
            border: a :class:`Border` or a border name (``"mirror"``, ``"constant=0.5"``).
            strategy: a registered strategy name.
            tile: 8, 16 or 32 for ``tiled``/``auto``; ignored (stored as ``None``) otherwise.
            convolve, range_mode, alpha, linear, dtype: see the class attributes.
            tolerance: a number > 0 for ``lowrank``/``auto``; ignored (stored as ``None``)
                otherwise, and ``None`` when it is the default.
        """
        k = Kernel.parse(kernel)
        info = get_info(strategy)
        if tile is not None and info.takes_tile:
            if isinstance(tile, bool) or not isinstance(tile, (int, np.integer)):
                raise StrategyError(f"tile must be an integer, not {tile!r}")
            if int(tile) not in TILE_SIDES:
                sides = ", ".join(map(str, sorted(TILE_SIDES)))
                raise StrategyError(f"tile size {tile} is not one of {sides}")
        tile = int(tile) if tile is not None and info.takes_tile else None
        tol = check_tolerance(tolerance) if tolerance is not None else None
        if not info.takes_tolerance or tol == DEFAULT_TOLERANCE:
            tol = None
        problem = info.why_not(k.for_convolution() if convolve else k, tol)
        if problem:
            raise StrategyError(problem)
        if range_mode not in RANGE_MODES:
            raise UsageError(f"unknown range mode {range_mode!r}; valid: {', '.join(RANGE_MODES)}")
        if alpha not in ALPHA_MODES:
            raise UsageError(f"unknown alpha mode {alpha!r}; valid: {', '.join(ALPHA_MODES)}")
        name: str | None = None
        if dtype is not None:
            try:
                name = np.dtype(dtype).name  # type: ignore[arg-type]
            except TypeError:
                name = str(dtype)
            if name not in DTYPES:
                raise UsageError(f"unknown output pixel type {dtype!r}; valid: {', '.join(DTYPES)}")
        return cls(
            k, Border.parse(border), strategy, tile, bool(convolve), range_mode, alpha,
            bool(linear), name, tol, _check_channels(channels),
        )  # fmt: skip

    @classmethod
    def of(cls, kernel: Kernel | str | FilterSpec, **options: Any) -> FilterSpec:
        """The spec the Python API's arguments describe: ``kernel`` itself when it is a whole
        FilterSpec (then no ``options``), else :meth:`create` with ``options`` (``border``,
        ``strategy``, ``tile``, ``convolve``, ``range_mode``, ``alpha``, ``linear``, ``dtype``,
        ``tolerance``, ``channels``); an unknown option is a one-line UsageError."""
        if isinstance(kernel, FilterSpec):
            if options:
                raise UsageError(
                    f"pass either a FilterSpec or filter options ({', '.join(sorted(options))}), "
                    "not both"
                )
            return kernel
        unknown = sorted(set(options) - set(_OPTIONS))
        if unknown:
            raise UsageError(
                f"unknown filter option {unknown[0]!r}; the options are {', '.join(_OPTIONS)}"
            )
        return cls.create(kernel, **options)

    def replace(self, **changes: Any) -> FilterSpec:
        """A checked copy with ``changes`` (the same keywords as :meth:`create`)."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        values.update(changes)
        return FilterSpec.create(
            values.pop("kernel"), values.pop("border"), values.pop("strategy"),
            values.pop("tile"), **values,
        )  # fmt: skip

    @property
    def effective_kernel(self) -> Kernel:
        """The kernel applied as correlation: :meth:`Kernel.for_convolution` when ``convolve``
        is set (``scipy.ndimage.convolve``, even sizes included)."""
        return self.kernel.for_convolution() if self.convolve else self.kernel

    @property
    def runs_on_gpu(self) -> bool:
        """Whether the strategy asked for may use the GPU (``auto`` may)."""
        return STRATEGIES[self.strategy].runs_on != "cpu"

    def output_dtype(self, input_dtype: np.dtype | type) -> np.dtype:
        """The pixel type of the result for an input of ``input_dtype``."""
        return np.dtype(self.dtype) if self.dtype is not None else np.dtype(input_dtype)

    # ------------------------------------------------------------------ command line

    def to_argv(self) -> list[str]:
        """The command-line options that build this spec (``from_argv`` gives it back)."""
        argv = ["--kernel", self.kernel.spec, "--border", self.border.name]
        argv += ["--strategy", self.strategy]
        if self.tile is not None:
            argv += ["--tile", str(self.tile)]
        if self.convolve:
            argv.append("--convolve")
        if self.range_mode != "clamp":
            argv += ["--range", self.range_mode]
        if self.alpha != "premultiply":
            argv += ["--alpha", self.alpha]
        if self.linear:
            argv.append("--linear")
        if self.dtype is not None:
            argv += ["--dtype", self.dtype]
        if self.tolerance is not None:
            argv += ["--tolerance", repr(self.tolerance)]
        if self.channels is not None:
            argv += ["--channels", self.channels]
        return argv

    def filters_channel(self, index: int, channels: int) -> bool:
        """Whether channel ``index`` of an image with ``channels`` channels is filtered (the
        last of 2 or 4 is alpha; a grey image's first is its colour)."""
        if self.channels is None:
            return True
        if channels in (2, 4) and index == channels - 1:
            return "a" in self.channels
        if channels <= 2:
            return any(c in self.channels for c in "rgb")
        return "rgb"[index] in self.channels

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> FilterSpec:
        """The spec of parsed options added by :func:`add_filter_arguments`."""
        return cls.create(
            args.kernel,
            args.border,
            args.strategy,
            args.tile,
            convolve=args.convolve,
            range_mode=args.range_mode,
            alpha=args.alpha,
            linear=args.linear,
            dtype=args.dtype,
            tolerance=args.tolerance,
            channels=args.channels,
        )

    @classmethod
    def from_argv(cls, argv: Sequence[str]) -> FilterSpec:
        """The spec of command-line options (only the filter's; others are an error)."""
        parser = _RaisingParser(prog="blurapp", add_help=False)
        add_filter_arguments(parser)
        return cls.from_namespace(parser.parse_args(list(argv)))


#: The options of FilterSpec.create besides the kernel (the Python API's keywords).
_OPTIONS: tuple[str, ...] = tuple(
    name for name in inspect.signature(FilterSpec.create).parameters if name != "kernel"
)


def _check_channels(channels: str | None) -> str | None:
    """``channels`` in canonical order (``None`` for all), or a UsageError naming it."""
    if channels is None:
        return None
    text = str(channels).strip().lower()
    if not text or any(c not in "rgba" for c in text) or len(set(text)) != len(text):
        raise UsageError(
            f"channels must be letters of rgba, each at most once (e.g. rgb), not {channels!r}"
        )
    ordered = "".join(c for c in "rgba" if c in text)
    return None if ordered == "rgba" else ordered


class _RaisingParser(argparse.ArgumentParser):
    """argparse that raises UsageError instead of printing usage and exiting."""

    def error(self, message: str) -> Any:
        raise UsageError(f"bad filter options: {message}")


def add_filter_arguments(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add the options that build a :class:`FilterSpec` (apply, batch, the round trip)."""
    strategies = ", ".join(STRATEGIES)
    p.add_argument(
        "--kernel",
        "-k",
        required=True,
        metavar="SPEC",
        help="kernel spec, e.g. gaussian:sigma=2, box:7x3, sobel:x, @kernel.json",
    )
    p.add_argument(
        "--border",
        default="clamp",
        metavar="MODE",
        help=f"{', '.join(BORDER_MODES)} or constant=V (default: clamp)",
    )
    p.add_argument(
        "--strategy",
        default="auto",
        metavar="S",
        help=f"{strategies} (default: auto, the planner picks and says why)",
    )
    p.add_argument(
        "--tile",
        type=int,
        metavar="T",
        help=f"tile side for --strategy tiled: {', '.join(map(str, sorted(TILE_SIDES)))}",
    )
    p.add_argument(
        "--convolve", action="store_true", help="flip the kernel (convolution, not correlation)"
    )
    p.add_argument(
        "--range",
        dest="range_mode",
        default="clamp",
        metavar="MODE",
        help=f"signed results in integer files: {', '.join(RANGE_MODES)} (default: clamp)",
    )
    p.add_argument(
        "--alpha",
        choices=ALPHA_MODES,
        default="premultiply",
        help="images with alpha: filter premultiplied colour (default, no fringes) or straight",
    )
    p.add_argument(
        "--linear",
        action="store_true",
        help="filter in linear light: sRGB decoded before, encoded after",
    )
    p.add_argument(
        "--dtype",
        metavar="TYPE",
        help=f"output pixel type: {', '.join(DTYPES)} (default: the input's, as far as the "
        "output format holds it)",
    )
    add_tolerance_argument(p)
    p.add_argument(
        "--channels",
        metavar="RGBA",
        help="filter only these channels, e.g. rgb (alpha kept) or a; the others are copied "
        "from the input (default: all)",
    )


def add_tolerance_argument(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--tolerance E`` (apply, batch, bench, kernel): lowrank's error bound, checked."""
    p.add_argument(
        "--tolerance",
        type=_tolerance,
        metavar="E",
        help="for --strategy lowrank (and auto when it picks it): the largest output error "
        "per unit of the data range; lowrank uses the fewest separable pairs within it "
        f"(default: {DEFAULT_TOLERANCE:.3g}, half an 8-bit step)",
    )


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}") from None
    try:
        return check_tolerance(value)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
