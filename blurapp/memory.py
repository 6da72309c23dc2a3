"""How much memory this process may still allocate: the guards of ``apply``, ``batch`` and the
Python API ask here before they allocate a large image."""

from __future__ import annotations

__all__ = ["MEMORY_SHARE", "available_memory"]

#: The share of the available memory one image may need.
MEMORY_SHARE = 0.9


def available_memory() -> int | None:
    """Bytes this process may still allocate: the least of the memory the system has
    available, the cgroup's limit left (containers) and the address-space limit (ulimit -v);
    ``None`` where none of them can be read."""
    found: list[int] = []
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as fh:
            limit = fh.read().strip()
        with open("/sys/fs/cgroup/memory.current", encoding="ascii") as fh:
            current = int(fh.read().strip())
        if limit != "max":
            found.append(max(0, int(limit) - current))
    except (OSError, ValueError):
        pass
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            found.append(soft)
    except (ImportError, OSError, ValueError):
        pass
    return min(found) if found else None
