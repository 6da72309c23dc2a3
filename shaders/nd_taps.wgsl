// n-D correlation with n-D weights over a storage buffer (C order), as scipy.ndimage.correlate
// runs it. The kernel is a set of rows along the last axis (one per combination of offsets
// along the other axes): each invocation filters BLOCK neighbouring outputs along the last
// axis, and for each kernel row maps the row's position once per leading axis, loads the
// BLOCK + KW - 1 elements the outputs share (their last-axis positions mapped once per
// invocation) and adds the KW unrolled taps (lavapipe pays per SIMD lane for every load; a loop
// over single taps, each with its own offsets and loads, ran 5-15x slower than nd_line).
//
// A weight scipy skips (|w| <= DBL_EPSILON: the host sends 0 for it) is selected away, not
// multiplied, so that a NaN or Inf under it does not spread; the weights are data, not code,
// so every kernel of a shape shares one pipeline. With `uw` (kernels of at most
// ndpass.ROLL_TAPS taps) they sit in the uniform buffer, a vec4 a tap, read at an index that
// is the same for every invocation (one scalar load, where a storage buffer is read lane by
// lane on lavapipe); else after the row offsets in the taps buffer.
//
// Template parameters: `uw`, `ndim` (1..8), `kw` (weights along the last axis), `block`, `near`
// (every window reaches less than its axis's length: nd_border_index_near), `precision`
// ("f32" or "df64", nd_df64.wgsl), `wg`, `two_prod` (df64), `band` (f32 with `uw`, a kernel
// over the last two axes: output lines an invocation, see main). Per-axis sizes, strides and
// border modes are uniforms.

{% set df = precision == "df64" %}
{% set elem = "vec2<f32>" if df else "f32" %}
{% set map = "nd_border_index_near" if near else "nd_border_index" %}
{% set loads = block + kw - 1 %}
{% set band = band | default(0) %}

struct TapsParams {
    total_v: u32,     // invocations: rows of the array before the last axis x blocks
    rows: u32,        // kernel rows: the product of the weights' sizes but the last
    groups_x: u32,
    one: f32,         // 1.0, opaque to the compiler (nd_df64.wgsl)
    constant: vec2<f32>,  // the value outside the array (hi, lo; f32 uses hi)
    blocks: u32,      // ceil(shape[last] / BLOCK)
    centre: i32,      // the weights' centre along the last axis
{% if band %}
    bands: u32,       // `band`: ceil(shape[ndim - 2] / BAND)
    centre_row: i32,  // the weights' centre along axis ndim - 2
    _pad0: u32,
    _pad1: u32,
{% endif %}
    shape: array<vec4<i32>, 2>,
    stride: array<vec4<i32>, 2>,
    mode: array<vec4<i32>, 2>,
{% if uw %}
    // Per tap, row by row: f32 (w, -, -, -); df64 (hi, lo, hi's top 12 bits, hi's rest).
    w: array<vec4<f32>, {$ uw $}>,
{% endif %}
}

@group(0) @binding(0) var<storage, read> src: array<{$ elem $}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{$ elem $}>;
// Per kernel row, 8 words: its offset along each leading axis (i32). Then the weights, row by
// row, KW a row: f32, or 4 words (hi, lo, hi's top 12 bits, hi's rest) for df64.
@group(0) @binding(2) var<storage, read> taps: array<u32>;
@group(0) @binding(3) var<uniform> params: TapsParams;
{% if texin | default(false) %}
// `texin`: the input is also a texture (blurapp.gpu.ndpass's TEXTURE_INPUT): f32 an r32float
// one, element e at (e mod texw, e / texw); df64 an rgba32float one, pair e half of texel e / 2.
// On lavapipe a texel fetch is unrolled per lane where a storage load is a loop over the lanes.
{% include "nd_texin.wgsl" %}
{% if df %}
fn load_src(e: u32) -> vec2<f32> {
    return fetch_pair(e);
}
{% else %}
fn load_src(e: u32) -> f32 {
    return fetch(e).x;
}
{% endif %}
{% else %}
fn load_src(e: u32) -> {$ elem $} {
    return src[e];
}
{% endif %}

{% include "nd_border.wgsl" %}
{% if df %}
{% include "nd_df64.wgsl" %}
{% endif %}

{% macro ax(name, a) %}params.{$ name $}[{$ a // 4 $}][{$ a % 4 $}]{% endmacro %}

@compute @workgroup_size({$ wg $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = (wid.y * params.groups_x + wid.x) * {$ wg $}u + lid;
    if (g >= params.total_v) {
        return;
    }
    // The block's outputs along the last axis, and its window's positions there (mapped once).
    let b = g % params.blocks;
    let n = {$ ax("shape", ndim - 1) $};
    let last_mode = {$ ax("mode", ndim - 1) $};
    let first = i32(b) * {$ block $};
    let start = first - params.centre;
{% for j in range(loads) %}
    let s{$ j $} = {$ map $}(start + {$ j $}, n, last_mode);
{% endfor %}
{% if band %}
    // `band` (f32, a kernel over the last two axes only): BAND output lines of a plane (along
    // axis ndim - 2) x BLOCK outputs along the last axis an invocation, walking down the
    // BAND + kh - 1 input lines they read: each line's elements are loaded once for the
    // BAND outputs it enters (with the kernel row t - q of output line q), not once a kernel
    // row and output. The sums run in the same order (kernel rows, then taps), as `band` 0.
    let rest = g / params.blocks;
    let bnd = rest % params.bands;
    let plane = rest / params.bands;
    let m = {$ ax("shape", ndim - 2) $};
    let row_mode = {$ ax("mode", ndim - 2) $};
    let line0 = i32(bnd) * {$ band $};  // the band's first output line
    let top = line0 - params.centre_row;
    let pbase = i32(plane) * m * n;
    let kh = i32(params.rows);
{% for q in range(band) %}
{% for o in range(block) %}
    var acc{$ q $}_{$ o $} = 0.0;
{% endfor %}
{% endfor %}
    for (var t = 0; t < kh + {$ band - 1 $}; t++) {
        let sr = nd_border_index(top + t, m, row_mode);
        let base = pbase + sr * n;
{% for j in range(loads) %}
        var v{$ j $} = params.constant.x;
        if (sr >= 0 && s{$ j $} >= 0) {
            v{$ j $} = load_src(u32(base + s{$ j $}));
        }
{% endfor %}
{% for q in range(band) %}
        {
            let r = t - {$ q $};
            if (r >= 0 && r < kh) {
                let w0 = u32(r) * {$ kw $}u;
{% for k in range(kw) %}
                {
                    let w = params.w[w0 + {$ k $}u].x;
                    let keep = w != 0.0;
{% for o in range(block) %}
                    acc{$ q $}_{$ o $} += select(0.0, w * v{$ o + k $}, keep);
{% endfor %}
                }
{% endfor %}
            }
        }
{% endfor %}
    }
{% for q in range(band) %}
    if (line0 + {$ q $} < m) {
        let row_start = u32(pbase + (line0 + {$ q $}) * n);
{% for o in range(block) %}
        if (first + {$ o $} < n) {
            dst[row_start + u32(first + {$ o $})] = acc{$ q $}_{$ o $};
        }
{% endfor %}
    }
{% endfor %}
{% else %}
    var rest = i32(g / params.blocks);  // the row of the array, before the last axis
{% for a in range(ndim - 2, -1, -1) %}
    let c{$ a $} = rest % {$ ax("shape", a) $};
    rest = rest / {$ ax("shape", a) $};
{% endfor %}
    let weights0 = params.rows * 8u;
{% if df %}
{% for o in range(block) %}
    var hi{$ o $} = 0.0;
    var lo{$ o $} = 0.0;
    var raw{$ o $} = 0.0;
{% endfor %}
{% else %}
{% for o in range(block) %}
    var acc{$ o $} = 0.0;
{% endfor %}
{% endif %}
    for (var r = 0u; r < params.rows; r++) {
        var base = 0;
        var outside = false;
{% for a in range(ndim - 1) %}
        {
            let s = {$ map $}(c{$ a $} + bitcast<i32>(taps[r * 8u + {$ a $}u]), {$ ax("shape", a) $},
                {$ ax("mode", a) $});
            outside = outside || s < 0;
            base += s * {$ ax("stride", a) $};
        }
{% endfor %}
{% for j in range(loads) %}
        var v{$ j $} = {$ "params.constant" if df else "params.constant.x" $};
        if (!outside && s{$ j $} >= 0) {
            v{$ j $} = load_src(u32(base + s{$ j $}));
        }
{% endfor %}
{% if df %}
{% for j in range(loads) %}
        let h{$ j $} = v{$ j $}.x;
        let l{$ j $} = v{$ j $}.y;
{% if two_prod != "fma" %}
        let q{$ j $} = (4097.0 * h{$ j $}) * params.one;
        let hh{$ j $} = q{$ j $} * params.one - (q{$ j $} - h{$ j $});
        let hl{$ j $} = h{$ j $} - hh{$ j $};
{% endif %}
{% endfor %}
{% endif %}
{% for k in range(kw) %}
        {
{% if df %}
{% if uw %}
            let w = params.w[r * {$ kw $}u + {$ k $}u];
{% else %}
            let wi = weights0 + (r * {$ kw $}u + {$ k $}u) * 4u;
            let w = vec4<f32>(bitcast<f32>(taps[wi]), bitcast<f32>(taps[wi + 1u]),
                bitcast<f32>(taps[wi + 2u]), bitcast<f32>(taps[wi + 3u]));
{% endif %}
            let keep = w.x != 0.0;
{% for o in range(block) %}
            {
                let ph = (w.x * h{$ o + k $}) * params.one;
{% if two_prod == "fma" %}
                let err = fma(w.x, h{$ o + k $}, -ph);
{% else %}
                let err = ((w.z * hh{$ o + k $} - ph) + w.z * hl{$ o + k $} + w.w * hh{$ o + k $})
                    + w.w * hl{$ o + k $};
{% endif %}
                let pl = err + (w.x * l{$ o + k $} + w.y * h{$ o + k $});
                let s = hi{$ o $} + ph;
                let bb = s * params.one - hi{$ o $};
                let e = (hi{$ o $} - (s - bb)) + (ph - bb);
                let t = e + (lo{$ o $} + pl);
                let nhi = s + t;
                let nlo = t - (nhi * params.one - s);
                hi{$ o $} = select(hi{$ o $}, nhi, keep);
                lo{$ o $} = select(lo{$ o $}, nlo, keep);
                raw{$ o $} = select(raw{$ o $}, raw{$ o $} + ph, keep);
            }
{% endfor %}
{% else %}
{% if uw %}
            let w = params.w[r * {$ kw $}u + {$ k $}u].x;
{% else %}
            let w = bitcast<f32>(taps[weights0 + r * {$ kw $}u + {$ k $}u]);
{% endif %}
            let keep = w != 0.0;
{% for o in range(block) %}
            acc{$ o $} += select(0.0, w * v{$ o + k $}, keep);
{% endfor %}
{% endif %}
        }
{% endfor %}
    }
    let row_start = u32(i32(g / params.blocks) * n);
{% for o in range(block) %}
    if (first + {$ o $} < n) {
{% if df %}
        let bad = (bitcast<u32>(raw{$ o $}) & 0x7f800000u) == 0x7f800000u;
        dst[row_start + u32(first + {$ o $})] = select(vec2<f32>(hi{$ o $}, lo{$ o $}),
            vec2<f32>(raw{$ o $}, 0.0), bad);
{% else %}
        dst[row_start + u32(first + {$ o $})] = acc{$ o $};
{% endif %}
    }
{% endfor %}
{% endif %}
}
