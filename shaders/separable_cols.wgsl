// Vertical 1-D pass of a separable filter (separable_line.wgsl along y).
{% set vertical = true %}
{% include "separable_line.wgsl" %}
