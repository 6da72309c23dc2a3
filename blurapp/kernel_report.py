"""What ``blurapp kernel`` shows: weights, sum, rank, singular values, factors, taps and plan."""

from __future__ import annotations

from typing import Any

import numpy as np

from blurapp.core.kernel import Kernel

MAX_PRINTED_SIDE = 25  # wider kernels are summarised in text; --json always has every weight


def kernel_report(
    spec: str | Kernel, *, with_plan: bool = True, tolerance: float | None = None
) -> dict[str, Any]:
    """Describe a kernel as a JSON-ready dict.

    Arguments:
        spec: a kernel spec string or a :class:`Kernel`.
        with_plan: ask the GPU adapter (created lazily) which strategy ``auto`` would run.
        tolerance: lowrank's ``--tolerance`` (``None``: the default), for ``lowrank`` and the
            plan.

    Returns:
        A dict with ``spec``, ``name``, ``width``, ``height``, ``anchor``, ``weights`` (rows),
        ``sum``, ``rank``, ``tolerance``, ``singular_values``, ``factors``
        (``{"column": [...], "row": [...]}`` or ``None``), ``approximation_errors``,
        ``taps``, ``lowrank`` (``{"k", "error", "tolerance", "exact", "summary"}``, or
        ``{"refused": reason}``) and ``plan``.
    """
    from blurapp.core import lowrank

    kernel = spec if isinstance(spec, Kernel) else Kernel.parse(spec)
    sep = kernel.separability
    rows, cols = kernel.shape
    factors = None
    if sep.rank == 1 and sep.column is not None and sep.row is not None:
        factors = {"column": sep.column.tolist(), "row": sep.row.tolist()}
    report: dict[str, Any] = {
        "spec": kernel.spec,
        "name": kernel.name,
        "width": cols,
        "height": rows,
        "anchor": list(kernel.anchor),
        "weights": kernel.weights.tolist(),
        "sum": float(kernel.weights.sum()),
        "rank": int(sep.rank),
        "tolerance": float(sep.tolerance),
        "singular_values": [float(s) for s in sep.singular_values],
        "approximation_errors": [
            float(sep.relative_error(k)) for k in range(1, len(sep.singular_values) + 1)
        ],
        "factors": factors,
        "taps": {"direct": rows * cols, "separable": rows + cols if sep.rank <= 1 else None},
        "lowrank": None,
        "plan": None,
    }
    refused = lowrank.why_not(kernel, tolerance)
    if refused:
        report["lowrank"] = {"refused": refused}
    else:
        chosen = lowrank.low_rank(kernel, tolerance)
        report["lowrank"] = {
            "k": chosen.k,
            "error": chosen.error,
            "tolerance": chosen.tolerance,
            "exact": chosen.exact,
            "summary": chosen.describe(),
        }
    if with_plan:
        from blurapp.engine import plan_for

        report["plan"] = plan_for(kernel, tolerance=tolerance).to_dict()
    return report


def _fmt_row(values: list[float], width: int) -> str:
    return " ".join(f"{v:>{width}.6g}" for v in values)


def format_kernel_report(report: dict[str, Any]) -> str:
    """Plain-text rendering of :func:`kernel_report`, aligned for a terminal."""
    rows, cols = report["height"], report["width"]
    weights = np.asarray(report["weights"])
    lines = [
        f"kernel   {report['spec']}",
        f"family   {report['name']}, {cols}×{rows} (W×H), anchor row {report['anchor'][0]}, "
        f"column {report['anchor'][1]}",
    ]
    if max(rows, cols) <= MAX_PRINTED_SIDE:
        width = max(len(f"{v:.6g}") for v in weights.ravel())
        lines.append("weights")
        lines += ["  " + _fmt_row(list(r), width) for r in weights]
    else:
        lines.append(f"weights  {cols}×{rows}: too wide to print; --json lists them all")
    lines.append(f"sum      {report['sum']:.10g}")
    svs = report["singular_values"]
    shown = ", ".join(f"{s:.4g}" for s in svs[:8]) + (", …" if len(svs) > 8 else "")
    lines.append(f"rank     {report['rank']} (relative tolerance {report['tolerance']:.3g})")
    lines.append(f"singular values  {shown}")
    if report["factors"]:
        col = ", ".join(f"{v:.6g}" for v in report["factors"]["column"])
        row = ", ".join(f"{v:.6g}" for v in report["factors"]["row"])
        lines.append(f"column factor  [{col}]")
        lines.append(f"row factor     [{row}]")
    else:
        errs = report["approximation_errors"]
        if errs:
            lines.append(
                f"not separable: the best rank-1 approximation has {errs[0]:.3g} relative error"
            )
    taps = report["taps"]
    if taps["separable"] is not None and taps["separable"] < taps["direct"]:
        lines.append(
            f"taps     {taps['direct']} per pixel direct, {taps['separable']} separable "
            f"({taps['direct'] / taps['separable']:.1f}× fewer)"
        )
    else:
        lines.append(f"taps     {taps['direct']} per pixel")
    low = report.get("lowrank")
    if low:
        if "refused" in low:
            lines.append(f"lowrank  {low['refused']}")
        else:
            why = "the exact rank" if low["exact"] else f"tolerance {low['tolerance']:.3g}"
            lines.append(
                f"lowrank  k={low['k']} separable pairs ({why}): "
                f"max |output error| ≤ {low['error']:.2g} × max |input|"
            )
    if report["plan"]:
        plan = report["plan"]
        tile = f" (tile {plan['tile']})" if plan["tile"] else ""
        lines.append(f"plan     {plan['strategy']}{tile}: {plan['reason']}")
        if plan.get("predicted_ms"):
            times = ", ".join(
                f"{n} {ms:.3g} ms" if ms < 1000 else f"{n} {ms:,.0f} ms"
                for n, ms in plan["predicted_ms"].items()
            )
            lines.append(f"         predicted per megapixel ({plan['table']} costs): {times}")
    return "\n".join(lines)
