// Tiled GEMM for im2col: Y[m, p] = sum_k W[m, k] · B[k, p] + bias[m], written in the layer layout.
// Workgroup-memory tiling: a bm×bk tile of W and a bk×bn tile of B are staged in workgroup
// memory and reused bn (resp. bm) times; register tiling: each invocation owns rm×rn outputs (rm = 4 or 8, rn = 4),
// so every value it reads from workgroup memory feeds rn (resp. rm) multiply-adds.
// Template: bm, bn, bk, rm, rn, b_layout ("kp": B stored K×P, "pk": P×K), out_layout ("nchw",
// "nhwc", or "raw": Y as M×P row-major, no bias, for Winograd's α² GEMMs).
// Edge tiles are masked: loads past M, P or K read 0 and their outputs are not written.
// A batch of GEMMs runs along the dispatch's z: GEMM z reads W, B and writes Y at z times the
// uniform's strides (0 for a single GEMM).

struct Params {
    m: u32, pixels: u32, kdim: u32, ohw: u32,
    a_stride: u32, b_stride: u32, y_stride: u32, _u0: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> bmat: array<f32>;
@group(0) @binding(2) var<storage, read> wt: array<f32>;   // M×K row-major
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;

const BM = {$ bm $}u;
const BN = {$ bn $}u;
const BK = {$ bk $}u;
const RM = {$ rm $}u;
const RN = {$ rn $}u;
const THREADS = {$ (bm // rm) * (bn // rn) $}u;

// vec4 elements: an invocation reads its 4 channels and 4 pixels with one load each
var<workgroup> a_tile: array<vec4<f32>, {$ bk * bm // 4 $}>;  // [k][m]
var<workgroup> b_tile: array<vec4<f32>, {$ bk * bn // 4 $}>;  // [k][n]

@compute @workgroup_size({$ bn // rn $}, {$ bm // rm $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let m0 = wid.y * BM;
    let p0 = wid.x * BN;
    let a_off = wid.z * p.a_stride;
    let b_off = wid.z * p.b_stride;
    // The rm×4 register tile as rm vec4 rows of 4 pixels (rm = 4 or 8).
    var acc: array<vec4<f32>, RM>;
    for (var i = 0u; i < RM; i++) {
        acc[i] = vec4<f32>(0.0);
    }
    for (var k0 = 0u; k0 < p.kdim; k0 += BK) {
        for (var i = tid; i < BM * BK; i += THREADS) {
            let mm = i / BK;
            let kk = i % BK;
            var v = 0.0;
            if (m0 + mm < p.m && k0 + kk < p.kdim) {
                v = wt[a_off + (m0 + mm) * p.kdim + k0 + kk];
            }
            a_tile[(kk * BM + mm) / 4u][mm % 4u] = v;
        }
        for (var i = tid; i < BK * BN; i += THREADS) {
{% if b_layout == "kp" %}
            let kk = i / BN;
            let nn = i % BN;
{% else %}
            let nn = i / BK;
            let kk = i % BK;
{% endif %}
            var v = 0.0;
            if (p0 + nn < p.pixels && k0 + kk < p.kdim) {
{% if b_layout == "kp" %}
                v = bmat[b_off + (k0 + kk) * p.pixels + p0 + nn];
{% else %}
                v = bmat[b_off + (p0 + nn) * p.kdim + k0 + kk];
{% endif %}
            }
            b_tile[(kk * BN + nn) / 4u][nn % 4u] = v;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK; kk++) {
            let bv = b_tile[(kk * BN) / 4u + lid.x];
            for (var q4 = 0u; q4 < RM / 4u; q4++) {
                let av = a_tile[(kk * BM + lid.y * RM) / 4u + q4];
                acc[4u * q4] += av.x * bv;
                acc[4u * q4 + 1u] += av.y * bv;
                acc[4u * q4 + 2u] += av.z * bv;
                acc[4u * q4 + 3u] += av.w * bv;
            }
        }
        workgroupBarrier();
    }
    for (var i = 0u; i < RM; i++) {
        let gm = m0 + lid.y * RM + i;
        if (gm >= p.m) {
            break;
        }
        for (var j = 0u; j < RN; j++) {
            let gp = p0 + lid.x * RN + j;
            if (gp >= p.pixels) {
                break;
            }
{% if out_layout == "raw" %}
            y[wid.z * p.y_stride + gm * p.pixels + gp] = acc[i][j];
{% elif out_layout == "nchw" %}
            let n = gp / p.ohw;
            y[(n * p.m + gm) * p.ohw + gp % p.ohw] = acc[i][j] + bias[gm];
{% else %}
            y[gp * p.m + gm] = acc[i][j] + bias[gm];
{% endif %}
        }
    }
}
