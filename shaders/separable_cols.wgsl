// Vertical 1-D pass of a separable filter over 2-D tiles: a workgroup loads a TILE_W×TILE_H
// block plus its vertical halo into workgroup memory, so that neighbouring invocations share
// every row they read instead of each walking a column of global memory alone.

struct Params {
    size: vec2<i32>,  // width, height of src and dst
    constant: f32,    // value read outside the image along y (the row pass applied to V)
    channels: i32,    // channels that carry data (1..4)
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var dst: texture_storage_2d<rgba32float, write>;
@group(0) @binding(2) var<storage, read> weights: array<f32>;  // TAPS column factors
@group(0) @binding(3) var<uniform> params: Params;

override TAPS: i32 = 3;  // length of the 1-D kernel, anchored at TAPS / 2

{% include "border.wgsl" %}

const TILE_W: i32 = {$ tile_w $};
const TILE_H: i32 = {$ tile_h $};
// Sized on the host: TILE_W * (TILE_H + TAPS - 1) texels, row-major with rows TILE_W long.
var<workgroup> block: array<vec4<f32>, {$ halo_len $}>;

@compute @workgroup_size({$ tile_w $}, {$ tile_h $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) lindex: u32,
) {
    let block_n = TILE_W * (TILE_H + TAPS - 1);
    let x0 = i32(wid.x) * TILE_W;
    let y0 = i32(wid.y) * TILE_H - TAPS / 2;
    for (var i = i32(lindex); i < block_n; i += TILE_W * TILE_H) {
        // Columns right of the image are loaded from the last column (never stored) so that
        // every invocation reaches the barrier; borders apply along y only.
        let x = min(x0 + i % TILE_W, params.size.x - 1);
        block[i] = load_src(x, y0 + i / TILE_W);
    }
    workgroupBarrier();
    let x = x0 + i32(lid.x);
    let y = i32(wid.y) * TILE_H + i32(lid.y);
    if (x < params.size.x && y < params.size.y) {
        var acc = vec4<f32>(0.0);
        for (var k = 0; k < TAPS; k++) {
            acc += weights[k] * block[(i32(lid.y) + k) * TILE_W + i32(lid.x)];
        }
        textureStore(dst, vec2<i32>(x, y), acc);
    }
}
