// n-D correlation with n-D weights over a storage buffer (C order), as scipy.ndimage.correlate
// runs it, for small arrays (blurapp.gpu.ndpass.SMALL): one pipeline per ndim and precision
// serves every kernel, so a test suite of many small kernels does not compile one per shape
// (nd_taps.wgsl is the fast one for large arrays).
//
// One invocation per output element, one loop over the kernel's taps. The host sends
// only the taps scipy does not skip (|w| > DBL_EPSILON), so a NaN under a zero weight does not
// spread. Each tap carries its offset along every axis and, for outputs whose whole window lies
// inside the array, one linear offset (most outputs read each tap with one load).
//
// Template parameters: `ndim` (1..8), `precision` "f32" or "df64" (nd_line.wgsl), `wg`,
// `two_prod` (df64). Per-axis sizes, strides, border modes and the window's reach are uniforms.

{% set df = precision == "df64" %}
{% set elem = "vec2<f32>" if df else "f32" %}
{% set tap_words = 3 + ndim %}

struct TapsParams {
    total: u32,
    ntaps: u32,
    groups_x: u32,
    one: f32,
    constant: vec2<f32>,
    _pad: vec2<f32>,
    shape: array<vec4<i32>, 2>,
    stride: array<vec4<i32>, 2>,
    mode: array<vec4<i32>, 2>,
    reach_lo: array<vec4<i32>, 2>,  // the smallest tap offset along each axis
    reach_hi: array<vec4<i32>, 2>,  // the largest
}

@group(0) @binding(0) var<storage, read> src: array<{$ elem $}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{$ elem $}>;
// Per tap, {$ tap_words $} words: the weight's hi and lo (f32 bits), the linear offset (i32),
// then the offset along each axis (i32).
@group(0) @binding(2) var<storage, read> taps: array<u32>;
@group(0) @binding(3) var<uniform> params: TapsParams;

{% include "nd_border.wgsl" %}
{% if df %}
{% include "nd_df64.wgsl" %}
{% endif %}

@compute @workgroup_size({$ wg $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let idx = (wid.y * params.groups_x + wid.x) * {$ wg $}u + lid;
    if (idx >= params.total) {
        return;
    }
    var rem = i32(idx);
    var interior = true;
{% for a in range(ndim) %}
    let c{$ a $} = rem / params.stride[{$ a // 4 $}][{$ a % 4 $}];
    rem -= c{$ a $} * params.stride[{$ a // 4 $}][{$ a % 4 $}];
    interior = interior && c{$ a $} + params.reach_lo[{$ a // 4 $}][{$ a % 4 $}] >= 0
        && c{$ a $} + params.reach_hi[{$ a // 4 $}][{$ a % 4 $}] < params.shape[{$ a // 4 $}][{$ a % 4 $}];
{% endfor %}
    // df64: (hi, lo) accumulates the sum, renormalised at every tap, and .z is the plain f32
    // sum of the rounded products (nd_df64.wgsl's df_tap).
    var acc = {$ "vec3<f32>(0.0)" if df else "0.0" $};
    let ntaps = params.ntaps;
    for (var t = 0u; t < ntaps; t++) {
        let rec = t * {$ tap_words $}u;
{% if df %}
        let w = vec2<f32>(bitcast<f32>(taps[rec]), bitcast<f32>(taps[rec + 1u]));
{% else %}
        let w = bitcast<f32>(taps[rec]);
{% endif %}
        var v: {$ elem $};
        if (interior) {
            v = src[u32(i32(idx) + bitcast<i32>(taps[rec + 2u]))];
        } else {
            var lin = 0;
            var outside = false;
{% for a in range(ndim) %}
            {
                let s = nd_border_index(
                    c{$ a $} + bitcast<i32>(taps[rec + {$ 3 + a $}u]),
                    params.shape[{$ a // 4 $}][{$ a % 4 $}],
                    params.mode[{$ a // 4 $}][{$ a % 4 $}],
                );
                outside = outside || s < 0;
                lin += s * params.stride[{$ a // 4 $}][{$ a % 4 $}];
            }
{% endfor %}
            if (outside) {
                v = {$ "params.constant" if df else "params.constant.x" $};
            } else {
                v = src[u32(lin)];
            }
        }
{% if df %}
        acc = df_tap(acc, w, v);
{% else %}
        acc += w * v;
{% endif %}
    }
{$ "dst[idx] = df_result(acc);" if df else "dst[idx] = acc;" $}
}
