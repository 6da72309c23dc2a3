"""The ``blurapp conv`` command line: ``run`` a layer, ``plan`` a tile budget, compare ``layout``s.

``blurapp/cli.py`` calls :func:`add_options` on the ``conv`` subparser and dispatches to
:func:`run_conv`. Nothing here touches the GPU until ``run`` or ``layout`` runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from blurapp.conv.data import relative_error, to_layout
from blurapp.conv.engine import DTYPES, GPU_STRATEGIES
from blurapp.conv.tile_budget import DEFAULT_BUDGET, DTYPE_BYTES, plan_tile
from blurapp.core.errors import UsageError
from blurapp.io import atomic_output, check_output

__all__ = ["add_options", "format_result", "run_conv"]

_STRATEGIES = (*GPU_STRATEGIES, "auto")  # the engine's registry
_LAYOUTS = ("nchw", "nhwc")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer ≥ 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer ≥ 0, got {text!r}")
    return value


def _pair(text: str) -> tuple[int, int]:
    """``"8x4"`` → (8, 4) rows × columns; ``"8"`` → (8, 8)."""
    m = re.fullmatch(r"\s*(\d+)\s*(?:[x×]\s*(\d+))?\s*", text)
    if not m or int(m[1]) < 1 or (m[2] is not None and int(m[2]) < 1):
        raise argparse.ArgumentTypeError(f"expected ROWSxCOLS like 8x8, got {text!r}")
    return int(m[1]), int(m[2] or m[1])


def _kernel(text: str) -> int:
    rows, cols = _pair(text)
    if rows != cols:
        raise argparse.ArgumentTypeError(f"the planner takes square kernels, got {text!r}")
    return rows


def _shape4(text: str) -> tuple[int, int, int, int]:
    parts = re.split(r"[,x×]", text.strip())
    try:
        dims = tuple(int(p) for p in parts)
    except ValueError:
        dims = ()
    if len(dims) != 4 or min(dims) < 1:
        raise argparse.ArgumentTypeError(f"expected N,C,H,W like 1,16,32,32, got {text!r}")
    return dims  # type: ignore[return-value]


def _add_layer_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--stride", type=_positive_int, default=1, metavar="S", help="default 1")
    p.add_argument("--dilation", type=_positive_int, default=1, metavar="D", help="default 1")
    p.add_argument(
        "--padding", type=_non_negative_int, default=0, metavar="P", help="zero padding, default 0"
    )
    p.add_argument(
        "--groups", type=_positive_int, default=1, metavar="G", help="channel groups (C: depthwise)"
    )


def _bench_layer(text: str) -> tuple[int, ...]:
    """``N,C,H,W,COUT,K[,S[,P[,G]]]`` → the integers (stride 1, padding 0, groups 1 default)."""
    try:
        dims = tuple(int(p) for p in text.split(","))
    except ValueError:
        dims = ()
    if not 6 <= len(dims) <= 9 or min(dims) < 0 or min(dims[:6]) < 1:
        raise argparse.ArgumentTypeError(
            f"expected N,C,H,W,COUT,K[,STRIDE[,PADDING[,GROUPS]]] like 1,8,12,12,8,3,1,1, "
            f"got {text!r}"
        )
    return dims


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add the ``run``, ``plan`` and ``layout`` actions to the ``conv`` subparser."""
    parser.description = (
        "Convolution-layer lab: Conv2D (Cin→Cout) on the GPU as direct, im2col + GEMM, "
        "implicit GEMM or Winograd; a tile storage-budget planner; NCHW versus NHWC."
    )
    sub = parser.add_subparsers(dest="conv_command", metavar="ACTION", parser_class=type(parser))

    p = sub.add_parser("run", help="run a Conv2D layer on .npy arrays")
    p.add_argument("--input", required=True, metavar="X.npy", help="(N,C,H,W) or (N,H,W,C)")
    p.add_argument("--weights", required=True, metavar="W.npy", help="(Cout, Cin/groups, kh, kw)")
    p.add_argument("--bias", metavar="B.npy", help="(Cout,)")
    p.add_argument("-o", "--output", required=True, metavar="Y.npy", help="output, X's layout")
    p.add_argument("--overwrite", action="store_true", help="replace Y.npy if it exists")
    _add_layer_options(p)
    p.add_argument("--layout", choices=_LAYOUTS, default="nchw", help="X's (and Y's) layout")
    p.add_argument("--strategy", choices=_STRATEGIES, default="auto", help="default auto")
    p.add_argument(
        "--dtype",
        choices=DTYPES,
        default="float32",
        help="storage and arithmetic: float32 (default), fp16 (f16 storage, f32 sums; needs "
        "shader-f16) or int8 (per-tensor scale and zero point, i32 sums); the output is float32",
    )
    p.add_argument(
        "--winograd-tile",
        type=int,
        choices=(2, 4),
        default=2,
        metavar="M",
        help="winograd's F(M×M,3×3): 2 (default) or 4 (fewer multiplies, more rounding)",
    )
    p.add_argument(
        "--timing",
        action="store_true",
        help="print GPU ms, GFLOP/s, memory used and the GEMM tile sizes",
    )
    p.add_argument(
        "--check", action="store_true", help="also print the error against the float64 reference"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")

    p = sub.add_parser("plan", help="storage budget of one conv tile (no GPU needed)")
    p.add_argument("--tile", type=_pair, required=True, metavar="THxTW", help="output tile")
    p.add_argument("--cin-block", type=_positive_int, required=True, metavar="TC")
    p.add_argument("--cout-block", type=_positive_int, required=True, metavar="TM")
    p.add_argument("--kernel", type=_kernel, required=True, metavar="K", help="square kernel side")
    p.add_argument("--stride", type=_positive_int, default=1, metavar="S")
    p.add_argument("--dilation", type=_positive_int, default=1, metavar="D")
    p.add_argument("--dtype", choices=tuple(DTYPE_BYTES), default="fp32")
    p.add_argument(
        "--budget",
        type=_non_negative_int,
        default=DEFAULT_BUDGET,
        metavar="BYTES",
        help=f"default {DEFAULT_BUDGET} (WebGPU's workgroup-memory default)",
    )
    p.add_argument("--double-buffer", action="store_true", help="two input and weight buffers")
    p.add_argument("--cin", type=_positive_int, metavar="C", help="layer input channels")
    p.add_argument("--cout", type=_positive_int, metavar="M", help="layer output channels")
    p.add_argument(
        "--size", type=_pair, metavar="HxW", help="input size: unique vs loaded input bytes"
    )
    p.add_argument("--padding", type=_non_negative_int, default=0, metavar="P")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "layout", help="NCHW vs NHWC: contiguous runs per window next to measured times"
    )
    p.add_argument(
        "--shape", type=_shape4, required=True, metavar="N,C,H,W", help="input shape (logical)"
    )
    p.add_argument("--cout", type=_positive_int, required=True, metavar="M")
    p.add_argument("--kernel", type=_kernel, default=3, metavar="K", help="default 3")
    _add_layer_options(p)
    p.add_argument(
        "--strategy",
        action="append",
        choices=_STRATEGIES,
        help="strategies to time (repeatable; default: every one that can run the layer)",
    )
    p.add_argument("--repeats", type=_positive_int, default=3, help="timed runs, best kept")
    p.add_argument("--no-run", action="store_true", help="only count the runs (no GPU)")
    p.add_argument("--json", action="store_true", help="print JSON")

    p = sub.add_parser(
        "bench",
        help="ResNet-style layers × every strategy and dtype, beside onnxruntime's CPU Conv",
    )
    p.add_argument(
        "--layer",
        action="append",
        type=_bench_layer,
        metavar="N,C,H,W,COUT,K[,S[,P[,G]]]",
        help="a layer to time instead of the ResNet set (repeatable)",
    )
    p.add_argument("--strategy", action="append", choices=GPU_STRATEGIES, help="repeatable")
    p.add_argument("--dtype", action="append", choices=DTYPES, help="repeatable")
    p.add_argument("--layout", choices=_LAYOUTS, default="nchw", help="default nchw")
    p.add_argument("--repeat", type=_positive_int, default=3, help="timed runs, best kept")
    p.add_argument("--no-peer", action="store_true", help="skip onnxruntime")
    p.add_argument(
        "--overlap",
        action="store_true",
        help="also time the implicit GEMM's loads and multiplies apart, single and double "
        "buffered (on the first layer)",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _load(path: str, what: str) -> np.ndarray:
    try:
        with open(path, "rb") as f:
            magic = f.read(6)
    except FileNotFoundError:
        raise UsageError(f"{what} file {path!r} does not exist") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} file {path!r}: {exc.strerror or exc}") from None
    if magic != b"\x93NUMPY":
        raise UsageError(f"{what} file {path!r} is not a .npy array (save it with numpy.save)")
    _check_declared_size(path, what)
    try:
        arr = np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise UsageError(f"{what} file {path!r} does not exist") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {what} file {path!r} as .npy: {exc}") from None
    if not isinstance(arr, np.ndarray):
        raise UsageError(f"{what} file {path!r} holds several arrays; give one .npy array")
    return arr


def _check_declared_size(path: str, what: str) -> None:
    """Refuse a .npy file whose header declares more data than the file holds, before numpy
    allocates what it declares (a 100-byte file declaring 2**40 values asked for 4 TiB)."""
    fmt = np.lib.format
    try:
        with open(path, "rb") as f:
            version = fmt.read_magic(f)
            reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, _fortran, dtype = reader(f)
            start = f.tell()
            size = os.fstat(f.fileno()).st_size
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {what} file {path!r} as .npy: {exc}") from None
    if dtype.hasobject:
        return  # refused by np.load (allow_pickle=False) with its own line
    need = math.prod(shape) * dtype.itemsize
    if start + need > size:
        raise UsageError(
            f"{what} file {path!r} is truncated or corrupt: its header declares "
            f"{'×'.join(map(str, shape))} {dtype} values ({need:,} bytes) but it holds "
            f"{max(size - start, 0):,}"
        )


def _check_output(args: argparse.Namespace) -> Path:
    """``conv run``'s output, refused before any work when it must not be written: not
    ``.npy``, a missing folder, one of the inputs, not a file, or existing without
    ``--overwrite``."""
    if Path(args.output).suffix != ".npy":
        raise UsageError(f"output {args.output!r} must end in .npy")
    inputs = [p for p in (args.input, args.weights, args.bias) if p]
    return check_output(args.output, overwrite=args.overwrite, inputs=inputs)


def format_result(result: Any, error: float | None = None) -> str:
    """The ``--timing`` text of a :class:`~blurapp.conv.engine.ConvResult`."""
    t, mem, spec = result.timing, result.memory, result.spec
    lines = [
        f"layer: {spec.describe()} → {spec.oh}×{spec.ow} output",
        f"strategy: {result.strategy} ({result.reason}), {result.dtype}"
        + (
            "".join(
                f"; {name} scale {q.scale:.4g} zero point {q.zero_point}"
                for name, q in result.quant.items()
            )
            if result.quant
            else ""
        ),
        f"GPU time: {t.total_ms:.3f} ms ("
        + ", ".join(f"{p.name} {p.ms:.3f} ms" for p in t.passes)
        + f"; {'timestamp queries' if t.timer == 'gpu' else 'wall clock'})",
        f"throughput: {result.gflops:.3f} GFLOP/s ({spec.flops / 1e6:.2f} MFLOP)",
        f"memory: input {mem.input_bytes} B, weights {mem.weight_bytes} B, bias "
        f"{mem.bias_bytes} B, output {mem.output_bytes} B"
        + (
            f", column matrix {mem.column_bytes} B ({mem.blowup:.1f}× the input)"
            if mem.column_bytes
            else ""
        )
        + (f", Winograd transforms {mem.workspace_bytes} B" if mem.workspace_bytes else "")
        + f"; total {mem.total_bytes} B",
    ]
    if result.tiles is not None:
        lines.append(f"tiles: {result.tiles.describe()}")
        lines.extend(f"  {k}: {v}" for k, v in result.tiles.budget.rows()[:5])
    if error is not None:
        lines.append(f"max error vs float64 reference: {error:.3e} (relative to max |y|)")
    return "\n".join(lines)


def _cmd_run(args: argparse.Namespace) -> int:
    from blurapp.conv.engine import conv2d
    from blurapp.conv.reference import conv2d_reference
    from blurapp.conv.spec import ConvSpec, check_host_memory

    target = _check_output(args)
    x = _load(args.input, "input")
    w = _load(args.weights, "weights")
    b = _load(args.bias, "bias") if args.bias else None
    layer = {
        "stride": args.stride,
        "dilation": args.dilation,
        "padding": args.padding,
        "groups": args.groups,
        "layout": args.layout,
    }
    check_host_memory(
        ConvSpec.from_arrays(x.shape, w.shape, bias_shape=None if b is None else b.shape, **layer)
    )
    result = conv2d(
        x,
        w,
        b,
        strategy=args.strategy,
        repeats=3 if args.timing else 1,
        winograd_tile=args.winograd_tile,
        dtype=args.dtype,
        **layer,
    )
    with atomic_output(target, overwrite=args.overwrite) as fh:
        np.save(fh, result.y)
    error = None
    if args.check:
        error = relative_error(result.y, conv2d_reference(x, w, b, **layer))
    if args.json:
        report = result.to_dict()
        report["output"] = args.output
        if error is not None:
            report["max_relative_error"] = error
        print(json.dumps(report, indent=2))
    elif args.timing:
        print(format_result(result, error))
    elif error is not None:
        print(f"max error vs float64 reference: {error:.3e}")
    return 0


def _cmd_plan(args: argparse.Namespace) -> int:
    budget = plan_tile(
        args.tile,
        args.cin_block,
        args.cout_block,
        args.kernel,
        stride=args.stride,
        dilation=args.dilation,
        dtype=args.dtype,
        budget=args.budget,
        double_buffer=args.double_buffer,
        cin=args.cin,
        cout=args.cout,
        size=args.size,
        padding=args.padding,
    )
    if args.json:
        print(json.dumps(budget.to_dict(), indent=2))
    else:
        th, tw = budget.tile
        k = args.kernel
        print(
            f"tile {th}×{tw} outputs, TC={budget.cin_block}, TM={budget.cout_block}, "
            f"{k}×{k} kernel, stride {budget.stride}, dilation {budget.dilation}, {budget.dtype}"
        )
        width = max(len(name) for name, _ in budget.rows())
        for name, value in budget.rows():
            print(f"  {name:<{width}}  {value}")
    return 0


def layout_report(
    shape: tuple[int, int, int, int],
    cout: int,
    kernel: int,
    *,
    stride: int = 1,
    dilation: int = 1,
    padding: int = 0,
    groups: int = 1,
    strategies: list[str] | None = None,
    repeats: int = 3,
    run: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """Window run counts per layout, and (with ``run``) each strategy's time in both layouts.

    Arguments:
        shape: the input's logical ``(N, C, H, W)``.
        cout, kernel: output channels and the square kernel side.
        strategies: strategies to time (default: each one that can run the layer).
        run: time the layer on the GPU (random data, fixed seed).

    Returns:
        ``{"spec": ..., "runs": {"nchw": ..., "nhwc": ...}, "times": [{strategy, layout, ms,
        gflops, max_relative_error}, ...]}``; a strategy that cannot run is listed with ``error``.
    """
    from blurapp.conv.layout import spec_window_runs
    from blurapp.conv.spec import ConvSpec, check_host_memory

    n, c, h, w = shape
    spec = ConvSpec(n, c, h, w, cout, kernel, kernel, stride, dilation, padding, groups, "nchw")
    if run:
        check_host_memory(spec)
    report: dict[str, Any] = {
        "spec": spec.to_dict(),
        "runs": {k: v.to_dict() for k, v in spec_window_runs(spec).items()},
        "times": [],
    }
    if not run:
        return report
    from blurapp.conv.engine import GPU_STRATEGIES, conv2d, get_runner, why_not
    from blurapp.conv.reference import conv2d_reference

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, w)).astype(np.float32)
    wts = rng.standard_normal((cout, c // groups, kernel, kernel)).astype(np.float32)
    limits = get_runner().limits
    for strategy in strategies or list(GPU_STRATEGIES):
        for layout in _LAYOUTS:
            xs = to_layout(x, layout)
            entry: dict[str, Any] = {"strategy": strategy, "layout": layout}
            problem = None if strategy == "auto" else why_not(strategy, spec, limits)
            if problem:
                entry["error"] = problem
            else:
                layer = {
                    "stride": stride,
                    "dilation": dilation,
                    "padding": padding,
                    "groups": groups,
                    "layout": layout,
                }
                r = conv2d(xs, wts, None, strategy=strategy, repeats=repeats, **layer)
                ref = conv2d_reference(xs, wts, None, **layer)
                entry.update(
                    ran=r.strategy,
                    ms=r.gpu_ms,
                    gflops=r.gflops,
                    timer=r.timing.timer,
                    max_relative_error=relative_error(r.y, ref),
                )
            report["times"].append(entry)
    return report


def format_layout_report(report: dict[str, Any]) -> str:
    """The text of ``blurapp conv layout``."""
    s = report["spec"]
    lines = [
        f"layer: {s['n']}×{s['cin']}×{s['h']}×{s['w']} → {s['cout']}ch, {s['kw']}×{s['kh']} "
        f"s{s['stride']} d{s['dilation']} p{s['padding']} g{s['groups']}",
        "one window reads:",
    ]
    for layout, r in report["runs"].items():
        runs = "run" if r["runs"] == 1 else "runs"
        lines.append(
            f"  {layout.upper()}: {r['runs']} contiguous {runs} of {r['run_length']} "
            f"({r['values']} values)"
        )
    if report["times"]:
        lines.append("measured (best of the timed runs):")
        for e in report["times"]:
            head = f"  {e['strategy']:<14} {e['layout'].upper()}"
            if "error" in e:
                lines.append(f"{head}  cannot run: {e['error']}")
            else:
                lines.append(
                    f"{head}  {e['ms']:9.3f} ms  {e['gflops']:8.3f} GFLOP/s  "
                    f"err {e['max_relative_error']:.1e}"
                    + (f"  (ran {e['ran']})" if e["ran"] != e["strategy"] else "")
                )
    return "\n".join(lines)


def _cmd_layout(args: argparse.Namespace) -> int:
    report = layout_report(
        args.shape,
        args.cout,
        args.kernel,
        stride=args.stride,
        dilation=args.dilation,
        padding=args.padding,
        groups=args.groups,
        strategies=args.strategy,
        repeats=args.repeats,
        run=not args.no_run,
    )
    print(json.dumps(report, indent=2) if args.json else format_layout_report(report))
    return 0


def run_conv(args: argparse.Namespace) -> int:
    """Run ``blurapp conv ACTION``; returns the exit code (user errors raise UsageError)."""
    action = getattr(args, "conv_command", None)
    if action == "run":
        return _cmd_run(args)
    if action == "plan":
        return _cmd_plan(args)
    if action == "layout":
        return _cmd_layout(args)
    if action == "bench":
        return _cmd_bench(args)
    raise UsageError("conv needs an action: run, plan, layout or bench (see blurapp conv --help)")


def _cmd_bench(args: argparse.Namespace) -> int:
    from blurapp.conv.bench import RESNET_LAYERS, format_bench, overlap_probe, run_bench
    from blurapp.conv.spec import ConvSpec, check_host_memory

    if args.layer:
        layers = {}
        for dims in args.layer:
            n, c, h, w, cout, k, *rest = dims
            stride, padding, groups = (*rest, *(1, 0, 1)[len(rest) :])
            spec = ConvSpec(n, c, h, w, cout, k, k, stride, 1, padding, groups, args.layout)
            check_host_memory(spec)
            layers[",".join(map(str, dims))] = spec
    else:
        layers = {name: s.with_layout(args.layout) for name, s in RESNET_LAYERS.items()}
    if not args.no_peer:
        try:
            import onnx  # noqa: F401
            import onnxruntime  # noqa: F401
        except ImportError:
            raise UsageError(
                "the onnxruntime peer needs onnxruntime and onnx: pip install 'blurapp[bench]' "
                "(or --no-peer)"
            ) from None
    report = run_bench(
        layers,
        strategies=args.strategy,
        dtypes=args.dtype,
        repeats=args.repeat,
        peer=not args.no_peer,
    )
    if args.overlap:
        first = next(iter(layers.values()))
        report["overlap"] = overlap_probe(first, repeats=args.repeat)
    print(json.dumps(report, indent=2) if args.json else format_bench(report))
    return 0
