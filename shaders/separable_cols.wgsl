// Vertical 1-D pass of a separable filter. Each invocation filters BLOCK outputs stacked in one
// column: it reads the BLOCK + TAPS - 1 texels they share once, into registers, instead of
// BLOCK × TAPS times. Neighbouring invocations of a workgroup take neighbouring columns, so each
// row the workgroup reads is read along the row (neighbouring texels, one cache line) rather
// than by one invocation walking a column of global memory alone.
//
// Up to 65 taps the weights are baked into the code as literals and every tap is unrolled (the
// pipeline is built per kernel and cached); longer kernels loop over a weights buffer.
//
// Every load goes through the border mode (border_index), also in the interior: there its in-range
// test is one compare. An interior copy of the code without it ran 1.6-1.7 × slower on lavapipe,
// which runs invocations as SIMD lanes and so executes both sides of a branch they take apart.

struct Params {
    size: vec2<i32>,  // width, height of src and dst
    constant: f32,    // value read outside the image along y (the row pass applied to V)
    channels: i32,    // channels that carry data (1..4)
}

@group(0) @binding(0) var src: texture_2d<f32>;
// dst_format: rgba32float, or rgba8unorm for the last pass when the caller wants 8-bit output
// (the store rounds to nearest and clamps to [0, 1]); intermediates always stay rgba32float.
@group(0) @binding(1) var dst: texture_storage_2d<{$ dst_format | default("rgba32float") $}, write>;
@group(0) @binding(2) var<storage, read> weights: array<f32>;  // TAPS column factors
@group(0) @binding(3) var<uniform> params: Params;

const TAPS: i32 = {$ taps $};  // length of the 1-D kernel, anchored at TAPS / 2
const BLOCK: i32 = {$ block $};  // outputs per invocation, along y

{% include "border.wgsl" %}

{% macro load(i) %}load_mapped(sx, border_index(top + {$ i $}, params.size.y)){% endmacro %}
{% macro filter() %}
{% if baked %}
{% for i in range(block + taps - 1) %}
        let t{$ i $} = {$ load(i) $};
{% endfor %}
{% for o in range(block) %}
        if (y0 + {$ o $} < params.size.y) {
            textureStore(dst, vec2<i32>(x, y0 + {$ o $}), {% for k in range(taps) %}{$ baked[k] $} * t{$ o + k $}{% if not loop.last %} + {% endif %}{% endfor %});
        }
{% endfor %}
{% else %}
        var acc = vec4<f32>(0.0);
        for (var k = 0; k < TAPS; k++) {
            acc += weights[k] * {$ load("k") $};
        }
        textureStore(dst, vec2<i32>(x, y0), acc);
{% endif %}
{% endmacro %}

@compute @workgroup_size({$ wg_x $}, {$ wg_y $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x = i32(gid.x);
    let y0 = i32(gid.y) * BLOCK;
    if (x >= params.size.x || y0 >= params.size.y) {
        return;
    }
    let top = y0 - TAPS / 2;
    let sx = border_index(x, params.size.x);
{$ filter() $}
}
