// One 1-D pass of a separable filter, along x (separable_rows.wgsl) or y (separable_cols.wgsl,
// which set `vertical`). Each invocation filters BLOCK neighbouring outputs of one row or
// column: it reads the BLOCK + TAPS - 1 texels they share once, into registers, instead of
// BLOCK × TAPS times. Neighbouring invocations of a workgroup take neighbouring rows' stretches
// (row pass) or neighbouring columns (column pass, so that each row the workgroup reads is
// read along the row: neighbouring texels, one cache line).
//
// Up to 65 taps the weights are baked into the code as literals and every tap is unrolled (the
// pipeline is built per kernel and cached); longer kernels loop over a weights buffer.
// A zero weight is never multiplied (a baked one is left out of the sum), so that NaN or Inf
// spreads only under non-zero taps (DESIGN.md "Numbers", as scipy.ndimage.correlate).
// `unrolled` unrolls the taps the same way but reads each weight from the buffer, so that the
// k pairs of a low-rank sum, and every kernel of the same size, share one pipeline: a new
// kernel runs without a compile (a zero weight is selected away, not multiplied).
// Both sum an output as one chain of fma()s, tap by tap, so that they give the same bits on
// every adapter: written as products and sums, a compiler that contracts a * b + c into a
// fused operation (wgpu's OpenGL backend on llvmpipe; hardware GPUs' compilers, where the
// baked pipeline is swapped in for the buffer variant) contracted the baked literals' sum and
// not the buffer variant's selected products, and the two differed by an ulp.
// `accumulate` (lowrank's column passes after the first) adds the running sum of the previous
// pairs, read from `sum_src` at the output texel, to each result.
//
// `rgb` (images of 1 to 3 channels: the alpha lane is never read back) computes only the
// .rgb lanes and stores an alpha of 1: lavapipe runs each lane of a vec4 as its own SIMD
// instruction, so the fourth lane was a quarter of the pass's arithmetic for nothing.
//
// Every load goes through the border mode (border_index), also in the interior: there its
// in-range test is one compare. An interior copy of the code without it ran 1.6-1.7 × slower on
// lavapipe, which runs invocations as SIMD lanes and so executes both sides of a branch they
// take apart.

{% include "bindings.wgsl" %}
@group(0) @binding(2) var<storage, read> weights: array<f32>;  // TAPS 1-D factors
// params.constant: the border value along the pass (column pass: the row pass applied to V).
{% set accumulate = accumulate | default(false) %}
{% set unrolled = baked or (unrolled | default(false)) %}
{% set rgb = rgb | default(false) %}
{% set vec = "vec3<f32>" if rgb else "vec4<f32>" %}
{% set lanes = ".rgb" if rgb else "" %}
{% if accumulate %}
@group(0) @binding(4) var sum_src: texture_2d<f32>;  // the sum of the previous pairs
{% endif %}

const TAPS: i32 = {$ taps $};  // length of the 1-D kernel, anchored at TAPS / 2
const BLOCK: i32 = {$ block $};  // outputs per invocation, along the pass

{% include "border.wgsl" %}

// Along the pass: `first` is the invocation's first output, `n` the image's extent; across
// it, `fixed` is its row (row pass) or column (column pass), mapped once by the border mode.
{% if vertical %}
{% macro at(i) %}vec2<i32>(fixed, first + {$ i $}){% endmacro %}
{% macro load(i) %}load_mapped(mapped, border_index(start + {$ i $}, n)){$ lanes $}{% endmacro %}
{% else %}
{% macro at(i) %}vec2<i32>(first + {$ i $}, fixed){% endmacro %}
{% macro load(i) %}load_mapped(border_index(start + {$ i $}, n), mapped){$ lanes $}{% endmacro %}
{% endif %}
{% macro plus_sum(i) %}{% if accumulate %} + textureLoad(sum_src, {$ at(i) $}, 0){$ lanes $}{% endif %}{% endmacro %}
{% macro store(value) %}{% if rgb %}vec4<f32>({$ value $}, 1.0){% else %}{$ value $}{% endif %}{% endmacro %}

@compute @workgroup_size({$ wg_x $}, {$ wg_y $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
{% if vertical %}
    let fixed = i32(gid.x);
    let first = i32(gid.y) * BLOCK;
    let n = params.size.y;
    let across = params.size.x;
{% else %}
    let first = i32(gid.x) * BLOCK;
    let fixed = i32(gid.y);
    let n = params.size.x;
    let across = params.size.y;
{% endif %}
    if (first >= n || fixed >= across) {
        return;
    }
    let start = first - TAPS / 2;
    let mapped = border_index(fixed, across);
{% if unrolled %}
{% if not baked %}
{% for k in range(taps) %}
    let w{$ k $} = weights[{$ k $}];
{% endfor %}
{% endif %}
{% for i in range(block + taps - 1) %}
    let t{$ i $} = {$ load(i) $};
{% endfor %}
{% for o in range(block) %}
    if (first + {$ o $} < n) {
        var s{$ o $} = {$ vec $}(0.0);
{% for k in range(taps) if not baked or baked[k] not in ("0.0", "-0.0") %}
{% if baked %}
        s{$ o $} = fma({$ vec $}({$ baked[k] $}), t{$ o + k $}, s{$ o $});
{% else %}
        s{$ o $} = select(s{$ o $}, fma({$ vec $}(w{$ k $}), t{$ o + k $}, s{$ o $}), w{$ k $} != 0.0);
{% endif %}
{% endfor %}
        textureStore(dst, {$ at(o) $}, {$ store("s" ~ o ~ plus_sum(o)) $});
    }
{% endfor %}
{% else %}
    var acc = {$ vec $}(0.0);
    for (var k = 0; k < TAPS; k++) {
        let wk = weights[k];
        if (wk != 0.0) {  // a zero tap is skipped: NaN or Inf under it does not spread
            acc += wk * {$ load("k") $};
        }
    }
    textureStore(dst, {$ at(0) $}, {$ store("acc" ~ plus_sum(0)) $});
{% endif %}
}
