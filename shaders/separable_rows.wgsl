// Horizontal 1-D pass of a separable filter: a workgroup loads a STRIP_W×STRIP_H strip of
// input plus its horizontal halo into workgroup memory, then each invocation filters one pixel.
// The transpose strategy runs it twice (on the image and on its transpose).

struct Params {
    size: vec2<i32>,  // width, height of src and dst
    constant: f32,    // border value read outside the image along x
    channels: i32,    // channels that carry data (1..4)
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var dst: texture_storage_2d<rgba32float, write>;
@group(0) @binding(2) var<storage, read> weights: array<f32>;  // TAPS row factors
@group(0) @binding(3) var<uniform> params: Params;

override TAPS: i32 = 3;  // length of the 1-D kernel, anchored at TAPS / 2

{% include "border.wgsl" %}

const STRIP_W: i32 = {$ strip_w $};
const STRIP_H: i32 = {$ strip_h $};
// Sized on the host: STRIP_H * (STRIP_W + TAPS - 1) texels.
var<workgroup> strip: array<vec4<f32>, {$ halo_len $}>;

@compute @workgroup_size({$ strip_w $}, {$ strip_h $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) lindex: u32,
) {
    let strip_w = STRIP_W + TAPS - 1;
    let strip_n = strip_w * STRIP_H;
    let x0 = i32(wid.x) * STRIP_W - TAPS / 2;
    let y0 = i32(wid.y) * STRIP_H;
    for (var i = i32(lindex); i < strip_n; i += STRIP_W * STRIP_H) {
        // Rows below the image are loaded from the last row (never stored) so that every
        // invocation reaches the barrier; borders apply along x only.
        let y = min(y0 + i / strip_w, params.size.y - 1);
        strip[i] = load_src(x0 + i % strip_w, y);
    }
    workgroupBarrier();
    let x = i32(wid.x) * STRIP_W + i32(lid.x);
    let y = y0 + i32(lid.y);
    if (x < params.size.x && y < params.size.y) {
        let row = i32(lid.y) * strip_w + i32(lid.x);
        var acc = vec4<f32>(0.0);
        for (var k = 0; k < TAPS; k++) {
            acc += weights[k] * strip[row + k];
        }
        textureStore(dst, vec2<i32>(x, y), acc);
    }
}
