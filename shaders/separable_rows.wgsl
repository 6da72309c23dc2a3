// Horizontal 1-D pass of a separable filter (separable_line.wgsl along x). The transpose
// strategy runs it twice (on the image and on its transpose).
{% set vertical = false %}
{% include "separable_line.wgsl" %}
