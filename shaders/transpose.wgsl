// Tiled transpose through workgroup memory: reads and writes both run along rows of their
// texture, the swap happens in a TILE×(TILE+1) block (the extra column avoids bank conflicts).
// A workgroup of TILE×ROWS invocations moves the tile, each invocation TILE / ROWS texels a
// column apart (CUDA's classic transpose): fewer invocations share the one barrier.

struct Params {
    size: vec2<i32>,  // width, height of src; dst is height × width
    constant: f32,    // unused here; kept so every pass shares one bind group layout
    channels: i32,
}

@group(0) @binding(0) var src: texture_2d<f32>;
// dst_format: rgba32float, or rgba8unorm for the last pass when the caller wants 8-bit output
// (the store rounds to nearest and clamps to [0, 1]); intermediates always stay rgba32float.
@group(0) @binding(1) var dst: texture_storage_2d<{$ dst_format | default("rgba32float") $}, write>;
@group(0) @binding(3) var<uniform> params: Params;

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
