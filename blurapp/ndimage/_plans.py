"""A blurapp.ndimage call made again without its planning.

A 1 MP float32 ``sobel`` spends ~0.3 ms of its ~3 ms on lavapipe in Python before its one GPU
run: checking and normalising scipy's arguments, building the passes, choosing and keying the
dispatches (blurapp.gpu.ndpass). A script or a live preview calls the same filter with the
same arguments on arrays of one shape again and again. :func:`planned` keeps, for each such
call, the GPU run it came down to (:class:`blurapp.gpu.ndpass.Plan`) and makes only that run
for the next call with the same arguments on an array of the same shape.

A call is planned only where nothing but its shape and arguments decides what it runs: a
C-ordered float32 ``numpy.ndarray`` (the f32 passes: no value-dependent choice, unlike
double-float's scaling or the integer casts), a new output (``output`` None or a dtype, for
which the run's lent buffer or its read-back stands in), the default strategy, and arguments
of plain values (None, bool, int, float, str, and tuples and lists of them), keyed by type
and value (a float by its bits: -0.0 is not 0.0, nor ``1`` ``True``). The key also holds
every ndpass setting (``ndpass._knobs``: tests and benchmarks change them) and the engine.
The plan is kept only where the call ran one chain, once, over that array itself, and
returned that run's result as it came; else the key is marked as having none
(:data:`_NONE`). Any other call, and a call whose arguments are wrong (it raises, so nothing
is kept), takes the full path.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

__all__ = ["PLANS", "planned"]

F = TypeVar("F", bound=Callable[..., Any])

#: Calls kept (least recently used dropped); 0 turns planning off.
PLANS = 64

# The kept plans (blurapp.gpu.lru.LruCache, under _lock), made with the first key: by then
# blurapp.gpu is loaded, which `import blurapp.ndimage` does not load.
_plans: Any = None
_lock = threading.Lock()
_NONE = object()  # a key whose call came down to no plan
_FLOAT32 = np.dtype(np.float32)
_SCALARS = frozenset({type(None), bool, int, str})


class _NotPlainError(Exception):
    pass


def _tag(value: Any) -> Any:
    """``value`` as a key: its type with its value (a float's bits, a sequence's items)."""
    kind = type(value)
    if kind in _SCALARS:
        return kind, value
    if kind is float:
        return kind, value.hex()
    if kind is tuple or kind is list:
        return kind, tuple(_tag(v) for v in value)
    raise _NotPlainError


def _key(func: Callable[..., Any], x: Any, args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    if not PLANS or type(x) is not np.ndarray or x.dtype != _FLOAT32 or x.size == 0:
        return None
    if not x.flags.c_contiguous or kwargs.get("strategy") is not None:
        return None
    ndpass = sys.modules.get("blurapp.gpu.ndpass")
    if ndpass is None:  # nothing ran on the GPU yet: the first call plans
        return None
    try:
        tagged = (_tag(args), _tag(sorted(kwargs.items())))
    except _NotPlainError:
        return None
    return (func, x.shape, tagged, ndpass._knobs(), id(ndpass.get_passes()))


def planned(func: F) -> F:
    """``func`` (a blurapp.ndimage filter whose float32 path is one chain of passes returned
    as the GPU made it), made again from its plan where one is kept for its arguments."""

    @functools.wraps(func)
    def call(input: Any, *args: Any, **kwargs: Any) -> Any:
        key = _key(func, input, args, kwargs)
        if key is None:
            return func(input, *args, **kwargs)
        with _lock:
            plan = _cache().get(key)
        ndpass = sys.modules["blurapp.gpu.ndpass"]
        if plan is not None and plan is not _NONE:
            result = plan.run(input, ndpass.get_passes())
            if result is not None:
                return result
        if plan is _NONE:
            return func(input, *args, **kwargs)
        with ndpass.planning() as watched:
            result = func(input, *args, **kwargs)
        if watched is not None:
            made = watched.plan_for(input, result)
            with _lock:
                _cache()[key] = _NONE if made is None else made
        return result

    return call  # type: ignore[return-value]


def _cache() -> Any:
    """The kept plans (under _lock), bounded by PLANS as it is now."""
    global _plans
    if _plans is None:
        from blurapp.gpu.lru import LruCache

        _plans = LruCache(max(1, PLANS))
    _plans.maxsize = max(1, PLANS)
    return _plans


def clear() -> None:
    """Forget every kept plan."""
    with _lock:
        if _plans is not None:
            _plans.clear()
