// The subgroup shuffle of nd_plane.wgsl's and nd_line.wgsl's `shuffle` (included by both):
// `v`, a chunk of 4 floats (or with `wide` 8), of the invocation `m` lanes on in the subgroup.
fn shuffled(v: {$ "Chunk" if wide else "vec4<f32>" $}, m: u32) -> {$ "Chunk" if wide else "vec4<f32>" $} {
{% if wide %}
    return Chunk(subgroupShuffleDown(v.a, m), subgroupShuffleDown(v.b, m));
{% else %}
    return subgroupShuffleDown(v, m);
{% endif %}
}
