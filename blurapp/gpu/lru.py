"""A mapping that keeps only its most recently used entries: the size bound of the GPU caches.

The filter engine and the conv lab cache compiled shader modules and pipelines by what shapes
their code. Some of that code changes with the kernel (the 1-D passes bake short kernels in as
literals), so a live preview stepping a slider makes a new pipeline per step; kept forever,
they add up (about 3.5 MiB of JIT code each on lavapipe). :class:`LruCache` drops the least
recently used entry beyond its size and counts what it dropped. A dropped GPU object is
released when nothing else refers to it (wgpu-py frees the native handle with the Python
object), so a pass that is still recording keeps its pipeline alive.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["LruCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LruCache(Generic[K, V]):
    """At most ``maxsize`` entries; using one (get, set, get_or_make) makes it the newest.

    Not thread-safe by itself: its owners already serialise their runs with a lock.

    Arguments:
        maxsize: entries kept (>= 1).
        on_evict: called with (key, value) for each entry dropped because of the size, not for
            :meth:`clear` (the owners count evictions through it).

    Example:
        >>> cache = LruCache(2)
        >>> cache["a"], cache["b"] = 1, 2
        >>> cache.get("a")  # "a" is now the newest
        1
        >>> cache["c"] = 3  # drops "b", the least recently used
        >>> list(cache), cache.evictions
        (['a', 'c'], 1)
    """

    def __init__(self, maxsize: int, on_evict: Callable[[K, V], None] | None = None) -> None:
        if maxsize < 1:
            raise ValueError(f"an LruCache keeps at least 1 entry, got maxsize={maxsize}")
        self.maxsize = maxsize
        self.evictions = 0
        self._on_evict = on_evict
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K, default: V | None = None) -> V | None:
        """The value of ``key`` (now the newest entry), or ``default`` when absent."""
        try:
            self._items.move_to_end(key)
        except KeyError:
            return default
        return self._items[key]

    def get_or_make(self, key: K, make: Callable[[], V]) -> V:
        """The value of ``key``, made by ``make()`` and stored when absent."""
        try:
            self._items.move_to_end(key)
            return self._items[key]
        except KeyError:
            value = make()
            self[key] = value
            return value

    def __getitem__(self, key: K) -> V:
        self._items.move_to_end(key)
        return self._items[key]

    def __setitem__(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.maxsize:
            old_key, old_value = self._items.popitem(last=False)
            self.evictions += 1
            if self._on_evict is not None:
                self._on_evict(old_key, old_value)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is cached (without making it the newest)."""
        return key in self._items

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[K]:
        """The keys, least recently used first."""
        return iter(list(self._items))

    def values(self) -> list[V]:
        """The values, least recently used first (a copy: safe to change the cache meanwhile)."""
        return list(self._items.values())

    def clear(self) -> None:
        """Drop every entry (not counted as evictions)."""
        self._items.clear()
