// Tiled transpose through workgroup memory: reads and writes both run along rows of their
// texture, the swap happens in a TILE×(TILE+1) block (the extra column avoids bank conflicts).
// A workgroup of TILE×ROWS invocations moves the tile, each invocation TILE / ROWS texels a
// column apart (CUDA's classic transpose): fewer invocations share the one barrier.

{% include "bindings.wgsl" %}
// params.size is src's (dst is height × width); params.constant and binding 2 are not used.

const TILE: i32 = {$ tile $};
const ROWS: i32 = {$ rows $};
var<workgroup> block: array<vec4<f32>, {$ tile * (tile + 1) $}>;

@compute @workgroup_size({$ tile $}, {$ rows $})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let lx = i32(lid.x);
    let sx = i32(wid.x) * TILE + lx;
{% for k in range(0, tile, rows) %}
    {
        let ly = i32(lid.y) + {$ k $};
        let sy = i32(wid.y) * TILE + ly;
        if (sx < params.size.x && sy < params.size.y) {
            block[ly * (TILE + 1) + lx] = textureLoad(src, vec2<i32>(sx, sy), 0);
        }
    }
{% endfor %}
    workgroupBarrier();
    // dst(dx, dy) = src(dy, dx); this workgroup writes the mirrored block, along dst's rows.
    let dx = i32(wid.y) * TILE + lx;
{% for k in range(0, tile, rows) %}
    {
        let ly = i32(lid.y) + {$ k $};
        let dy = i32(wid.x) * TILE + ly;
        if (dx < params.size.y && dy < params.size.x) {
            textureStore(dst, vec2<i32>(dx, dy), block[lx * (TILE + 1) + ly]);
        }
    }
{% endfor %}
}
