// Winograd output transform Y = Aᵀ M A of F(m×m, 3×3), plus the bias, in the layer's layout.
// One invocation per (output channel, tile): reads the α² GEMM results M[(t·Cout + o)·P + p]
// and writes the tile's m×m outputs, masked where the tile hangs over the output's edge.
// Template: alpha, m, code (the unrolled Aᵀ·M·A), layout ("nchw" | "nhwc"), wg.

struct Params {
    cout: u32, oh: u32, ow: u32, tiles_x: u32,
    tiles_y: u32, tiles: u32, total: u32, row_pitch: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> mm: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

fn store(n: u32, o: u32, oy: u32, ox: u32, value: f32) {
    if (oy >= p.oh || ox >= p.ow) {
        return;
    }
{% if layout == "nchw" %}
    y[((n * p.cout + o) * p.oh + oy) * p.ow + ox] = value;
{% else %}
    y[((n * p.oh + oy) * p.ow + ox) * p.cout + o] = value;
{% endif %}
}

@compute @workgroup_size({$ wg $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.y * p.row_pitch + gid.x;
    if (idx >= p.total) {
        return;
    }
{% if layout == "nchw" %}
    let tile = idx % p.tiles;
    let o = idx / p.tiles;
{% else %}
    let o = idx % p.cout;
    let tile = idx / p.cout;
{% endif %}
    let stride = p.cout * p.tiles;
    let at = o * p.tiles + tile;
{% for i in range(alpha) %}{% for j in range(alpha) %}
    let m_{$ i $}_{$ j $} = mm[{$ i * alpha + j $}u * stride + at];
{% endfor %}{% endfor %}
{% for line in code %}
    {$ line $}
{% endfor %}
    let tx = tile % p.tiles_x;
    let ty = (tile / p.tiles_x) % p.tiles_y;
    let n = tile / (p.tiles_x * p.tiles_y);
    let b = bias[o];
{% for i in range(m) %}{% for j in range(m) %}
    store(n, o, ty * {$ m $}u + {$ i $}u, tx * {$ m $}u + {$ j $}u, y_{$ i $}_{$ j $} + b);
{% endfor %}{% endfor %}
}
