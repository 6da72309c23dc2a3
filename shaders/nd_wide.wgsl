// 32-byte storage accesses for the f32 passes of blurapp.gpu.ndpass (`wide`, a device with
// "shader-int64"; included by nd_plane.wgsl and nd_line.wgsl): the buffers bound as
// array<vec4<u64>>, each access 8 floats as bit patterns, split and packed with bitcasts (the
// values are untouched). lavapipe's per-lane loop over a storage access costs per access and
// lane more than per byte, so these take about half the per-lane work of vec4<f32> accesses.
{% if texin | default(false) %}
// `texin`: the input is also an rgba32float texture, the array's texels (4 floats each),
// where a texel fetch is cheaper than a storage load (lavapipe: unrolled per lane, no loop
// with a vector rebuilt through memory).
{% include "nd_texin.wgsl" %}
{% endif %}
@group(0) @binding(0) var<storage, read> src: array<vec4<u64>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u64>>;

struct Chunk {
    a: vec4<f32>,
    b: vec4<f32>,
}

fn lo_hi(v: u64) -> vec2<f32> {
    return vec2<f32>(bitcast<f32>(u32(v)), bitcast<f32>(u32(v >> 32u)));
}

fn packed(x: f32, y: f32) -> u64 {
    return u64(bitcast<u32>(x)) | (u64(bitcast<u32>(y)) << 32u);
}

fn unpacked(v: vec4<u64>) -> Chunk {
    return Chunk(vec4<f32>(lo_hi(v.x), lo_hi(v.y)), vec4<f32>(lo_hi(v.z), lo_hi(v.w)));
}

// Elements 8 i .. 8 i + 7 of the array.
fn chunk(i: u32) -> Chunk {
{% if texin | default(false) %}
    return Chunk(fetch(2u * i), fetch(2u * i + 1u));
{% else %}
    return unpacked(src[i]);
{% endif %}
}

fn put(i: u32, a: vec4<f32>, b: vec4<f32>) {
    dst[i] = vec4<u64>(packed(a.x, a.y), packed(a.z, a.w), packed(b.x, b.y), packed(b.z, b.w));
}

// Element e of the array.
fn element(e: u32) -> f32 {
{% if texin | default(false) %}
    return fetch(e / 4u)[e % 4u];
{% else %}
    let v = src[e / 8u][(e / 2u) % 4u];
    return bitcast<f32>(u32(v >> (32u * (e % 2u))));
{% endif %}
}
