"""``blurapp conv bench``: every strategy and dtype on ResNet-style layers, beside onnxruntime.

Each layer runs on the same random tensors through every GPU strategy × dtype (and the
variants: implicit GEMM double-buffered, Winograd F(4×4,3×3)), and through onnxruntime's CPU
``Conv`` (the model built in memory with the ``onnx`` helper API), in the same process, so the
ratios are of one run. A strategy that cannot run a layer is listed with its one-line reason.
``--overlap`` times the two halves of the implicit GEMM's loop on their own and together,
single- and double-buffered, to show whether loads overlap the multiplies on this adapter.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

import numpy as np

from blurapp.conv.data import relative_error
from blurapp.conv.spec import ConvSpec

__all__ = ["RESNET_LAYERS", "format_bench", "onnxruntime_conv", "overlap_probe", "run_bench"]

RESNET_LAYERS: dict[str, ConvSpec] = {
    "3x3 64→64 56×56": ConvSpec(1, 64, 56, 56, 64, 3, 3, padding=1),
    "1x1 256→64 56×56": ConvSpec(1, 256, 56, 56, 64, 1, 1),
    "depthwise 3x3 128ch 56×56": ConvSpec(1, 128, 56, 56, 128, 3, 3, padding=1, groups=128),
    "3x3 s2 64→128 56×56": ConvSpec(1, 64, 56, 56, 128, 3, 3, stride=2, padding=1),
}


def _tensors(spec: ConvSpec, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((spec.n, spec.cin, spec.h, spec.w)).astype(np.float32)
    w = rng.standard_normal(spec.w_shape).astype(np.float32)
    b = rng.standard_normal(spec.cout).astype(np.float32)
    return x, w, b


def onnxruntime_conv(
    x: np.ndarray, w: np.ndarray, b: np.ndarray, spec: ConvSpec, repeats: int
) -> tuple[np.ndarray, float, str]:
    """onnxruntime's CPU Conv on NCHW ``x``: ``(y, best ms of repeats after a warm-up, version)``.

    Raises:
        ImportError: onnxruntime or onnx is not installed (the ``bench`` extra).
    """
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    node = helper.make_node(
        "Conv",
        ["x", "w", "b"],
        ["y"],
        kernel_shape=[spec.kh, spec.kw],
        strides=[spec.stride] * 2,
        pads=[spec.padding] * 4,
        dilations=[spec.dilation] * 2,
        group=spec.groups,
    )
    graph = helper.make_graph(
        [node],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [
            helper.make_tensor_value_info(
                "y", TensorProto.FLOAT, [spec.n, spec.cout, spec.oh, spec.ow]
            )
        ],
        initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what every onnxruntime ≥ 1.14 reads
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    y = session.run(None, {"x": x})[0]
    best = float("inf")
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        y = session.run(None, {"x": x})[0]
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return y, best, ort.__version__


def _variants(strategies: list[str], dtypes: list[str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(strategy, dtype, extra conv2d keywords) for every row of one layer."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    for strategy in strategies:
        for dtype in dtypes:
            out.append((strategy, dtype, {}))
            if strategy == "implicit-gemm" and dtype != "int8":
                out.append((strategy, dtype, {"double_buffer": True}))
            if strategy == "winograd" and dtype == "float32":
                out.append((strategy, dtype, {"winograd_tile": 4}))
    return out


def _variant_name(strategy: str, extra: dict[str, Any]) -> str:
    if extra.get("double_buffer"):
        return f"{strategy} (double-buffered)"
    if "winograd_tile" in extra:
        m = extra["winograd_tile"]
        return f"{strategy} F({m}×{m},3×3)"
    return f"{strategy} F(2×2,3×3)" if strategy == "winograd" else strategy


def run_bench(
    layers: dict[str, ConvSpec] | None = None,
    *,
    strategies: list[str] | None = None,
    dtypes: list[str] | None = None,
    repeats: int = 3,
    peer: bool = True,
    seed: int = 0,
) -> dict[str, Any]:
    """Time every strategy × dtype on each layer, and onnxruntime beside them.

    Arguments:
        layers: name → layer (default :data:`RESNET_LAYERS`); each in its own layout.
        strategies, dtypes: what to run (default: the engine's registry, every dtype).
        repeats: timed runs per row, best kept (a warm-up first).
        peer: also run onnxruntime's CPU Conv (it must be installed: the ``bench`` extra).

    Returns:
        ``{"layers": [{"name", "spec", "rows": [...], "peer": {...} | None}], "adapter"}``;
        a row has ``strategy``, ``variant``, ``dtype`` and either ``ms``, ``gflops``,
        ``max_relative_error``, ``vs_peer`` (our ms over onnxruntime's), or ``error``.
    """
    from blurapp.conv.data import to_layout
    from blurapp.conv.engine import DTYPES, GPU_STRATEGIES, ConvOptions, conv2d, get_runner
    from blurapp.conv.engine import why_not as strategy_why_not
    from blurapp.conv.reference import conv2d_reference
    from blurapp.core.errors import StrategyError

    runner = get_runner()
    report: dict[str, Any] = {"adapter": runner.context.name, "layers": []}
    for name, spec in (layers or RESNET_LAYERS).items():
        x, w, b = _tensors(spec, seed)
        xs = to_layout(x, spec.layout)
        layer = {
            "stride": spec.stride,
            "dilation": spec.dilation,
            "padding": spec.padding,
            "groups": spec.groups,
            "layout": spec.layout,
        }
        ref = conv2d_reference(xs, w, b, **layer)
        entry: dict[str, Any] = {"name": name, "spec": asdict(spec), "rows": [], "peer": None}
        if peer:
            y, ms, version = onnxruntime_conv(x, w, b, spec, repeats)
            entry["peer"] = {
                "name": f"onnxruntime {version} CPU Conv",
                "ms": ms,
                "gflops": spec.flops / (ms * 1e6),
                "max_relative_error": relative_error(to_layout(y, spec.layout), ref),
            }
        for strategy, dtype, extra in _variants(
            strategies or list(GPU_STRATEGIES), dtypes or list(DTYPES)
        ):
            row: dict[str, Any] = {
                "strategy": strategy,
                "variant": _variant_name(strategy, extra),
                "dtype": dtype,
            }
            opts = ConvOptions(dtype=dtype, **extra)
            problem = strategy_why_not(strategy, spec, runner.limits, opts)
            if problem is None and dtype == "fp16" and "shader-f16" not in runner.context.features:
                problem = "this adapter has no shader-f16"
            if problem:
                row["error"] = problem
                entry["rows"].append(row)
                continue
            try:
                r = conv2d(xs, w, b, strategy=strategy, dtype=dtype, repeats=repeats, **extra,
                           **layer)  # fmt: skip
            except StrategyError as err:
                row["error"] = str(err)
                entry["rows"].append(row)
                continue
            per_image = sum(p.ms for p in r.timing.passes if p.name != "filter-transform")
            row.update(
                ms=r.gpu_ms,
                ms_per_image=per_image,
                gflops=r.gflops,
                max_relative_error=relative_error(r.y, ref),
                passes={p.name: p.ms for p in r.timing.passes},
                timer=r.timing.timer,
            )
            if entry["peer"]:
                row["vs_peer"] = r.gpu_ms / entry["peer"]["ms"]
            entry["rows"].append(row)
        report["layers"].append(entry)
    return report


def overlap_probe(
    spec: ConvSpec | None = None, *, rounds: int = 3, repeats: int = 3, seed: int = 0
) -> dict[str, Any]:
    """Does the double-buffered implicit GEMM overlap its loads with its multiplies here?

    Both schedules run with the same tile (the double-buffered planner's choice), each as
    ``full``, ``load-only`` and ``compute-only``, interleaved over ``rounds`` rounds (best kept:
    the machine's other load only ever adds time). With perfect overlap the double-buffered full
    run takes max(load, compute); with none, load + compute. ``overlap`` is
    (load + compute − full) / min(load, compute): 0 none, 1 complete.
    """
    from blurapp.conv.engine import CONV_STRATEGIES, ConvOptions, get_runner

    spec = spec or RESNET_LAYERS["3x3 64→64 56×56"]
    runner = get_runner()
    x, w, b = _tensors(spec, seed)
    chosen = CONV_STRATEGIES["implicit-gemm"].tiles(
        spec, runner.limits, ConvOptions(double_buffer=True)
    )
    tiles = (*chosen.tile, chosen.cout_block, chosen.cin_block)
    best: dict[tuple[bool, str], float] = {}
    for _ in range(max(1, rounds)):
        for db in (False, True):
            for probe in ("full", "load-only", "compute-only"):
                opts = ConvOptions(double_buffer=db, probe=probe, tiles=tiles)
                r = runner.run(x, w, b, spec, "implicit-gemm", repeats=repeats, opts=opts)
                key = (db, probe)
                best[key] = min(best.get(key, float("inf")), r.gpu_ms)
    out: dict[str, Any] = {"spec": asdict(spec), "tiles": chosen.describe()}
    for db, label in ((False, "single"), (True, "double")):
        load, compute, full = (best[(db, p)] for p in ("load-only", "compute-only", "full"))
        out[label] = {
            "load_ms": load,
            "compute_ms": compute,
            "full_ms": full,
            "sum_ms": load + compute,
            "overlap": (load + compute - full) / min(load, compute),
        }
    return out


def format_bench(report: dict[str, Any]) -> str:
    """The text of ``blurapp conv bench``."""
    lines = [f"adapter: {report['adapter']} (our figures: GPU timestamps; peer: wall clock)"]
    for entry in report.get("layers", []):
        s = entry["spec"]
        lines.append(
            f"\n{entry['name']}: {s['n']}×{s['cin']}×{s['h']}×{s['w']} → {s['cout']}, "
            f"{s['kw']}×{s['kh']} s{s['stride']} p{s['padding']} g{s['groups']}, {s['layout']}"
        )
        lines.append(
            f"  {'implementation':<34} {'dtype':<8} {'ms':>9} {'GFLOP/s':>8} {'error':>8} "
            f"{'× peer':>7}"
        )
        peer = entry["peer"]
        if peer:
            lines.append(
                f"  {peer['name']:<34} {'float32':<8} {peer['ms']:9.2f} {peer['gflops']:8.2f} "
                f"{peer['max_relative_error']:8.1e} {1.0:7.2f}"
            )
        for row in entry["rows"]:
            head = f"  {row['variant']:<34} {row['dtype']:<8}"
            if "error" in row:
                lines.append(f"{head} cannot run: {row['error']}")
                continue
            ratio = f"{row['vs_peer']:7.2f}" if "vs_peer" in row else "      –"
            lines.append(
                f"{head} {row['ms']:9.2f} {row['gflops']:8.2f} {row['max_relative_error']:8.1e} "
                f"{ratio}"
            )
    probe = report.get("overlap")
    if probe:
        lines.append(f"\noverlap probe ({probe['tiles']}), best ms:")
        for label in ("single", "double"):
            o = probe[label]
            lines.append(
                f"  {label}-buffered: load-only {o['load_ms']:.2f}, compute-only "
                f"{o['compute_ms']:.2f}, sum {o['sum_ms']:.2f}, full {o['full_ms']:.2f} → "
                f"overlap {o['overlap']:.2f} (0: none, 1: complete)"
            )
    return "\n".join(lines)
