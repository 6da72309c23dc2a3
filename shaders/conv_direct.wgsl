// Direct Conv2D: one invocation per output element, every tap read from global memory.
// Template: layout ("nchw" | "nhwc"), wg (workgroup size). Shapes come in the uniform, so one
// pipeline per layout serves every layer; groups of any size (depthwise included) work here.

struct Params {
    n: u32, cin: u32, h: u32, w: u32,
    cout: u32, oh: u32, ow: u32, groups: u32,
    kh: u32, kw: u32, stride: u32, dilation: u32,
    pad: u32, total: u32, row_pitch: u32, _unused: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;   // (cout, cin/groups, kh, kw)
@group(0) @binding(3) var<storage, read> bias: array<f32>; // (cout,)
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

@compute @workgroup_size({$ wg $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    // A 2-D dispatch: large layers need more than 65535 workgroups along x.
    let idx = gid.y * p.row_pitch + gid.x;
    if (idx >= p.total) {
        return;
    }
{% if layout == "nchw" %}
    let ox = idx % p.ow;
    var t = idx / p.ow;
    let oy = t % p.oh;
    t = t / p.oh;
    let m = t % p.cout;
    let n = t / p.cout;
{% else %}
    // NHWC: neighbouring invocations share a pixel and differ in the output channel.
    let m = idx % p.cout;
    var t = idx / p.cout;
    let ox = t % p.ow;
    t = t / p.ow;
    let oy = t % p.oh;
    let n = t / p.oh;
{% endif %}
    let cg = p.cin / p.groups;
    let c0 = (m / (p.cout / p.groups)) * cg;
    let iy0 = i32(oy * p.stride) - i32(p.pad);
    let ix0 = i32(ox * p.stride) - i32(p.pad);
    var acc = 0.0;
    for (var c = 0u; c < cg; c++) {
        for (var ky = 0u; ky < p.kh; ky++) {
            let iy = iy0 + i32(ky * p.dilation);
            if (iy < 0 || iy >= i32(p.h)) {
                continue;  // zero padding
            }
            for (var kx = 0u; kx < p.kw; kx++) {
                let ix = ix0 + i32(kx * p.dilation);
                if (ix < 0 || ix >= i32(p.w)) {
                    continue;
                }
{% if layout == "nchw" %}
                let xi = ((n * p.cin + c0 + c) * p.h + u32(iy)) * p.w + u32(ix);
{% else %}
                let xi = ((n * p.h + u32(iy)) * p.w + u32(ix)) * p.cin + c0 + c;
{% endif %}
                acc += x[xi] * wt[((m * cg + c) * p.kh + ky) * p.kw + kx];
            }
        }
    }
    y[idx] = acc + bias[m];
}
