// One axis of the fft strategy's 2-D transforms: LANES lines of N complex values per
// workgroup, held in workgroup memory, transformed by Stockham autosort stages (radix 16 while
// it divides what is left, then one of 2, 4 or 8: N = 256 is two stages), outputs in natural
// order. Each invocation holds a butterfly's 16 values in registers: half the workgroup-memory
// round trips and barriers of radix 4, which is what lavapipe pays for most. Rows are contiguous lines; columns
// are lines strided by NC, and LANES neighbouring columns per workgroup keep each row's loads
// of them contiguous.
//
// The template's `program` chains what the pass does to each line, stage by stage: forward
// stages, then (multiply) the last forward stage's outputs times the kernel's spectrum, then
// inverse stages. Source "image": the first pass reads the block from the input texture (the
// overlap-save gather: block element (r, c) is the border-mapped pixel at the block's origin -
// anchor + (c, r)), else from `data`; the last stage writes back to `data` in place (each line
// belongs to one workgroup, and all its reads come before the first barrier). Stages in
// between read their butterflies' inputs from workgroup memory into registers, meet a barrier,
// write their outputs and meet another: one array of N values per line, no ping-pong copy.

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
// Block element (r, c) of complex item q: its two real signals' pixels, border-mapped; one
// texel load when both come from the same block (always for 2 and 4 channels). Which blocks
// they come from is the same for the whole workgroup: the branches do not diverge.
fn gather(q: i32, r: i32, c: i32) -> vec2<f32> {
    let ri = 2 * q;
    let lb0 = ri / params.channels;
    let lb1 = (ri + 1) / params.channels;
    let p0 = block_origin(lb0) - params.anchor + vec2<i32>(c, r);
    let t0 = load_src(p0.x, p0.y);
    if (lb1 >= params.blocks) {
        return vec2<f32>(t0[ri % params.channels], 0.0);  // an odd count's last signal
    }
    var t1 = t0;
    if (lb1 != lb0) {
        let p1 = block_origin(lb1) - params.anchor + vec2<i32>(c, r);
        t1 = load_src(p1.x, p1.y);
    }
    return vec2<f32>(t0[ri % params.channels], t1[(ri + 1) % params.channels]);
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

{# Element (lane L, position P) of this workgroup's lines: its index in the item's NR × NC. #}
{% macro addr(l, p) %}{% if axis == "rows" %}(line0 + {$ l $}) * NC + {$ p $}{% else %}({$ p $}) * NC + line0 + {$ l $}{% endif %}{% endmacro %}

{# One Stockham stage. The first reads its butterflies straight from the source (the input
   texture through the gather, or `data`), the last writes straight to `data`: only the stages
   in between go through workgroup memory, each read, barrier, write, barrier. A butterfly's
   lane runs fastest for columns (neighbouring columns, one contiguous stretch of a row), its
   index along the line for rows. #}
{% macro stage(radix, ns, per, sign, first, last, mul) %}
    {
        // radix {$ radix $}, sub-transforms of {$ ns $} so far{$ ", inverse" if sign else "" $}
{% set m = n // radix %}
{% for t in range(per) %}
        let b{$ t $} = i32(tid) + {$ t * wg $};
{% if axis == "rows" %}
        let l{$ t $} = b{$ t $} / {$ m $};
        let j{$ t $} = b{$ t $} % {$ m $};
{% else %}
        let l{$ t $} = b{$ t $} % LANES;
        let j{$ t $} = b{$ t $} / LANES;
{% endif %}
{% for q in range(radix) %}
{% if not first %}
        var v{$ t $}_{$ q $} = line[l{$ t $} * N + j{$ t $} + {$ q * m $}];
{% elif source == "image" %}
        var v{$ t $}_{$ q $} = gather(item, line0 + l{$ t $}, j{$ t $} + {$ q * m $});
{% else %}
        var v{$ t $}_{$ q $} = data[base + {$ addr("l" ~ t, "j" ~ t ~ " + " ~ (q * m)) $}];
{% endif %}
{% endfor %}
{% endfor %}
{% if not first and not last %}
        workgroupBarrier();
{% endif %}
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
            let d = (j{$ t $} / {$ ns $}) * {$ ns * radix $} + k;  // position of output 0
{% for q in range(radix) %}
{% set out = "x" ~ q %}
{% if mul %}
            let y{$ q $} = cmul(x{$ q $}, spectrum[{$ addr("l" ~ t, "d + " ~ (q * ns)) $}]);
{% set out = "y" ~ q %}
{% endif %}
{% if last %}
            data[base + {$ addr("l" ~ t, "d + " ~ (q * ns)) $}] = {$ out $};
{% else %}
            line[l{$ t $} * N + d + {$ q * ns $}] = {$ out $};
{% endif %}
{% endfor %}
        }
{% endfor %}
{% if not last %}
        workgroupBarrier();
{% endif %}
    }
{% endmacro %}

@compute @workgroup_size({$ wg $})
fn main(
    @builtin(local_invocation_index) tid: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let item = i32(wid.y);           // complex item
    let line0 = i32(wid.x) * LANES;  // first line of this workgroup
    let base = item * NR * NC;
{% for radix, ns, per, sign, first, last, mul in program %}
{$ stage(radix, ns, per, sign, first, last, mul) $}
{% endfor %}
}
