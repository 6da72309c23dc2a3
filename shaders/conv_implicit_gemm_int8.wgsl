// Implicit GEMM in int8 with 32-bit integer accumulators (see blurapp/conv/quant.py).
// Inputs and weights arrive as four int8 channels per u32; a workgroup owns th×tw output
// pixels × tm output channels and streams the packed input channels tc4 words (4·tc4
// channels) at a time through workgroup memory, like conv_implicit_gemm.wgsl. Each word pair
// is one dot4I8Packed: 4 multiply-adds, exact in i32. The partial sums live in registers
// across the input-channel blocks: they start, in the first block, at the output channel's
// folded constant (the bias in accumulator units and the weights' zero-point terms), the
// blocks only add to them, and the one rounding is at the end, y = f32(acc) · sx·sw.
// Masks: input words past the layer's C4 and output channels past Cout load 0 (a zero word
// adds nothing to either sum), taps in the zero padding load the input zero point in all
// four bytes (they are real taps: (zx − zx)·w = 0), pixels past OH/OW and channels past Cout
// are not written. With emit_acc the raw accumulators are written too (tests compare them
// with an int64 reference). With w_zero (a weight zero point ≠ 0) each invocation also sums
// its windows' input bytes, Σxq, for the −zw·Σxq term.
// Template: th, tw, tm, tc4, rm, kh, kw, stride, dilation, ih, iw, layout, emit_acc, w_zero.

struct Params {
    n: u32, c4: u32, h: u32, w: u32,
    cout: u32, oh: u32, ow: u32, pad: u32,
    tiles_x: u32, zx_word: u32, zw: i32, scale: f32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<u32>;    // packed input, layer layout
@group(0) @binding(2) var<storage, read> wt: array<u32>;   // (cout, c4, kh, kw) packed
@group(0) @binding(3) var<storage, read> folded: array<i32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
{% if emit_acc %}
@group(0) @binding(5) var<storage, read_write> acc_out: array<i32>;
{% endif %}

const TH = {$ th $}u;
const TW = {$ tw $}u;
const TM = {$ tm $}u;
const TC4 = {$ tc4 $}u;
const RM = {$ rm $}u;
const RN = 4u;
const KH = {$ kh $}u;
const KW = {$ kw $}u;
const KK = {$ kh * kw $}u;
const S = {$ stride $}u;
const D = {$ dilation $}u;
const IH = {$ ih $}u;
const IW = {$ iw $}u;
const THREADS = {$ (tm // rm) * (th * tw // 4) $}u;

var<workgroup> in_tile: array<u32, {$ tc4 * ih * iw $}>;      // [c4][iy][ix]
var<workgroup> w_tile: array<u32, {$ tc4 * kh * kw * tm $}>;  // [c4][ky][kx][m]

@compute @workgroup_size({$ th * tw // 4 $}, {$ tm // rm $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let n = wid.z;
    let m0 = wid.y * TM;
    let oy0 = (wid.x / p.tiles_x) * TH;
    let ox0 = (wid.x % p.tiles_x) * TW;
    let iy0 = i32(oy0 * S) - i32(p.pad);
    let ix0 = i32(ox0 * S) - i32(p.pad);
    let q = lid.x * RN;
    let py = q / TW;
    let px = q % TW;
    // Bias added once: the accumulators start at the folded constant, before block 0.
    var acc: array<vec4<i32>, RM>;
    for (var i = 0u; i < RM; i++) {
        let m = m0 + lid.y * RM + i;
        acc[i] = vec4<i32>(select(0, folded[min(m, p.cout - 1u)], m < p.cout));
    }
{% if w_zero %}
    var xsum = vec4<i32>(0);
{% endif %}
    for (var c0 = 0u; c0 < p.c4; c0 += TC4) {
        for (var i = tid; i < TC4 * IH * IW; i += THREADS) {
{% if layout == "nchw" %}
            let c = i / (IH * IW);
            let r = i % (IH * IW);
{% else %}
            let c = i % TC4;
            let r = i / TC4;
{% endif %}
            let iy = iy0 + i32(r / IW);
            let ix = ix0 + i32(r % IW);
            var v = 0u;  // past the last channel word: adds nothing
            if (c0 + c < p.c4) {
                v = p.zx_word;  // zero padding: the input's zero point in every byte
                if (iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
{% if layout == "nchw" %}
                    v = x[((n * p.c4 + c0 + c) * p.h + u32(iy)) * p.w + u32(ix)];
{% else %}
                    v = x[((n * p.h + u32(iy)) * p.w + u32(ix)) * p.c4 + c0 + c];
{% endif %}
                }
            }
            in_tile[c * IH * IW + r] = v;
        }
        for (var i = tid; i < TM * TC4 * KK; i += THREADS) {
            let m = i / (TC4 * KK);
            let r = i % (TC4 * KK);
            let c = r / KK;
            var v = 0u;
            if (m0 + m < p.cout && c0 + c < p.c4) {
                v = wt[((m0 + m) * p.c4 + c0 + c) * KK + r % KK];
            }
            w_tile[r * TM + m] = v;
        }
        workgroupBarrier();
        for (var c = 0u; c < TC4; c++) {
            for (var ky = 0u; ky < KH; ky++) {
                let row = (c * IH + py * S + ky * D) * IW + px * S;
                for (var kx = 0u; kx < KW; kx++) {
                    let at = row + kx * D;
                    let b0 = in_tile[at];
                    let b1 = in_tile[at + S];
                    let b2 = in_tile[at + 2u * S];
                    let b3 = in_tile[at + 3u * S];
{% if w_zero %}
                    xsum += vec4<i32>(
                        dot4I8Packed(b0, 0x01010101u), dot4I8Packed(b1, 0x01010101u),
                        dot4I8Packed(b2, 0x01010101u), dot4I8Packed(b3, 0x01010101u)
                    );
{% endif %}
                    let wbase = ((c * KH + ky) * KW + kx) * TM + lid.y * RM;
                    for (var i = 0u; i < RM; i++) {
                        let wv = w_tile[wbase + i];
                        acc[i] += vec4<i32>(
                            dot4I8Packed(wv, b0), dot4I8Packed(wv, b1),
                            dot4I8Packed(wv, b2), dot4I8Packed(wv, b3)
                        );
                    }
                }
            }
        }
        workgroupBarrier();
    }
    let oy = oy0 + py;
    if (oy >= p.oh) {
        return;
    }
    for (var i = 0u; i < RM; i++) {
        let m = m0 + lid.y * RM + i;
        if (m >= p.cout) {
            break;
        }
{% if w_zero %}
        let total = acc[i] - p.zw * xsum;
{% else %}
        let total = acc[i];
{% endif %}
        for (var j = 0u; j < RN; j++) {
            let ox = ox0 + px + j;
            if (ox >= p.ow) {
                break;
            }
{% if layout == "nchw" %}
            let at = ((n * p.cout + m) * p.oh + oy) * p.ow + ox;
{% else %}
            let at = ((n * p.oh + oy) * p.ow + ox) * p.cout + m;
{% endif %}
            y[at] = f32(total[j]) * p.scale;
{% if emit_acc %}
            acc_out[at] = total[j];
{% endif %}
        }
    }
}
