"""Describe the WebGPU adapter for ``blurapp info``: identity, the limits that matter, features."""

from __future__ import annotations

from typing import Any

from blurapp.gpu.device import get_device, list_adapters

__all__ = ["adapter_report", "format_report"]


def adapter_report() -> dict[str, Any]:
    """What ``blurapp info [--json]`` shows about the adapter the engine uses.

    Returns:
        ``{"name", "backend", "type" ("discrete" | "integrated" | "cpu" | ...), "driver",
        "vendor", "software" (bool), "limits": {"workgroup_storage",
        "invocations_per_workgroup", "max_texture_side", "max_storage_binding"},
        "features": {"timestamp-query", "shader-f16", "subgroups"} (bools),
        "adapters": [summaries of every adapter wgpu sees], "cost_table": which cost table
        auto uses (calibrated for this adapter, or built-in and why), "ndimage": what
        blurapp.ndimage's fused passes read here (:func:`blurapp.gpu.ndtune.describe`)}``;
        JSON-serialisable.

    Raises:
        GpuUnavailableError: there is no adapter (one line saying what to install).
    """
    from blurapp.gpu.calibration import ensure_table, status
    from blurapp.gpu.ndtune import describe

    ctx = get_device()
    ensure_table(ctx, background=False)
    device_limits = ctx.device.limits
    adapter_features = set(ctx.adapter.features)
    return {
        "name": ctx.info["name"],
        "backend": ctx.info["backend"],
        "type": ctx.info["type"],
        "driver": ctx.info["driver"],
        "vendor": ctx.info["vendor"],
        "software": ctx.is_software,
        "limits": {
            "workgroup_storage": int(device_limits["max-compute-workgroup-storage-size"]),
            "invocations_per_workgroup": int(
                device_limits["max-compute-invocations-per-workgroup"]
            ),
            "max_texture_side": int(device_limits["max-texture-dimension-2d"]),
            "max_storage_binding": int(device_limits["max-storage-buffer-binding-size"]),
        },
        "features": {
            "timestamp-query": "timestamp-query" in ctx.features,
            "shader-f16": "shader-f16" in ctx.features,
            # Not requested by the engine (no strategy uses them yet): the adapter's support.
            "subgroups": bool({"subgroup", "subgroups"} & adapter_features),
        },
        "adapters": [a["summary"] for a in list_adapters()],
        "cost_table": status(),
        "ndimage": describe(ctx),
    }


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v) if v != "" else "-"


def format_report(d: dict[str, Any]) -> str:
    """Render :func:`adapter_report`'s dict as aligned ``key  value`` lines.

    Arguments:
        d: the report; nested dicts become indented sections, lists one line per item.

    Returns:
        The text, without a trailing newline.
    """
    rows: list[tuple[str, str]] = []

    def walk(node: dict[str, Any], indent: str) -> None:
        for key, value in node.items():
            if isinstance(value, dict):
                rows.append((f"{indent}{key}", ""))
                walk(value, indent + "  ")
            elif isinstance(value, list | tuple):
                rows.append((f"{indent}{key}", _value(value[0]) if value else "-"))
                rows.extend(("", _value(item)) for item in value[1:])
            else:
                rows.append((f"{indent}{key}", _value(value)))

    walk(d, "")
    width = max((len(k) for k, _ in rows), default=0)
    return "\n".join(f"{k.ljust(width)}  {v}".rstrip() for k, v in rows)
