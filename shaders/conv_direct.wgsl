// Direct Conv2D: one invocation per output element, every tap read from global memory.
// Template: layout ("nchw" | "nhwc"), wg (workgroup size), dtype ("f32" | "f16" | "int8");
// for int8 also emit_acc. Shapes come in the uniform, so one pipeline per layout and
// dtype serves every layer; groups of any size (depthwise included) work here.
// f16: inputs and weights stored as f16, products and sums in f32. int8: four channels per u32
// (cin counts words, a group's channels padded to a multiple of 4), one dot4I8Packed per word,
// i32 sums started at the folded constant and rounded once at the end (blurapp/conv/quant.py,
// conv_implicit_gemm_int8.wgsl for the arithmetic); padding taps read the input zero point.
{% if dtype == "f16" %}
enable f16;
{% endif %}

struct Params {
    n: u32, cin: u32, h: u32, w: u32,
    cout: u32, oh: u32, ow: u32, groups: u32,
    kh: u32, kw: u32, stride: u32, dilation: u32,
    pad: u32, total: u32, row_pitch: u32, zx_word: u32,
    zw: i32, scale: f32, _u0: u32, _u1: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
{% if dtype == "int8" %}
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read> wt: array<u32>;   // (cout, cin/groups, kh, kw) words
@group(0) @binding(3) var<storage, read> bias: array<i32>; // folded constants (cout,)
{% else %}
@group(0) @binding(1) var<storage, read> x: array<{$ dtype $}>;
@group(0) @binding(2) var<storage, read> wt: array<{$ dtype $}>;   // (cout, cin/groups, kh, kw)
@group(0) @binding(3) var<storage, read> bias: array<f32>; // (cout,)
{% endif %}
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
{% if dtype == "int8" and emit_acc %}
@group(0) @binding(5) var<storage, read_write> acc_out: array<i32>;
{% endif %}

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
{% if dtype == "int8" %}
    var acc = bias[m];  // the bias (and the zero-point terms), once, before the first channel
    var xsum = 0;
{% else %}
    var acc = 0.0;
{% endif %}
    for (var c = 0u; c < cg; c++) {
        for (var ky = 0u; ky < p.kh; ky++) {
            let iy = iy0 + i32(ky * p.dilation);
{% if dtype != "int8" %}
            if (iy < 0 || iy >= i32(p.h)) {
                continue;  // zero padding
            }
{% endif %}
            for (var kx = 0u; kx < p.kw; kx++) {
                let ix = ix0 + i32(kx * p.dilation);
{% if dtype == "int8" %}
                var xv = p.zx_word;  // zero padding is the zero point in every byte
                if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
{% else %}
                if (ix < 0 || ix >= i32(p.w)) {
                    continue;
                }
{% endif %}
{% if layout == "nchw" %}
                let xi = ((n * p.cin + c0 + c) * p.h + u32(iy)) * p.w + u32(ix);
{% else %}
                let xi = ((n * p.h + u32(iy)) * p.w + u32(ix)) * p.cin + c0 + c;
{% endif %}
{% if dtype == "int8" %}
                    xv = x[xi];
                }
                acc += dot4I8Packed(xv, wt[((m * cg + c) * p.kh + ky) * p.kw + kx]);
                xsum += dot4I8Packed(xv, 0x01010101u);
{% else %}
                acc += f32(x[xi]) * f32(wt[((m * cg + c) * p.kh + ky) * p.kw + kx]);
{% endif %}
            }
        }
    }
{% if dtype == "int8" %}
    let total = acc - p.zw * xsum;
    y[idx] = f32(total) * p.scale;
{% if emit_acc %}
    acc_out[idx] = total;
{% endif %}
{% else %}
    y[idx] = acc + bias[m];
{% endif %}
}
