// One 1-D correlation pass along one axis of an n-D array held in a storage buffer (C order),
// as scipy.ndimage.correlate1d runs it: blurapp.gpu.ndpass views the array as
// (outer, n, inner) around the pass's axis, so any axis of any ndim is this one shader.
//
// Each invocation filters BLOCK neighbouring outputs along the axis from the BLOCK + TAPS - 1
// elements they share, loaded once into registers, with every tap unrolled (lavapipe runs
// invocations as SIMD lanes and pays per lane for every buffer load: a plain loop reading TAPS
// elements per output ran 4-16x slower than scipy). Where the axis is not the last one and
// `inner` is a multiple of VEC, an invocation also takes VEC neighbouring columns at once, one
// vec4 load each (4 f32 or 2 df64 elements); neighbouring invocations take neighbouring
// columns, so each load of a SIMD row reads contiguous memory.
//
// Along the last axis (`chunked`, f32, n a multiple of 4), the BLOCK + TAPS - 1 elements are
// read as vec4 chunks of the line (`s0` = -centre mod 4 places the window in them, fixed per
// pipeline) and the outputs stored as vec4s; neighbouring invocations take neighbouring blocks
// of one line, so that a SIMD row's loads stay within a few cache lines (lavapipe loads lane by
// lane) and only the rows at a line's ends take the border-mapped loads. (Neighbouring lines at
// the same block, as before, took 6.8 against 4.5 ms a 1-tap pass on 1024^2 and 10.8 against
// 8.6 ms with 17 taps; 4K with 17 taps 119 against 76 ms.)
//
// The weights sit in the uniform buffer (a constant index: one scalar load, not one per lane),
// so every kernel of a length shares one pipeline. Every tap is multiplied, zero weights too
// (scipy.ndimage.correlate1d: a NaN under a zero tap spreads; the weight is not a literal, so
// no compiler folds 0 * x away). Every load goes through the border mapping (one compare in
// the interior; an interior copy of the code would run both paths on SIMD lanes).
//
// `edge` (chunked): "interior" takes only the blocks whose window lies inside the line, with
// no border code (lavapipe runs a branch's both sides, masked: the border loads cost ~20 % of
// the pass where no lane needs them), "border" the others, "all" every block. A border block
// loads its window's chunks as the interior does, then replaces the elements outside the line
// with the border's, each under its own condition: on lavapipe a load under a condition visits
// only the lanes that take it, where a mapped load of every element visited every lane
// (1080p, 17 taps: the border dispatch 1.12 -> 0.61 ms, the same values bit for bit).
//
// `near` (the window reaches less than the axis's length on either side) maps offsets with
// nd_border_index_near, without division.
//
// `roll` (kernels longer than the unrolled pipelines take): the taps are a loop over the
// uniform buffer's weights (`params.taps` of them; one pipeline for every length), the BLOCK
// outputs' elements a window of registers that rolls by one element a tap: one load a tap for
// BLOCK outputs, as the unrolled code, instead of one a tap for each output (nd_line_loop.wgsl).
// Windows wholly inside the axis skip the border mapping (a select per load, no branch).
//
// `groups` (f32, `vec` 4, the vec4 columns a multiple of it): an invocation takes `groups`
// neighbouring vec4 columns, each with its own window and the same sums, so that a lane reads
// a 64-byte line of each input row, not 16 bytes: a SIMD row's loads then touch 8 cache
// lines at once instead of 2, and across planes (an axis-0 pass of a 3-D array strides
// 256 KiB a row at 256^3) their misses overlap.
//
// `wide` (with `groups`, an even number, or `chunked` with lines and blocks of a multiple of 8
// elements; a device with "shader-int64"): the buffers are bound as array<vec4<u64>> and each
// load or store moves two neighbouring vec4 columns, or 8 elements of a line (bit patterns
// split and packed with bitcasts: the values and sums are untouched; `s0` is then -centre
// mod 8), as nd_plane.wgsl's `wide`: lavapipe's per-lane loop costs per access, not per byte.
//
// `shuffle` (chunked, `edge` "interior", a device with "subgroup"): an invocation loads only its
// block's own chunks and takes the rest of its window from the next invocations of its subgroup
// (the next blocks of the line), as nd_plane.wgsl's `shuffle`.
//
// Template parameters: `roll`, `groups`, `wide`, `shuffle`, `sym` (f32: folded symmetric or antisymmetric weights, see f32_sum),
// `precision` ("f32" or "df64": hi + lo f32 pairs, see nd_df64.wgsl),
// `taps`, `block`, `vec` (1, or 4 for f32 / 2 for df64), `wg`, `two_prod` (df64), `texin` and
// `texw` (f32 wide or rolled passes, and df64 ones: the input read as a texture,
// blurapp.gpu.ndpass's TEXTURE_INPUT).
// Override constant: BORDER_MODE.

{% set df = precision == "df64" %}
{% set chunked = chunked | default(false) %}
{% set edge = edge | default("all") %}
{% set near = near | default(false) %}
{% set sym = sym | default(0) %}
{% set roll = roll | default(false) %}
{% set groups = groups | default(1) %}
{% set unroll = unroll | default(1) %}
{% set wide = wide | default(false) %}
{% set shuffle = shuffle | default(false) and chunked and edge == "interior" %}
// The `groups` vec4 columns of element `s` (a mapped offset along the axis) as m{name}_{c}:
// one load each, or with `wide` one load of a pair of them.
{% macro gload(name, s, decl) %}
{% if wide %}
{% for c in range(groups // 2) %}
    let p{$ name $}_{$ c $} = load_pair(row, {$ s $}, jv + {$ 2 * c $}u);
    {$ decl $} m{$ name $}_{$ 2 * c $} = p{$ name $}_{$ c $}.a;
    {$ decl $} m{$ name $}_{$ 2 * c + 1 $} = p{$ name $}_{$ c $}.b;
{% endfor %}
{% else %}
{% for c in range(groups) %}
    {$ decl $} m{$ name $}_{$ c $} = load_at(row, {$ s $}, jv + {$ c $}u);
{% endfor %}
{% endif %}
{% endmacro %}
// Output `o`'s `groups` vec4 columns, value(c) each: one store each, or with `wide` a pair.
{% macro gstore(o, vals) %}
{% if wide %}
{% for c in range(groups // 2) %}
        put(((row + u32(first + {$ o $})) * params.inner_v + jv + {$ 2 * c $}u) / 2u,
            {$ vals[2 * c] $}, {$ vals[2 * c + 1] $});
{% endfor %}
{% else %}
{% for c in range(groups) %}
        dst[(row + u32(first + {$ o $})) * params.inner_v + jv + {$ c $}u] = {$ vals[c] $};
{% endfor %}
{% endif %}
{% endmacro %}
// The f32 sum of output `o`'s taps; with `sym` (1: w[k] == w[taps-1-k], -1: w[k] ==
// -w[taps-1-k]) the pairs of equal weights are folded, w * (a + b) or w * (a - b), as
// scipy.ndimage.correlate1d does: one multiply for two taps (NaN and Inf come out the same).
{% macro f32_sum(o, suf="") %}{% if sym %}{% for k in range(taps // 2) %}params.w[{$ k $}].x * (m{$ o + k $}{$ suf $} {$ "+" if sym > 0 else "-" $} m{$ o + taps - 1 - k $}{$ suf $}){% if not loop.last or taps % 2 %} + {% endif %}{% endfor %}{% if taps % 2 %}params.w[{$ taps // 2 $}].x * m{$ o + taps // 2 $}{$ suf $}{% endif %}{% else %}{% for k in range(taps) %}params.w[{$ k $}].x * m{$ o + k $}{$ suf $}{% if not loop.last %} + {% endif %}{% endfor %}{% endif %}{% endmacro %}

// One df64 tap into the accumulators hi{a}, lo{a}, raw{a}: the weight `w` (params.w[k]) times the
// element whose hi, lo (and Dekker halves hh, hl) are h{e}, l{e} (hh{e}, hl{e}).
{% macro df_tap(w, a, e) %}
        {
            let w = {$ w $};
            let ph = (w.x * h{$ e $}) * params.one;
            raw{$ a $} += ph;
{% if two_prod == "fma" %}
            let err = fma({$ vt $}(w.x), h{$ e $}, -ph);
{% else %}
            let err = ((w.z * hh{$ e $} - ph) + w.z * hl{$ e $} + w.w * hh{$ e $})
                + w.w * hl{$ e $};
{% endif %}
            let pl = err + (w.x * l{$ e $} + w.y * h{$ e $});
            let s = hi{$ a $} + ph;
            let bb = s * params.one - hi{$ a $};
            let e = (hi{$ a $} - (s - bb)) + (ph - bb);
            let t = e + (lo{$ a $} + pl);
            hi{$ a $} = s + t;
            lo{$ a $} = t - (hi{$ a $} * params.one - s);
        }
{% endmacro %}
// hi, lo (and with Dekker's products hi's split) of the loaded element m{i}.
{% macro df_parts(i, decl) %}
{% if vec == 2 %}
    {$ decl $} h{$ i $} = m{$ i $}.xz;
    {$ decl $} l{$ i $} = m{$ i $}.yw;
{% else %}
    {$ decl $} h{$ i $} = m{$ i $}.x;
    {$ decl $} l{$ i $} = m{$ i $}.y;
{% endif %}
{% if two_prod != "fma" %}
    let q{$ i $} = (4097.0 * h{$ i $}) * params.one;
    {$ decl $} hh{$ i $} = q{$ i $} * params.one - (q{$ i $} - h{$ i $});
    {$ decl $} hl{$ i $} = h{$ i $} - hh{$ i $};
{% endif %}
{% endmacro %}
// Output `o`'s store from hi{a}, lo{a}, raw{a} (a non-finite raw sum is float64's own value).
{% macro df_store(a, o) %}
        let bad{$ a $} = (bitcast<{$ vu $}>(raw{$ a $}) & {$ vu $}(0x7f800000u)) == {$ vu $}(0x7f800000u);
        let rhi{$ a $} = select(hi{$ a $}, raw{$ a $}, bad{$ a $});
        let rlo{$ a $} = select(lo{$ a $}, {$ vt $}(0.0), bad{$ a $});
{% if vec == 2 %}
        dst[(row + u32(first + {$ o $})) * params.inner_v + jv] = vec4<f32>(rhi{$ a $}.x, rlo{$ a $}.x, rhi{$ a $}.y, rlo{$ a $}.y);
{% else %}
        dst[(row + u32(first + {$ o $})) * params.inner_v + jv] = vec2<f32>(rhi{$ a $}, rlo{$ a $});
{% endif %}
{% endmacro %}

{% set map = "nd_border_index_near" if near else "nd_border_index" %}
// The type of one load, and of the values a tap computes with.
{% if df %}
{% set mem = "vec4<f32>" if vec == 2 else "vec2<f32>" %}
{% set vt = "vec2<f32>" if vec == 2 else "f32" %}
{% set vu = "vec2<u32>" if vec == 2 else "u32" %}
{% elif chunked %}
{% set mem = "vec4<f32>" %}
{% else %}
{% set mem = "vec4<f32>" if vec == 4 else "f32" %}
{% set vt = mem %}
{% endif %}

struct LineParams {
    outer: u32,       // lines before the axis
    n: u32,           // the pass axis's length
    inner_v: u32,     // loads across the axis (inner / vec)
    blocks: u32,      // blocks of outputs along the axis, ceil(n / BLOCK)
    centre: i32,      // len(weights) // 2 + origin
    groups_x: u32,    // workgroups along x of the dispatch (the grid is 2-D beyond 65535)
    one: f32,         // 1.0, opaque to the compiler (nd_df64.wgsl)
    total_v: u32,     // invocations that have work: outer * blocks * inner_v
    constant: vec2<f32>,  // the value outside the array for mode 1 (hi, lo; f32 uses hi)
    taps: u32,        // `roll`: the weights' count (the unrolled code has it as a constant)
    sel_lo: u32,      // `edge` (chunked): the interior blocks are sel_lo .. sel_hi - 1
    sel_hi: u32,
    sel_count: u32,   // chunked: the blocks this dispatch takes a line
    _pad: vec2<u32>,
    // Per tap: f32: (w, -, -, -); df64: (hi, lo, hi's top 12 bits, hi's rest) (Dekker's split
    // of the weight, made once on the host).
    w: array<vec4<f32>, {$ roll_taps if roll else taps $}>,
}

{% if wide %}
{% include "nd_wide.wgsl" %}

// vec4 columns jv and jv + 1 (jv even) of row s of the line starting at row `row`.
fn load_pair(row: u32, s: i32, jv: u32) -> Chunk {
    if (BORDER_MODE == 1 && s < 0) {
        return Chunk(vec4<f32>(params.constant.x), vec4<f32>(params.constant.x));
    }
    return chunk(((row + u32(s)) * params.inner_v + jv) / 2u);
}
{% else %}
@group(0) @binding(0) var<storage, read> src: array<{$ mem $}>;
@group(0) @binding(1) var<storage, read_write> dst: array<{$ mem $}>;
{% if texin | default(false) %}
// `texin` (f32 `roll`, or df64): the input also as a texture, index t at (t mod texw, t / texw)
// (blurapp.gpu.ndpass's TEXTURE_INPUT; nd_wide.wgsl's says why): f32 r32float for `vec` 1 or
// rgba32float for `vec` 4; df64 rgba32float, two columns' pairs a texel for `vec` 2, half a
// texel a pair for `vec` 1 (load_at).
{% include "nd_texin.wgsl" %}
{% endif %}
{% endif %}
@group(0) @binding(3) var<uniform> params: LineParams;

override BORDER_MODE: i32 = 0;

{% include "nd_border.wgsl" %}
{% if df %}
{% include "nd_df64.wgsl" %}
{% endif %}

{% if chunked %}
// Element s of the line starting at element `row` (mapped by the border; -1: the constant).
fn load_at(row: u32, s: i32, jv: u32) -> f32 {
    if (BORDER_MODE == 1 && s < 0) {
        return params.constant.x;
    }
    let e = row + u32(s);
{% if wide %}
    return element(e);
{% else %}
    return src[e / 4u][e % 4u];
{% endif %}
}
{% elif not wide %}
fn load_at(row: u32, s: i32, jv: u32) -> {$ mem $} {
    if (BORDER_MODE == 1 && s < 0) {
{% if df and vec == 2 %}
        return vec4<f32>(params.constant, params.constant);
{% elif df %}
        return params.constant;
{% else %}
        return {$ mem $}(params.constant.x);
{% endif %}
    }
{% if texin | default(false) %}
    let t = (row + u32(s)) * params.inner_v + jv;
{% if df and vec == 1 %}
    return fetch_pair(t);
{% else %}
    return fetch(t){% if vec == 1 %}.x{% endif %};
{% endif %}
{% else %}
    return src[(row + u32(s)) * params.inner_v + jv];
{% endif %}
}
{% endif %}

{% if shuffle %}
{% include "nd_shuffle.wgsl" %}

{% endif %}
@compute @workgroup_size({$ wg $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
{% if shuffle %}
    @builtin(subgroup_invocation_id) sid: u32,
    @builtin(subgroup_size) ssz: u32,
{% endif %}
) {
    let g = (wid.y * params.groups_x + wid.x) * {$ wg $}u + lid;
    if (g >= params.total_v) {
        return;
    }
{% if chunked %}
    let jv = 0u;
    let k = g % params.sel_count;
{% if edge == "interior" %}
    let b = params.sel_lo + k;
{% elif edge == "border" %}
    let b = select(params.sel_hi + (k - params.sel_lo), k, k < params.sel_lo);
{% else %}
    let b = k;
{% endif %}
    let row = (g / params.sel_count) * params.n;
{% elif groups > 1 %}
    let lanes_v = params.inner_v / {$ groups $}u;
    let jv = (g % lanes_v) * {$ groups $}u;
    let rest = g / lanes_v;
    let b = rest % params.blocks;
    let row = (rest / params.blocks) * params.n;
{% else %}
    let jv = g % params.inner_v;
    let rest = g / params.inner_v;
    let b = rest % params.blocks;
    let row = (rest / params.blocks) * params.n;  // the line's first element, in rows of inner
{% endif %}
    let n = i32(params.n);
    let first = i32(b) * {$ block $};
    let start = first - params.centre;
{% if chunked %}
{% set cw = 8 if wide else 4 %}
{% set chunks = (s0 + block + taps - 1 + cw - 1) // cw %}
{% set own = block // cw if shuffle else chunks %}
{% if shuffle %}
    // nb_m: the invocation m lanes on in the subgroup takes the block m on of this line, so
    // its own chunks are this one's others.
{% for m in range(1, (chunks - 1) // own + 1) %}
    let nb{$ m $} = sid + {$ m $}u < ssz && subgroupShuffleDown(g, {$ m $}u) == g + {$ m $}u
        && g + {$ m $}u < params.total_v && k + {$ m $}u < params.sel_count;
{% endfor %}
{% endif %}
{% for i in range(block + taps - 1) %}
    var m{$ i $}: f32;
{% endfor %}
{% macro el(i) %}{% if wide %}c{$ (s0 + i) // 8 $}.{$ "a" if (s0 + i) % 8 < 4 else "b" $}[{$ (s0 + i) % 4 $}]{% else %}c{$ (s0 + i) // 4 $}[{$ (s0 + i) % 4 $}]{% endif %}{% endmacro %}
{% set load = "chunk" if wide else "src" %}
{% if edge == "interior" %}
    {
        let c = (row + u32(start - {$ s0 $})) / {$ cw $}u;
{% for q in range(own) %}
        let c{$ q $} = {$ load $}{$ "(" if wide else "[" $}c + {$ q $}u{$ ")" if wide else "]" $};
{% endfor %}
{% for q in range(own, chunks) %}
        // Chunk q is the neighbour's (q // own blocks on) own chunk q % own.
        var c{$ q $} = shuffled(c{$ q % own $}, {$ q // own $}u);
        if (!nb{$ q // own $}) {
            c{$ q $} = {$ load $}{$ "(" if wide else "[" $}c + {$ q $}u{$ ")" if wide else "]" $};
        }
{% endfor %}
{% for i in range(block + taps - 1) %}
        m{$ i $} = {$ el(i) $};
{% endfor %}
    }
{% else %}
    {
        // The window's chunks as in the interior (a chunk before the array's start read as
        // its first), then its elements outside the line replaced by the border's: a masked
        // load on the lanes that need it, not a mapped load of every element.
        let c = (i32(row) + start - {$ s0 $}) / {$ cw $};  // a whole number of chunks
{% for q in range(chunks) %}
        let c{$ q $} = {$ load $}{$ "(" if wide else "[" $}u32(max(c + {$ q $}, 0)){$ ")" if wide else "]" $};
{% endfor %}
{% for i in range(block + taps - 1) %}
        m{$ i $} = {$ el(i) $};
{% endfor %}
        if (!(start >= 0 && start + {$ block + taps - 1 $} <= n)) {
{% for i in range(block + taps - 1) %}
            if (start + {$ i $} < 0 || start + {$ i $} >= n) {
                m{$ i $} = load_at(row, {$ map $}(start + {$ i $}, n, BORDER_MODE), jv);
            }
{% endfor %}
        }
    }
{% endif %}
{% if wide %}
{% for q in range(block // 8) %}
    if (first + {$ 8 * q $} < n) {
        put((row + u32(first)) / 8u + {$ q $}u, vec4<f32>(
{% for r in range(4) %}
            {$ f32_sum(8 * q + r) $},
{% endfor %}
        ), vec4<f32>(
{% for r in range(4, 8) %}
            {$ f32_sum(8 * q + r) $},
{% endfor %}
        ));
    }
{% endfor %}
{% else %}
{% for q in range(block // 4) %}
    if (first + {$ 4 * q $} < n) {
        dst[(row + u32(first)) / 4u + {$ q $}u] = vec4<f32>(
{% for r in range(4) %}
            {$ f32_sum(4 * q + r) $},
{% endfor %}
        );
    }
{% endfor %}
{% endif %}
{% elif roll and groups > 1 %}
    // `groups` neighbouring vec4 columns an invocation, each its own rolling window: one load
    // a tap and column, as above, with a SIMD row's lanes `groups` vec4s apart.
    let taps = i32(params.taps);
    let interior = start >= 0 && start + {$ block - 1 $} + taps <= n;
{% for o in range(block - 1) %}
    let s{$ o $} = select({$ map $}(start + {$ o $}, n, BORDER_MODE), start + {$ o $}, interior);
{$ gload(o, "s" ~ o, "var") $}
{% endfor %}
{% for o in range(block) %}
{% for c in range(groups) %}
    var acc{$ o $}_{$ c $} = {$ vt $}(0.0);
{% endfor %}
{% endfor %}
    var k = 0;
{% if unroll > 1 %}
    // UNROLL taps an iteration: the window moves by UNROLL elements at once (its registers
    // copied once for UNROLL taps, not once a tap); the rest of the taps one at a time. Each
    // output's sum takes its taps in the same order.
    for (; k + {$ unroll $} <= taps; k += {$ unroll $}) {
{% for u in range(unroll) %}
        let i{$ u $} = start + {$ block - 1 + u $} + k;
        let si{$ u $} = select({$ map $}(i{$ u $}, n, BORDER_MODE), i{$ u $}, interior);
{$ gload("n" ~ u, "si" ~ u, "let") $}
{% endfor %}
{% for u in range(unroll) %}
        let wk{$ u $} = params.w[k + {$ u $}];
{% for c in range(groups) %}
{% for o in range(block) %}
        acc{$ o $}_{$ c $} += wk{$ u $}.x * {$ ("m" ~ (o + u) ~ "_" ~ c) if o + u < block - 1 else ("mn" ~ (o + u - block + 1) ~ "_" ~ c) $};
{% endfor %}
{% endfor %}
{% endfor %}
{% for c in range(groups) %}
{% for o in range(block - 1) %}
        m{$ o $}_{$ c $} = {$ ("m" ~ (o + unroll) ~ "_" ~ c) if o + unroll < block - 1 else ("mn" ~ (o + unroll - block + 1) ~ "_" ~ c) $};
{% endfor %}
{% endfor %}
    }
{% endif %}
    for (; k < taps; k++) {
        let i = start + {$ block - 1 $} + k;
        let si = select({$ map $}(i, n, BORDER_MODE), i, interior);
        let wk = params.w[k];
{$ gload("n", "si", "let") $}
{% for c in range(groups) %}
{% for o in range(block) %}
        acc{$ o $}_{$ c $} += wk.x * {$ ("m" ~ o ~ "_" ~ c) if o < block - 1 else ("mn_" ~ c) $};
{% endfor %}
{% for o in range(block - 1) %}
        m{$ o $}_{$ c $} = {$ ("m" ~ (o + 1) ~ "_" ~ c) if o + 1 < block - 1 else ("mn_" ~ c) $};
{% endfor %}
{% endfor %}
    }
{% for o in range(block) %}
    if (first + {$ o $} < n) {
{% set vals = [] %}{% for c in range(groups) %}{% set _ = vals.append("acc" ~ o ~ "_" ~ c) %}{% endfor %}
{$ gstore(o, vals) $}
    }
{% endfor %}
{% elif roll %}
    let taps = i32(params.taps);
    let interior = start >= 0 && start + {$ block - 1 $} + taps <= n;
    // The first BLOCK - 1 elements of the window; each tap loads the next one.
{% for o in range(block - 1) %}
    var m{$ o $} = load_at(row, select({$ map $}(start + {$ o $}, n, BORDER_MODE), start + {$ o $},
        interior), jv);
{% if df %}
{$ df_parts(o, "var") $}
{% endif %}
{% endfor %}
{% for o in range(block) %}
{% if df %}
    var hi{$ o $} = {$ vt $}(0.0);
    var lo{$ o $} = {$ vt $}(0.0);
    var raw{$ o $} = {$ vt $}(0.0);
{% else %}
    var acc{$ o $} = {$ vt $}(0.0);
{% endif %}
{% endfor %}
    var k = 0;
{% if unroll > 1 and not df %}
    // UNROLL taps an iteration, as the column groups' above.
    for (; k + {$ unroll $} <= taps; k += {$ unroll $}) {
{% for u in range(unroll) %}
        let i{$ u $} = start + {$ block - 1 + u $} + k;
        let mn{$ u $} = load_at(row, select({$ map $}(i{$ u $}, n, BORDER_MODE), i{$ u $}, interior), jv);
{% endfor %}
{% for u in range(unroll) %}
        let wk{$ u $} = params.w[k + {$ u $}];
{% for o in range(block) %}
        acc{$ o $} += wk{$ u $}.x * {$ ("m" ~ (o + u)) if o + u < block - 1 else ("mn" ~ (o + u - block + 1)) $};
{% endfor %}
{% endfor %}
{% for o in range(block - 1) %}
        m{$ o $} = {$ ("m" ~ (o + unroll)) if o + unroll < block - 1 else ("mn" ~ (o + unroll - block + 1)) $};
{% endfor %}
    }
{% endif %}
    for (; k < taps; k++) {
        let i = start + {$ block - 1 $} + k;
        let mn = load_at(row, select({$ map $}(i, n, BORDER_MODE), i, interior), jv);
        let wk = params.w[k];
{% if df %}
{$ df_parts("n", "let") $}
{% for o in range(block) %}
{$ df_tap("wk", o, o if o < block - 1 else "n") $}
{% endfor %}
{% for o in range(block - 1) %}
        h{$ o $} = {$ ("h" ~ (o + 1)) if o + 1 < block - 1 else "hn" $};
        l{$ o $} = {$ ("l" ~ (o + 1)) if o + 1 < block - 1 else "ln" $};
{% if two_prod != "fma" %}
        hh{$ o $} = {$ ("hh" ~ (o + 1)) if o + 1 < block - 1 else "hhn" $};
        hl{$ o $} = {$ ("hl" ~ (o + 1)) if o + 1 < block - 1 else "hln" $};
{% endif %}
{% endfor %}
{% else %}
{% for o in range(block) %}
        acc{$ o $} += wk.x * {$ ("m" ~ o) if o < block - 1 else "mn" $};
{% endfor %}
{% for o in range(block - 1) %}
        m{$ o $} = {$ ("m" ~ (o + 1)) if o + 1 < block - 1 else "mn" $};
{% endfor %}
{% endif %}
    }
{% for o in range(block) %}
    if (first + {$ o $} < n) {
{% if df %}
{$ df_store(o, o) $}
{% else %}
        dst[(row + u32(first + {$ o $})) * params.inner_v + jv] = acc{$ o $};
{% endif %}
    }
{% endfor %}
{% elif groups > 1 %}
    // `groups` neighbouring vec4 columns an invocation (as the rolled passes' `groups`).
{% for i in range(block + taps - 1) %}
    let s{$ i $} = {$ map $}(start + {$ i $}, n, BORDER_MODE);
{$ gload(i, "s" ~ i, "let") $}
{% endfor %}
{% for o in range(block) %}
    if (first + {$ o $} < n) {
{% set vals = [] %}{% for c in range(groups) %}{% set _ = vals.append(f32_sum(o, "_" ~ c)) %}{% endfor %}
{$ gstore(o, vals) $}
    }
{% endfor %}
{% else %}
{% for i in range(block + taps - 1) %}
    let m{$ i $} = load_at(row, {$ map $}(start + {$ i $}, n, BORDER_MODE), jv);
{% endfor %}
{% if df %}
    // hi, lo of every loaded element, and hi's Dekker split (once per element, shared by the
    // taps of BLOCK outputs).
{% for i in range(block + taps - 1) %}
{$ df_parts(i, "let") $}
{% endfor %}
{% endif %}
{% for o in range(block) %}
    if (first + {$ o $} < n) {
{% if df %}
        var hi = {$ vt $}(0.0);
        var lo = {$ vt $}(0.0);
        var raw = {$ vt $}(0.0);
{% for k in range(taps) %}
{$ df_tap("params.w[" ~ k ~ "]", "", o + k) $}
{% endfor %}
{$ df_store("", o) $}
{% else %}
        dst[(row + u32(first + {$ o $})) * params.inner_v + jv] = {$ f32_sum(o) $};
{% endif %}
    }
{% endfor %}
{% endif %}
}
