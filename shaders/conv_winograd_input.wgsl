// Winograd input transform V = Bᵀ d B of F(m×m, 3×3): one invocation per (channel, tile).
// Tile p = (n·tiles_y + ty)·tiles_x + tx covers outputs (ty·m .. ty·m+m−1, tx·m ..); its
// α×α input window starts at (ty·m − pad, tx·m − pad) and reads zeros outside the image. The
// result goes to V[(t·C + c)·P + p] (t = ξ·α + ν): each of the α² GEMMs reads a C×P matrix.
// Template: alpha, m, code (the unrolled Bᵀ·d·B), layout ("nchw" | "nhwc"), wg.

struct Params {
    n: u32, c: u32, h: u32, w: u32,
    tiles_x: u32, tiles_y: u32, pad: u32, total: u32,
    row_pitch: u32, tiles: u32, _u0: u32, _u1: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> v: array<f32>;

fn load(n: u32, c: u32, iy: i32, ix: i32) -> f32 {
    if (iy < 0 || iy >= i32(p.h) || ix < 0 || ix >= i32(p.w)) {
        return 0.0;  // zero padding
    }
{% if layout == "nchw" %}
    return x[((n * p.c + c) * p.h + u32(iy)) * p.w + u32(ix)];
{% else %}
    return x[((n * p.h + u32(iy)) * p.w + u32(ix)) * p.c + c];
{% endif %}
}

@compute @workgroup_size({$ wg $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.y * p.row_pitch + gid.x;
    if (idx >= p.total) {
        return;
    }
{% if layout == "nchw" %}
    // neighbouring invocations take neighbouring tiles of one channel
    let tile = idx % p.tiles;
    let c = idx / p.tiles;
{% else %}
    // neighbouring invocations take neighbouring channels of one tile
    let c = idx % p.c;
    let tile = idx / p.c;
{% endif %}
    let tx = tile % p.tiles_x;
    let ty = (tile / p.tiles_x) % p.tiles_y;
    let n = tile / (p.tiles_x * p.tiles_y);
    let iy0 = i32(ty * {$ m $}u) - i32(p.pad);
    let ix0 = i32(tx * {$ m $}u) - i32(p.pad);
{% for i in range(alpha) %}{% for j in range(alpha) %}
    let d_{$ i $}_{$ j $} = load(n, c, iy0 + {$ i $}, ix0 + {$ j $});
{% endfor %}{% endfor %}
{% for line in code %}
    {$ line $}
{% endfor %}
    let stride = p.c * p.tiles;
    let at = c * p.tiles + tile;
{% for i in range(alpha) %}{% for j in range(alpha) %}
    v[{$ i * alpha + j $}u * stride + at] = v_{$ i $}_{$ j $};
{% endfor %}{% endfor %}
}
