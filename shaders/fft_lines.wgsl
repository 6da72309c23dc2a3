// One axis of the fft strategy's 2-D transforms: LANES lines of N complex values per
// workgroup, held in workgroup memory, transformed by Stockham autosort stages (radix 16 while
// it divides what is left, then one of 2, 4 or 8: N = 256 is two stages), outputs in natural
// order. Each invocation holds a butterfly's 16 values in registers: half the workgroup-memory
// round trips and barriers of radix 4, which is what lavapipe pays for most. Rows are contiguous lines; columns
// are lines strided by NC, and LANES neighbouring columns per workgroup keep each row's loads
// of them contiguous.
//
// The template chains what the pass does to each line between one load and one store:
//   source "image": the first pass reads the block from the input texture (the overlap-save
//     gather: block element (r, c) is the border-mapped pixel at the block's origin - anchor +
//     (c, r)), else the line is read from `data`;
//   forward, then multiply by the kernel's spectrum, then inverse (each optional).
// Each stage reads its butterflies' inputs into registers, meets a barrier, writes its outputs
// and meets another: one array of N values per line, no ping-pong copy.

{% include "fft_params.wgsl" %}

const N: i32 = {$ n $};          // line length (power of two)
const LANES: i32 = {$ lanes $};  // lines per workgroup
const NR: i32 = {$ nr $};        // block rows
const NC: i32 = {$ nc $};        // block columns

{% if source == "image" %}
@group(0) @binding(0) var src: texture_2d<f32>;
{% include "border.wgsl" %}
{% endif %}
@group(0) @binding(1) var<storage, read_write> data: array<vec2<f32>>;  // items × NR × NC
// twiddles[k] = exp(-2πi k / N), k < N, from float64 (more exact than f32 sin/cos, and cheaper).
@group(0) @binding(2) var<storage, read> twiddles: array<vec2<f32>>;
{% if multiply %}
// The kernel's spectrum, NR × NC: conj(DFT(kernel)) / (NR·NC), so that the inverse stages give
// the correlation, normalised.
@group(0) @binding(4) var<storage, read> spectrum: array<vec2<f32>>;
{% endif %}

var<workgroup> line: array<vec2<f32>, {$ lanes * n $}>;

fn cmul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x);
}

{% if source == "image" %}
// Block element (r, c) of complex item q: its two real signals' pixels, border-mapped.
fn gather(q: i32, r: i32, c: i32) -> vec2<f32> {
    var out = vec2<f32>(0.0);
    for (var half = 0; half < 2; half++) {
        let ri = 2 * q + half;
        let lb = ri / params.channels;
        if (lb < params.blocks) {
            let p = block_origin(lb) - params.anchor + vec2<i32>(c, r);
            out[half] = load_src(p.x, p.y)[ri % params.channels];
        }
    }
    return out;
}
{% endif %}

{# The r-point DFT of values named ip~(io + i·istep) into new values named op~(oo + i·ostep),
   sign "" forward, "-" inverse. 2 and 4 points directly; 8 and 16 as B = 2 or 4 transforms of
   A = r / B points (stride B), twiddled by constant roots of unity (w16[e] = exp(-2πi e/16) as
   WGSL literals), then A transforms of B points. #}
{% macro dft(ip, io, istep, op, oo, ostep, r, sign) %}
{% set u = op ~ oo %}
{% if r == 2 %}
            let {$ op ~ oo $} = {$ ip ~ io $} + {$ ip ~ (io + istep) $};
            let {$ op ~ (oo + ostep) $} = {$ ip ~ io $} - {$ ip ~ (io + istep) $};
{% elif r == 4 %}
            let {$ u $}s0 = {$ ip ~ io $} + {$ ip ~ (io + 2 * istep) $};
            let {$ u $}d0 = {$ ip ~ io $} - {$ ip ~ (io + 2 * istep) $};
            let {$ u $}s1 = {$ ip ~ (io + istep) $} + {$ ip ~ (io + 3 * istep) $};
            let {$ u $}u1 = {$ ip ~ (io + istep) $} - {$ ip ~ (io + 3 * istep) $};
{% if sign == "" %}
            let {$ u $}d1 = vec2<f32>({$ u $}u1.y, -{$ u $}u1.x);  // -i (a1 - a3)
{% else %}
            let {$ u $}d1 = vec2<f32>(-{$ u $}u1.y, {$ u $}u1.x);  // +i (a1 - a3)
{% endif %}
            let {$ op ~ oo $} = {$ u $}s0 + {$ u $}s1;
            let {$ op ~ (oo + ostep) $} = {$ u $}d0 + {$ u $}d1;
            let {$ op ~ (oo + 2 * ostep) $} = {$ u $}s0 - {$ u $}s1;
            let {$ op ~ (oo + 3 * ostep) $} = {$ u $}d0 - {$ u $}d1;
{% else %}
{% set bn = 4 if r == 16 else 2 %}
{% set an = r // bn %}
{% for b in range(bn) %}
{$ dft(ip, io + b * istep, bn * istep, u ~ "y" ~ b ~ "_", 0, 1, an, sign) $}
{% endfor %}
{% for c in range(an) %}
{% for b in range(bn) %}
{% set e = (b * c * 16 // r) % 16 %}
{% if e == 0 %}
            let {$ u $}z{$ c $}_{$ b $} = {$ u $}y{$ b $}_{$ c $};
{% else %}
            let {$ u $}z{$ c $}_{$ b $} = cmul({$ u $}y{$ b $}_{$ c $}, vec2<f32>({$ w16[e][0] $}, {$ w16[e][1] if sign == "" else w16[e][2] $}));
{% endif %}
{% endfor %}
{$ dft(u ~ "z" ~ c ~ "_", 0, 1, op, oo + c * ostep, an * ostep, bn, sign) $}
{% endfor %}
{% endif %}
{% endmacro %}

{% macro stages(sign) %}
{% for radix, ns, per in stage_list %}
    {
        // radix {$ radix $}, sub-transforms of {$ ns $} so far
{% for t in range(per) %}
        let b{$ t $} = i32(tid) + {$ t * wg $};
        let o{$ t $} = (b{$ t $} / {$ n // radix $}) * N;
        let j{$ t $} = b{$ t $} % {$ n // radix $};
{% for q in range(radix) %}
        var v{$ t $}_{$ q $} = line[o{$ t $} + j{$ t $} + {$ q * (n // radix) $}];
{% endfor %}
{% endfor %}
        workgroupBarrier();
{% for t in range(per) %}
        {
            let k = j{$ t $} % {$ ns $};
{% if ns > 1 %}
{% for q in range(1, radix) %}
            let w{$ q $} = twiddles[k * {$ q * (n // (radix * ns)) $}];
            v{$ t $}_{$ q $} = cmul(v{$ t $}_{$ q $}, vec2<f32>(w{$ q $}.x, {$ sign $}w{$ q $}.y));
{% endfor %}
{% endif %}
{$ dft("v" ~ t ~ "_", 0, 1, "x", 0, 1, radix, sign) $}
            let d = o{$ t $} + (j{$ t $} / {$ ns $}) * {$ ns * radix $} + k;
{% for q in range(radix) %}
            line[d + {$ q * ns $}] = x{$ q $};
{% endfor %}
        }
{% endfor %}
        workgroupBarrier();
    }
{% endfor %}
{% endmacro %}

@compute @workgroup_size({$ wg $})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let q = i32(wid.y);              // complex item
    let line0 = i32(wid.x) * LANES;  // first line of this workgroup
    let base = q * NR * NC;
{% macro element(e) %}
{% if axis == "rows" %}
        let lane = {$ e $} / N;
        let p = {$ e $} % N;
        let a = (line0 + lane) * NC + p;
{% else %}
        let lane = {$ e $} % LANES;
        let p = {$ e $} / LANES;
        let a = p * NC + line0 + lane;
{% endif %}
{% endmacro %}
{% for t in range(load_per) %}
    {
        let e = i32(tid) + {$ t * wg $};
{$ element("e") $}
{% if source == "image" %}
        line[lane * N + p] = gather(q, line0 + lane, p);
{% else %}
        line[lane * N + p] = data[base + a];
{% endif %}
    }
{% endfor %}
    workgroupBarrier();
{% if forward %}
{$ stages("") $}
{% endif %}
{% if multiply %}
{% for t in range(load_per) %}
    {
        let e = i32(tid) + {$ t * wg $};
{$ element("e") $}
        line[lane * N + p] = cmul(line[lane * N + p], spectrum[a]);
    }
{% endfor %}
    workgroupBarrier();
{% endif %}
{% if inverse %}
{$ stages("-") $}
{% endif %}
{% for t in range(load_per) %}
    {
        let e = i32(tid) + {$ t * wg $};
{$ element("e") $}
        data[base + a] = line[lane * N + p];
    }
{% endfor %}
}
