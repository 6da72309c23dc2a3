// The last pass of the fft strategy: the valid part of each block's inverse transform, its
// first tile.y × tile.x elements, into the output image; the channels of one pixel, spread over
// the halves of up to four complex items, are gathered into one texel.

{% include "fft_params.wgsl" %}

const NR: i32 = {$ nr $};  // block rows
const NC: i32 = {$ nc $};  // block columns

@group(0) @binding(1) var<storage, read> data: array<vec2<f32>>;  // items × NR × NC
// dst_format: rgba32float, or rgba8unorm when the caller wants 8-bit output (the store rounds
// to nearest and clamps to [0, 1], as the other strategies' last pass does).
@group(0) @binding(5) var dst: texture_storage_2d<{$ dst_format | default("rgba32float") $}, write>;

@compute @workgroup_size({$ wg_x $}, {$ wg_y $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = i32(gid.x);
    let r = i32(gid.y);
    let lb = i32(gid.z);
    if (c >= params.tile.x || r >= params.tile.y) {
        return;
    }
    let p = block_origin(lb) + vec2<i32>(c, r);
    if (p.x >= params.size.x || p.y >= params.size.y) {
        return;
    }
    var out = vec4<f32>(0.0);
    for (var ch = 0; ch < params.channels; ch++) {
        let ri = lb * params.channels + ch;
        let v = data[(ri / 2) * NR * NC + r * NC + c];
        out[ch] = select(v.x, v.y, (ri & 1) == 1);
    }
    textureStore(dst, p, out);
}
