// One 1-D correlation pass along one axis of an n-D array held in a storage buffer (C order),
// as scipy.ndimage.correlate1d runs it: blurapp.gpu.ndpass views the array as
// (outer, n, inner) around the pass's axis, so any axis of any ndim is this one shader.
// One invocation per output element, in the output's own order: neighbouring invocations read
// neighbouring elements whichever axis the pass runs along.
//
// Template parameters: `precision` "f32" (elements are f32, accumulated in f32) or "df64"
// (elements are vec2<f32> hi + lo pairs, see nd_df64.wgsl), `skip_zero` (a zero weight is
// skipped, not multiplied: scipy.ndimage.correlate's rule; correlate1d multiplies every tap, so
// a NaN under a zero tap spreads there), `wg` (invocations per workgroup), `two_prod` (df64),
// `sym` (f32: 1 / -1, folded symmetric / antisymmetric weights, the sums in nd_line.wgsl's
// f32_sum order: a small array's first calls, which run this, then equal its unrolled
// pipeline's bit for bit). Override constant: BORDER_MODE.

{% set df = precision == "df64" %}
{% set elem = "vec2<f32>" if df else "f32" %}
{% set sym = sym | default(0) %}

struct LineParams {
    total: u32,       // elements in the array
    n: u32,           // the pass axis's length
    inner: u32,       // elements after the pass axis (its stride)
    taps: u32,        // weights
    centre: i32,      // len(weights) // 2 + origin
    groups_x: u32,    // workgroups along x of the dispatch (the grid is 2-D beyond 65535)
    one: f32,         // 1.0, opaque to the compiler (nd_df64.wgsl)
    _pad0: u32,
    constant: vec2<f32>,  // the value outside the array for mode 1 (hi, lo; f32 uses hi)
    _pad1: vec2<f32>,
}

@group(0) @binding(0) var<storage, read> src: array<{$ elem $}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{$ elem $}>;
@group(0) @binding(2) var<storage, read> weights: array<{$ elem $}>;
@group(0) @binding(3) var<uniform> params: LineParams;

override BORDER_MODE: i32 = 0;

{% include "nd_border.wgsl" %}
{% if df %}
{% include "nd_df64.wgsl" %}
{% endif %}

// The element at position s along the line starting at `base`; the constant where s is -1.
fn load_at(base: u32, s: i32) -> {$ elem $} {
    if (BORDER_MODE == 1 && s < 0) {
        return {$ "params.constant" if df else "params.constant.x" $};
    }
    return src[base + u32(s) * params.inner];
}

{% if sym %}
// Tap k's element of the window starting at `start` of the line at `base`.
fn tap(base: u32, start: i32, k: i32, interior: bool) -> f32 {
    if (interior) {
        return src[base + u32(start + k) * params.inner];
    }
    return load_at(base, nd_border_index(start + k, i32(params.n), BORDER_MODE));
}

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
    let inner = params.inner;
    let i = (idx / inner) % params.n;
    let base = idx - i * inner;  // the line's first element
    let start = i32(i) - params.centre;
    let taps = i32(params.taps);
    // Windows wholly inside the axis (all but the few outputs near its ends) read without the
    // border mapping.
    let interior = start >= 0 && start + taps <= i32(params.n);
    // df64: (hi, lo) accumulates the sum, renormalised at every tap, and .z is the plain f32
    // sum of the rounded products (nd_df64.wgsl's df_tap).
    var acc = {$ "vec3<f32>(0.0)" if df else "0.0" $};
{% if sym %}
    // Folded: w[k] (x[k] +- x[taps - 1 - k]) for the first half, then the middle tap.
    let half = taps / 2;
    for (var k = 0; k < half; k++) {
        acc += weights[k] * (tap(base, start, k, interior) {$ "+" if sym > 0 else "-" $}
            tap(base, start, taps - 1 - k, interior));
    }
    if (taps % 2 == 1) {
        acc += weights[half] * tap(base, start, half, interior);
    }
{% else %}
    var p = base + u32(max(start, 0)) * inner;
    for (var k = 0; k < taps; k++) {
        let w = weights[k];
{% if skip_zero %}
        if ({$ "w.x" if df else "w" $} == 0.0) {
            p += inner;
            continue;
        }
{% endif %}
        var v: {$ elem $};
        if (interior) {
            v = src[p];
            p += inner;
        } else {
            v = load_at(base, nd_border_index(start + k, i32(params.n), BORDER_MODE));
        }
{% if df %}
        acc = df_tap(acc, w, v);
{% else %}
        acc += w * v;
{% endif %}
    }
{% endif %}
{$ "dst[idx] = df_result(acc);" if df else "dst[idx] = acc;" $}
}
