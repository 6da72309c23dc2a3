// The input as a texture (blurapp.gpu.ndpass's TEXTURE_INPUT; included by nd_wide.wgsl,
// nd_line.wgsl and nd_taps.wgsl under `texin`): element or texel t at (t mod texw, t / texw),
// rows of {$ texw $} texels, which NdPasses.run copies from the input buffer. `texfmt`
// (ndpass.TEXTURE_STORAGE): bound as a read-only storage texture of that format, read without
// a mip level; else as a sampled texture (textureLoad at level 0). On lavapipe a sampled fetch
// loads the level's row stride and offset once per SIMD lane (the level goes through naga's
// clamp to the texture's levels, so it is not a constant to llvmpipe) where a storage texel
// load has one level: a fetch of 16 texels per invocation over a 1080p-sized rgba32float
// texture took 9.2 ms sampled, 4.6 ms as a storage texture (and 13.0 ms from a storage
// buffer), on a Zen 4 VM.
{% if texfmt | default("") %}
@group(0) @binding(4) var srct: texture_storage_2d<{$ texfmt $}, read>;
fn fetch(t: u32) -> vec4<f32> {
    return textureLoad(srct, vec2<u32>(t % {$ texw $}u, t / {$ texw $}u));
}
{% else %}
@group(0) @binding(4) var srct: texture_2d<f32>;
fn fetch(t: u32) -> vec4<f32> {
    return textureLoad(srct, vec2<u32>(t % {$ texw $}u, t / {$ texw $}u), 0);
}
{% endif %}
{% if df | default(false) %}

// df64 (blurapp.gpu.ndpass's DF64_TEXTURES): pair t, half of rgba32float texel t / 2.
fn fetch_pair(t: u32) -> vec2<f32> {
    let q = fetch(t / 2u);
    return select(q.xy, q.zw, (t & 1u) == 1u);
}
{% endif %}
