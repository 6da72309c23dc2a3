"""Load the WGSL shaders shipped in ``blurapp.shaders`` and render their small template layer.

Shaders are Jinja2 templates with ``{$ name $}`` variables (WGSL's braces stay readable) and
``{% include "border.wgsl" %}`` blocks; ``StrictUndefined`` turns a missing parameter into an
error instead of an empty string.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib import resources

import jinja2

__all__ = ["load_shader", "shader_names"]

_PACKAGE = "blurapp.shaders"


def _read_source(name: str) -> tuple[str, None, Callable[[], bool]] | None:
    """The raw text of ``shaders/<name>`` for Jinja (``None``: no such file)."""
    path = resources.files(_PACKAGE) / name
    if not path.is_file():
        return None
    return path.read_text(encoding="utf-8"), None, lambda: True


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_read_source),
        variable_start_string="{$",
        variable_end_string="$}",
        block_start_string="{%",
        block_end_string="%}",
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )


def shader_names() -> tuple[str, ...]:
    """Names (without ``.wgsl``) of every shader in the package data, sorted."""
    files = resources.files(_PACKAGE).iterdir()
    return tuple(sorted(f.name[:-5] for f in files if f.name.endswith(".wgsl")))


@functools.lru_cache(maxsize=256)
def load_shader(name: str, **params: object) -> str:
    """Render ``shaders/<name>.wgsl`` with ``params``.

    Arguments:
        name: the shader's file name without ``.wgsl``, e.g. ``"halo_tiled"``.
        **params: template variables (hashable), e.g. ``tile=16, halo_len=324, layout="vec4"``.

    Returns:
        The WGSL source.

    Raises:
        jinja2.TemplateNotFound: no such shader in the package data (an OSError).
        jinja2.UndefinedError: the template uses a parameter that was not given.
    """
    return _environment().get_template(f"{name}.wgsl").render(**params)
