// im2col: write every window of the input as one column of a (Cin·kh·kw × pixels) matrix.
// Template: layout ("nchw" | "nhwc"), wg. NCHW stores the matrix K×P (row k = one tap of one
// channel across all output pixels, k = (c, ky, kx) like the weights); NHWC stores it P×K
// (row p = one window, k = (ky, kx, c): a window's k·C values stay contiguous as in the input).
// One invocation per matrix element, in storage order, so the writes are contiguous.

struct Params {
    n: u32, cin: u32, h: u32, w: u32,
    oh: u32, ow: u32, kh: u32, kw: u32,
    stride: u32, dilation: u32, pad: u32, total: u32,
    row_pitch: u32, kdim: u32, pixels: u32, _unused: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> col: array<f32>;

@compute @workgroup_size({$ wg $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.y * p.row_pitch + gid.x;
    if (idx >= p.total) {
        return;
    }
{% if layout == "nchw" %}
    let k = idx / p.pixels;
    let px = idx % p.pixels;
    let kx = k % p.kw;
    let ky = (k / p.kw) % p.kh;
    let c = k / (p.kw * p.kh);
{% else %}
    let px = idx / p.kdim;
    let k = idx % p.kdim;
    let c = k % p.cin;
    let kx = (k / p.cin) % p.kw;
    let ky = k / (p.cin * p.kw);
{% endif %}
    let ox = px % p.ow;
    let oy = (px / p.ow) % p.oh;
    let n = px / (p.ow * p.oh);
    let iy = i32(oy * p.stride + ky * p.dilation) - i32(p.pad);
    let ix = i32(ox * p.stride + kx * p.dilation) - i32(p.pad);
    var v = 0.0;
    if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
{% if layout == "nchw" %}
        v = x[((n * p.cin + c) * p.h + u32(iy)) * p.w + u32(ix)];
{% else %}
        v = x[((n * p.h + u32(iy)) * p.w + u32(ix)) * p.cin + c];
{% endif %}
    }
    col[idx] = v;
}
