// Implicit GEMM: the im2col GEMM without the column matrix. A workgroup owns a th×tw tile of
// output pixels for tm output channels and streams the input channels tc at a time: it stages
// the tc-channel input halo tile ((th−1)·S+(kh−1)·D+1 rows, columns alike) and the tm×tc×kh×kw
// weights in workgroup memory, then computes each window's position inside the halo while it
// multiplies. Partial sums stay in registers across channel blocks; the bias is added once.
// Each invocation owns rm channels × 4 pixels of one tile row (register tiling; rm = 4 or 8).
// Template: th, tw, tm, tc, rm, rn, kh, kw, stride, dilation, ih, iw, layout, dtype ("f32" or
// "f16": f16 storage in buffers and workgroup memory, f32 products and sums), double_buffer,
// probe ("full"; "load-only" or "compute-only" time one half of the loop, for the overlap
// measurement of blurapp conv bench --overlap: their outputs are meaningless).
// Double buffering: two copies of both tiles; while the workgroup multiplies block k from one
// copy it loads block k+1 into the other, with one barrier per block instead of two. Whether
// the loads then overlap the multiplies is the hardware's business (a GPU switches to another
// warp while one waits on memory; lavapipe runs a workgroup's invocations as SIMD lanes of one
// CPU thread, in program order, so there the loads and multiplies still follow each other).
// Edge tiles are masked: channels past Cin/Cout and pixels past OH/OW load 0 / are not written.
{% if dtype == "f16" %}
enable f16;
{% endif %}

struct Params {
    n: u32, cin: u32, h: u32, w: u32,
    cout: u32, oh: u32, ow: u32, pad: u32,
    tiles_x: u32, _u0: u32, _u1: u32, _u2: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<{$ dtype $}>;
@group(0) @binding(2) var<storage, read> wt: array<{$ dtype $}>;   // (cout, cin, kh, kw)
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

const TH = {$ th $}u;
const TW = {$ tw $}u;
const TM = {$ tm $}u;
const TC = {$ tc $}u;
const RM = {$ rm $}u;
const RN = {$ rn $}u;
const KH = {$ kh $}u;
const KW = {$ kw $}u;
const KK = {$ kh * kw $}u;
const S = {$ stride $}u;
const D = {$ dilation $}u;
const IH = {$ ih $}u;
const IW = {$ iw $}u;
const THREADS = {$ (tm // rm) * (th * tw // rn) $}u;

{% set copies = 2 if double_buffer else 1 %}
const IN_SIZE = {$ tc * ih * iw $}u;
const W_SIZE = {$ tc * kh * kw * tm // 4 $}u;
var<workgroup> in_tile: array<{$ dtype $}, {$ copies * tc * ih * iw $}>;    // [buf][c][iy][ix]
var<workgroup> w_tile: array<vec4<{$ dtype $}>, {$ copies * tc * kh * kw * tm // 4 $}>; // [buf][c][ky][kx][m]

{% macro load_block(c0, buf) %}
{% if probe != "compute-only" %}
        for (var i = tid; i < TC * IH * IW; i += THREADS) {
{% if layout == "nchw" %}
            // neighbouring invocations read neighbouring columns of one channel
            let c = i / (IH * IW);
            let r = i % (IH * IW);
{% else %}
            // neighbouring invocations read neighbouring channels of one pixel
            let c = i % TC;
            let r = i / TC;
{% endif %}
            let iy = iy0 + i32(r / IW);
            let ix = ix0 + i32(r % IW);
            var v = {$ dtype $}(0.0);
            if ({$ c0 $} + c < p.cin && iy >= 0 && iy < i32(p.h) && ix >= 0 && ix < i32(p.w)) {
{% if layout == "nchw" %}
                v = x[((n * p.cin + {$ c0 $} + c) * p.h + u32(iy)) * p.w + u32(ix)];
{% else %}
                v = x[((n * p.h + u32(iy)) * p.w + u32(ix)) * p.cin + {$ c0 $} + c];
{% endif %}
            }
            in_tile[{$ buf $} * IN_SIZE + c * IH * IW + r] = v;
        }
        for (var i = tid; i < TM * TC * KK; i += THREADS) {
            let m = i / (TC * KK);
            let r = i % (TC * KK);
            let c = r / KK;
            var v = {$ dtype $}(0.0);
            if (m0 + m < p.cout && {$ c0 $} + c < p.cin) {
                v = wt[((m0 + m) * p.cin + {$ c0 $} + c) * KK + r % KK];
            }
            w_tile[{$ buf $} * W_SIZE + (r * TM + m) / 4u][m % 4u] = v;
        }
{% else %}
        // no loads, but the bindings stay in use: one value per block
        if (tid == 0u) {
            in_tile[{$ buf $} * IN_SIZE] = x[{$ c0 $} % arrayLength(&x)];
            w_tile[{$ buf $} * W_SIZE][0] = wt[{$ c0 $} % arrayLength(&wt)];
        }
{% endif %}
{% endmacro %}

{% macro compute_block(buf) %}
{% if probe == "load-only" %}
        // keep the loads alive: one workgroup-memory read per block
        acc[0].x += f32(in_tile[{$ buf $} * IN_SIZE + tid % IN_SIZE]);
{% else %}
        for (var c = 0u; c < TC; c++) {
            for (var ky = 0u; ky < KH; ky++) {
                let row = {$ buf $} * IN_SIZE + (c * IH + py * S + ky * D) * IW + px * S;
                for (var kx = 0u; kx < KW; kx++) {
                    let wbase = {$ buf $} * W_SIZE + (((c * KH + ky) * KW + kx) * TM + lid.y * RM) / 4u;
                    let at = row + kx * D;
                    let bv = vec4<f32>(vec4<{$ dtype $}>(
                        in_tile[at], in_tile[at + S], in_tile[at + 2u * S], in_tile[at + 3u * S]
                    ));
                    for (var q4 = 0u; q4 < RM / 4u; q4++) {
                        let wv = vec4<f32>(w_tile[wbase + q4]);
                        acc[4u * q4] += wv.x * bv;
                        acc[4u * q4 + 1u] += wv.y * bv;
                        acc[4u * q4 + 2u] += wv.z * bv;
                        acc[4u * q4 + 3u] += wv.w * bv;
                    }
                }
            }
        }
{% endif %}
{% endmacro %}

@compute @workgroup_size({$ th * tw // rn $}, {$ tm // rm $})
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
    // this invocation's pixels: rn neighbours of one tile row
    let q = lid.x * RN;
    let py = q / TW;
    let px = q % TW;
    // The rm×4 register tile as rm vec4 rows (4 pixels each): kept in registers across the
    // input-channel blocks; the bias is added once, at the end.
    var acc: array<vec4<f32>, RM>;
    for (var i = 0u; i < RM; i++) {
        acc[i] = vec4<f32>(0.0);
    }
{% if double_buffer %}
    {$ load_block("0u", "0u") $}
    workgroupBarrier();
    for (var c0 = 0u; c0 < p.cin; c0 += TC) {
        let cur = (c0 / TC) % 2u;
        let c_next = c0 + TC;
        if (c_next < p.cin) {
            // the other copy: every invocation finished reading it before the last barrier
            {$ load_block("c_next", "(1u - cur)") $}
        }
        {$ compute_block("cur") $}
        workgroupBarrier();
    }
{% else %}
    for (var c0 = 0u; c0 < p.cin; c0 += TC) {
        {$ load_block("c0", "0u") $}
        workgroupBarrier();
        {$ compute_block("0u") $}
        workgroupBarrier();
    }
{% endif %}
    let oy = oy0 + py;
    if (oy >= p.oh) {
        return;
    }
    for (var i = 0u; i < RM; i++) {
        let m = m0 + lid.y * RM + i;
        if (m >= p.cout) {
            break;
        }
        for (var j = 0u; j < RN; j++) {
            let ox = ox0 + px + j;
            if (ox >= p.ow) {
                break;
            }
{% if layout == "nchw" %}
            y[((n * p.cout + m) * p.oh + oy) * p.ow + ox] = acc[i][j] + bias[m];
{% else %}
            y[((n * p.oh + oy) * p.ow + ox) * p.cout + m] = acc[i][j] + bias[m];
{% endif %}
        }
    }
}
