// Horizontal 1-D pass of a separable filter. Each invocation filters BLOCK neighbouring outputs
// of one row: it reads the BLOCK + TAPS - 1 texels they share once, into registers, instead of
// BLOCK × TAPS times, and neighbouring invocations of the workgroup read neighbouring stretches
// of the same rows. The transpose strategy runs it twice (on the image and on its transpose).
//
// Up to 65 taps the weights are baked into the code as literals and every tap is unrolled (the
// pipeline is built per kernel and cached); longer kernels loop over a weights buffer.
//
// Every load goes through the border mode (border_index), also in the interior: there its in-range
// test is one compare. An interior copy of the code without it ran 1.6-1.7 × slower on lavapipe,
// which runs invocations as SIMD lanes and so executes both sides of a branch they take apart.

struct Params {
    size: vec2<i32>,  // width, height of src and dst
    constant: f32,    // border value read outside the image along x
    channels: i32,    // channels that carry data (1..4)
}

@group(0) @binding(0) var src: texture_2d<f32>;
// dst_format: rgba32float, or rgba8unorm for the last pass when the caller wants 8-bit output
// (the store rounds to nearest and clamps to [0, 1]); intermediates always stay rgba32float.
@group(0) @binding(1) var dst: texture_storage_2d<{$ dst_format | default("rgba32float") $}, write>;
@group(0) @binding(2) var<storage, read> weights: array<f32>;  // TAPS row factors
@group(0) @binding(3) var<uniform> params: Params;

const TAPS: i32 = {$ taps $};  // length of the 1-D kernel, anchored at TAPS / 2
const BLOCK: i32 = {$ block $};  // outputs per invocation, along x

{% include "border.wgsl" %}

{% macro load(i) %}load_mapped(border_index(left + {$ i $}, params.size.x), sy){% endmacro %}
{% macro filter() %}
{% if baked %}
{% for i in range(block + taps - 1) %}
        let t{$ i $} = {$ load(i) $};
{% endfor %}
{% for o in range(block) %}
        if (x0 + {$ o $} < params.size.x) {
            textureStore(dst, vec2<i32>(x0 + {$ o $}, y), {% for k in range(taps) %}{$ baked[k] $} * t{$ o + k $}{% if not loop.last %} + {% endif %}{% endfor %});
        }
{% endfor %}
{% else %}
        var acc = vec4<f32>(0.0);
        for (var k = 0; k < TAPS; k++) {
            acc += weights[k] * {$ load("k") $};
        }
        textureStore(dst, vec2<i32>(x0, y), acc);
{% endif %}
{% endmacro %}

@compute @workgroup_size({$ wg_x $}, {$ wg_y $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x0 = i32(gid.x) * BLOCK;
    let y = i32(gid.y);
    if (x0 >= params.size.x || y >= params.size.y) {
        return;
    }
    let left = x0 - TAPS / 2;
    let sy = border_index(y, params.size.y);
{$ filter() $}
}
