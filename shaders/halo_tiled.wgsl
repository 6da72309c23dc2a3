// Halo-tiled 2-D correlation: a workgroup computes a TILE×TILE block of outputs from its
// (TILE+KW-1)×(TILE+KH-1) input halo, loaded once into workgroup memory by all invocations.
//
// Layout "vec4" keeps RGBA texels in the halo (one load, one barrier). Layout "scalar" keeps one
// f32 channel at a time, a quarter of the memory, so that big kernels still fit: the workgroup
// then loops over the channels, reloading the halo for each.

struct Params {
    size: vec2<i32>,  // width, height of src and dst
    constant: f32,    // border value for BorderMode.CONSTANT
    channels: i32,    // channels that carry data (1..4)
}

@group(0) @binding(0) var src: texture_2d<f32>;
@group(0) @binding(1) var dst: texture_storage_2d<rgba32float, write>;
@group(0) @binding(2) var<storage, read> weights: array<f32>;  // rows × cols, row-major
@group(0) @binding(3) var<uniform> params: Params;

override KW: i32 = 3;  // kernel columns
override KH: i32 = 3;  // kernel rows

{% include "border.wgsl" %}

const TILE: i32 = {$ tile $};
// Sized on the host for this kernel: (TILE + KW - 1) * (TILE + KH - 1) texels.
{% if layout == "vec4" %}
var<workgroup> halo: array<vec4<f32>, {$ halo_len $}>;
{% else %}
var<workgroup> halo: array<f32, {$ halo_len $}>;
{% endif %}

@compute @workgroup_size({$ tile $}, {$ tile $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) lindex: u32,
) {
    let halo_w = TILE + KW - 1;
    let halo_n = halo_w * (TILE + KH - 1);
    // Top-left input pixel of the halo: the tile origin moved up-left by the anchor.
    let origin = vec2<i32>(wid.xy) * TILE - vec2<i32>(KW / 2, KH / 2);
    let x = i32(wid.x) * TILE + i32(lid.x);
    let y = i32(wid.y) * TILE + i32(lid.y);
    // Invocations outside the image still help load the halo and reach the barrier;
    // they only skip the store.
    let inside = x < params.size.x && y < params.size.y;
{% if layout == "vec4" %}
    // Strided cooperative load: invocation i loads texels i, i + TILE², ...
    for (var i = i32(lindex); i < halo_n; i += TILE * TILE) {
        halo[i] = load_src(origin.x + i % halo_w, origin.y + i / halo_w);
    }
    workgroupBarrier();
    if (inside) {
        var acc = vec4<f32>(0.0);
        for (var ky = 0; ky < KH; ky++) {
            let row = (i32(lid.y) + ky) * halo_w + i32(lid.x);
            for (var kx = 0; kx < KW; kx++) {
                acc += weights[ky * KW + kx] * halo[row + kx];
            }
        }
        textureStore(dst, vec2<i32>(x, y), acc);
    }
{% else %}
    var acc = vec4<f32>(0.0);
    for (var c = 0; c < params.channels; c++) {
        for (var i = i32(lindex); i < halo_n; i += TILE * TILE) {
            halo[i] = load_src(origin.x + i % halo_w, origin.y + i / halo_w)[c];
        }
        workgroupBarrier();
        if (inside) {
            var sum = 0.0;
            for (var ky = 0; ky < KH; ky++) {
                let row = (i32(lid.y) + ky) * halo_w + i32(lid.x);
                for (var kx = 0; kx < KW; kx++) {
                    sum += weights[ky * KW + kx] * halo[row + kx];
                }
            }
            acc[c] = sum;
        }
        // The next channel overwrites the halo: everyone must be done reading this one.
        workgroupBarrier();
    }
    if (inside) {
        textureStore(dst, vec2<i32>(x, y), acc);
    }
{% endif %}
}
