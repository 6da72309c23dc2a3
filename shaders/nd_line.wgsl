// One 1-D correlation pass along one axis of an n-D array held in a storage buffer (C order),
// as scipy.ndimage.correlate1d runs it: blurapp.gpu.ndpass views the array as
// (outer, n, inner) around the pass's axis, so any axis of any ndim is this one shader.
//
// Each invocation filters BLOCK neighbouring outputs along the axis from the BLOCK + TAPS - 1
// elements they share, loaded once into registers, with every tap unrolled (lavapipe runs
// invocations as SIMD lanes and pays per lane for every buffer load: a plain loop reading TAPS
// elements per output ran 4-16x slower than scipy). Where the axis is not the last one and
// `inner` is a multiple of VEC, an invocation also takes VEC neighbouring columns at once, one
// vec4 load each (4 f32 or 2 df64 elements); neighbouring invocations take neighbouring
// columns, so each load of a SIMD row reads contiguous memory.
//
// Along the last axis (`chunked`, f32, n a multiple of 4), the BLOCK + TAPS - 1 elements are
// read as vec4 chunks of the line (`s0` = -centre mod 4 places the window in them, fixed per
// pipeline) and the outputs stored as vec4s; neighbouring invocations take neighbouring lines at
// the same block, so that the test "window inside the line" agrees across a SIMD row and only
// rows at a line's ends take the border-mapped loads.
//
// The weights sit in the uniform buffer (a constant index: one scalar load, not one per lane),
// so every kernel of a length shares one pipeline. Every tap is multiplied, zero weights too
// (scipy.ndimage.correlate1d: a NaN under a zero tap spreads; the weight is not a literal, so
// no compiler folds 0 * x away). Every load goes through the border mapping (one compare in
// the interior; an interior copy of the code would run both paths on SIMD lanes).
//
// `near` (the window reaches less than the axis's length on either side) maps offsets with
// nd_border_index_near, without division.
//
// Template parameters: `sym` (f32: folded symmetric or antisymmetric weights, see f32_sum),
// `precision` ("f32" or "df64": hi + lo f32 pairs, see nd_df64.wgsl),
// `taps`, `block`, `vec` (1, or 4 for f32 / 2 for df64), `wg`, `two_prod` (df64).
// Override constant: BORDER_MODE.

{% set df = precision == "df64" %}
{% set chunked = chunked | default(false) %}
{% set near = near | default(false) %}
{% set sym = sym | default(0) %}
// The f32 sum of output `o`'s taps; with `sym` (1: w[k] == w[taps-1-k], -1: w[k] ==
// -w[taps-1-k]) the pairs of equal weights are folded, w * (a + b) or w * (a - b), as
// scipy.ndimage.correlate1d does: one multiply for two taps (NaN and Inf come out the same).
{% macro f32_sum(o) %}{% if sym %}{% for k in range(taps // 2) %}params.w[{$ k $}].x * (m{$ o + k $} {$ "+" if sym > 0 else "-" $} m{$ o + taps - 1 - k $}){% if not loop.last or taps % 2 %} + {% endif %}{% endfor %}{% if taps % 2 %}params.w[{$ taps // 2 $}].x * m{$ o + taps // 2 $}{% endif %}{% else %}{% for k in range(taps) %}params.w[{$ k $}].x * m{$ o + k $}{% if not loop.last %} + {% endif %}{% endfor %}{% endif %}{% endmacro %}

{% set map = "nd_border_index_near" if near else "nd_border_index" %}
// The type of one load, and of the values a tap computes with.
{% if df %}
{% set mem = "vec4<f32>" if vec == 2 else "vec2<f32>" %}
{% set vt = "vec2<f32>" if vec == 2 else "f32" %}
{% set vu = "vec2<u32>" if vec == 2 else "u32" %}
{% elif chunked %}
{% set mem = "vec4<f32>" %}
{% else %}
{% set mem = "vec4<f32>" if vec == 4 else "f32" %}
{% set vt = mem %}
{% endif %}

struct LineParams {
    outer: u32,       // lines before the axis
    n: u32,           // the pass axis's length
    inner_v: u32,     // loads across the axis (inner / vec)
    blocks: u32,      // blocks of outputs along the axis, ceil(n / BLOCK)
    centre: i32,      // len(weights) // 2 + origin
    groups_x: u32,    // workgroups along x of the dispatch (the grid is 2-D beyond 65535)
    one: f32,         // 1.0, opaque to the compiler (nd_df64.wgsl)
    total_v: u32,     // invocations that have work: outer * blocks * inner_v
    constant: vec2<f32>,  // the value outside the array for mode 1 (hi, lo; f32 uses hi)
    _pad: vec2<f32>,
    // Per tap: f32: (w, -, -, -); df64: (hi, lo, hi's top 12 bits, hi's rest) (Dekker's split
    // of the weight, made once on the host).
    w: array<vec4<f32>, {$ taps $}>,
}

@group(0) @binding(0) var<storage, read> src: array<{$ mem $}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{$ mem $}>;
@group(0) @binding(3) var<uniform> params: LineParams;

override BORDER_MODE: i32 = 0;

{% include "nd_border.wgsl" %}
{% if df %}
{% include "nd_df64.wgsl" %}
{% endif %}

{% if chunked %}
// Element s of the line starting at element `row` (mapped by the border; -1: the constant).
fn load_at(row: u32, s: i32, jv: u32) -> f32 {
    if (BORDER_MODE == 1 && s < 0) {
        return params.constant.x;
    }
    let e = row + u32(s);
    return src[e / 4u][e % 4u];
}
{% else %}
fn load_at(row: u32, s: i32, jv: u32) -> {$ mem $} {
    if (BORDER_MODE == 1 && s < 0) {
{% if df and vec == 2 %}
        return vec4<f32>(params.constant, params.constant);
{% elif df %}
        return params.constant;
{% else %}
        return {$ mem $}(params.constant.x);
{% endif %}
    }
    return src[(row + u32(s)) * params.inner_v + jv];
}
{% endif %}

@compute @workgroup_size({$ wg $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = (wid.y * params.groups_x + wid.x) * {$ wg $}u + lid;
    if (g >= params.total_v) {
        return;
    }
{% if chunked %}
    let jv = 0u;
    let b = g / params.outer;
    let row = (g % params.outer) * params.n;
{% else %}
    let jv = g % params.inner_v;
    let rest = g / params.inner_v;
    let b = rest % params.blocks;
    let row = (rest / params.blocks) * params.n;  // the line's first element, in rows of inner
{% endif %}
    let n = i32(params.n);
    let first = i32(b) * {$ block $};
    let start = first - params.centre;
{% if chunked %}
{% set chunks = (s0 + block + taps - 1 + 3) // 4 %}
{% for i in range(block + taps - 1) %}
    var m{$ i $}: f32;
{% endfor %}
    if (start >= 0 && start + {$ block + taps - 1 $} <= n) {
        let c = (row + u32(start - {$ s0 $})) / 4u;
{% for q in range(chunks) %}
        let c{$ q $} = src[c + {$ q $}u];
{% endfor %}
{% for i in range(block + taps - 1) %}
        m{$ i $} = c{$ (s0 + i) // 4 $}[{$ (s0 + i) % 4 $}];
{% endfor %}
    } else {
{% for i in range(block + taps - 1) %}
        m{$ i $} = load_at(row, {$ map $}(start + {$ i $}, n, BORDER_MODE), jv);
{% endfor %}
    }
{% for q in range(block // 4) %}
    if (first + {$ 4 * q $} < n) {
        dst[(row + u32(first)) / 4u + {$ q $}u] = vec4<f32>(
{% for r in range(4) %}
            {$ f32_sum(4 * q + r) $},
{% endfor %}
        );
    }
{% endfor %}
{% else %}
{% for i in range(block + taps - 1) %}
    let m{$ i $} = load_at(row, {$ map $}(start + {$ i $}, n, BORDER_MODE), jv);
{% endfor %}
{% if df %}
    // hi, lo of every loaded element, and hi's Dekker split (once per element, shared by the
    // taps of BLOCK outputs).
{% for i in range(block + taps - 1) %}
{% if vec == 2 %}
    let h{$ i $} = m{$ i $}.xz;
    let l{$ i $} = m{$ i $}.yw;
{% else %}
    let h{$ i $} = m{$ i $}.x;
    let l{$ i $} = m{$ i $}.y;
{% endif %}
{% if two_prod != "fma" %}
    let q{$ i $} = (4097.0 * h{$ i $}) * params.one;
    let hh{$ i $} = q{$ i $} * params.one - (q{$ i $} - h{$ i $});
    let hl{$ i $} = h{$ i $} - hh{$ i $};
{% endif %}
{% endfor %}
{% endif %}
{% for o in range(block) %}
    if (first + {$ o $} < n) {
{% if df %}
        var hi = {$ vt $}(0.0);
        var lo = {$ vt $}(0.0);
        var raw = {$ vt $}(0.0);
{% for k in range(taps) %}
        {
            let w = params.w[{$ k $}];
            let ph = (w.x * h{$ o + k $}) * params.one;
            raw += ph;
{% if two_prod == "fma" %}
            let err = fma({$ vt $}(w.x), h{$ o + k $}, -ph);
{% else %}
            let err = ((w.z * hh{$ o + k $} - ph) + w.z * hl{$ o + k $} + w.w * hh{$ o + k $})
                + w.w * hl{$ o + k $};
{% endif %}
            let pl = err + (w.x * l{$ o + k $} + w.y * h{$ o + k $});
            let s = hi + ph;
            let bb = s * params.one - hi;
            let e = (hi - (s - bb)) + (ph - bb);
            let t = e + (lo + pl);
            hi = s + t;
            lo = t - (hi * params.one - s);
        }
{% endfor %}
        let bad = (bitcast<{$ vu $}>(raw) & {$ vu $}(0x7f800000u)) == {$ vu $}(0x7f800000u);
        hi = select(hi, raw, bad);
        lo = select(lo, {$ vt $}(0.0), bad);
{% if vec == 2 %}
        dst[(row + u32(first + {$ o $})) * params.inner_v + jv] = vec4<f32>(hi.x, lo.x, hi.y, lo.y);
{% else %}
        dst[(row + u32(first + {$ o $})) * params.inner_v + jv] = vec2<f32>(hi, lo);
{% endif %}
{% else %}
        dst[(row + u32(first + {$ o $})) * params.inner_v + jv] = {$ f32_sum(o) $};
{% endif %}
    }
{% endfor %}
{% endif %}
}
