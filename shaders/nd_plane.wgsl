// Two 1-D correlation passes in one dispatch, f32: along axis -2 (the rows of each plane, `ta`
// taps), then along axis -1 (the lines, `tb` taps), of an array viewed as (planes, n0, n1) with
// n1 a multiple of 4 (blurapp.gpu.ndpass fuses a chain's consecutive passes along the last two
// axes into this). The same sums as two nd_line.wgsl passes (folded the same way), in the
// passes' order or, with `rev`, axis -1's first (which ndpass also takes for a pair along axis
// -2 first when no border is constant: the same values to rounding), without the intermediate
// going through memory: on lavapipe a storage-buffer access is a loop over the SIMD lanes
// (Mesa's emit_load_mem), and two passes made four accesses an element where this makes
// about two.
//
// An invocation computes COLS neighbouring outputs of a line (one vec4 store per 4) for a band
// of `rows` lines of a plane, walking down them: a window of `ta` input lines x W = COLS + tb - 1
// columns in registers moves by one line per output line, so each input element is loaded
// about (rows + ta - 1) / rows * W / COLS times. For each output line the first pass's sums
// come out for the W columns the second pass reads (a column outside the line is the second
// pass's border: its mapped column's sum, or for a constant border the second pass's constant,
// as the intermediate array would hold), then the second pass's COLS sums. Neighbouring
// invocations take neighbouring strips of one band, so a SIMD row's loads share cache lines.
//
// `rev`: the pass along axis -1 first, then axis -2 (scipy's sobel and prewitt along the last
// axis): each input line's COLS first-pass sums enter the window (`ta` lines x COLS), the
// second pass sums the window's columns; a line outside the plane under a constant border is
// the second pass's constant, a column outside the line the array's (the first pass's) one.
//
// `edge`: "all" (every strip), "interior" (only strips whose window lies inside the line: no
// border code at all, which lavapipe would run masked for every line of the walk: 20-30 % of
// the pass) or "border" (the other strips); blurapp.gpu.ndpass runs an interior and a border
// dispatch over the same buffers where a plane has interior strips.
//
// `wide` (a device with "shader-int64", n1 and COLS multiples of 8): the buffers are bound as
// array<vec4<u64>> and every load and store moves 8 floats (bit patterns, split and packed
// with bitcasts: the values are untouched). lavapipe's per-lane loop costs per access and lane
// more than per component, so 32-byte accesses halve most of that work for the same data.
//
// `shuffle` (a device with "subgroup", `edge` "interior", a window line wider than the strip's
// own COLS columns of chunks): an invocation loads only its own chunks of each line and takes
// the others from the invocations of the next strips in its subgroup (subgroupShuffleDown),
// which load them as their own; where that lane is not the next strip of the same band (the
// subgroup's last lanes, a band's last strip, an empty lane) it loads them. Bit patterns only:
// the values are the loaded ones. On lavapipe a shuffle is a register move per lane, a load a
// bounds-checked memory access per lane.
//
// Template parameters: `rev`, `ta`, `tb` (taps along axis -2 and axis -1), `cols` (a multiple
// of 4), `edge`, `wide`, `shuffle`, `s0` (-centre_b mod 4, with `wide` mod 8: the window's place in its
// chunks), `syma`, `symb` (1 / -1: folded symmetric / antisymmetric weights, as nd_line.wgsl's
// f32_sum), `neara`, `nearb` (windows within one reflection: the mapping without division),
// `wg`, `texin` and `texw` (with `wide`, `edge` "interior" or "border": the input read as a
// texture, see nd_wide.wgsl). Override constants: BORDER_MODE_A, BORDER_MODE_B.

{% set W = cols + tb - 1 %}
{% set wide = wide | default(false) %}
{% set edge = edge | default("all") %}
{% set cw = 8 if wide else 4 %}
{% set chunks = (s0 + W + cw - 1) // cw %}
{% set shuffle = shuffle | default(false) and edge == "interior" and chunks > cols // cw %}
// The chunks of a line's window an invocation loads itself; with `shuffle` the others come
// from the invocations of the next strips in its subgroup, which load them as their own.
{% set own = cols // cw if shuffle else chunks %}
// Element i of the window's loaded chunks (c0, c1, ...: vec4<f32>, or with `wide` pairs of them).
{% macro el(i) %}{% if wide %}c{$ i // 8 $}.{$ "a" if i % 8 < 4 else "b" $}[{$ i % 4 $}]{% else %}c{$ i // 4 $}[{$ i % 4 $}]{% endif %}{% endmacro %}
// The f32 sum of `taps` terms: weight params.w[base + k].x times operand(k), folded as
// nd_line.wgsl's f32_sum when `sym` is 1 or -1.
{% macro op(pre, i, post) %}{$ pre $}{$ i $}{$ post $}{% endmacro %}
{% macro fsum(taps, sym, base, pre, off, post) %}{% if sym %}{% for k in range(taps // 2) %}params.w[{$ base + k $}].x * ({$ op(pre, off + k, post) $} {$ "+" if sym > 0 else "-" $} {$ op(pre, off + taps - 1 - k, post) $}){% if not loop.last or taps % 2 %} + {% endif %}{% endfor %}{% if taps % 2 %}params.w[{$ base + taps // 2 $}].x * {$ op(pre, off + taps // 2, post) $}{% endif %}{% else %}{% for k in range(taps) %}params.w[{$ base + k $}].x * {$ op(pre, off + k, post) $}{% if not loop.last %} + {% endif %}{% endfor %}{% endif %}{% endmacro %}

struct PlaneParams {
    planes: u32,
    n0: u32,          // lines of a plane (axis -2)
    n1: u32,          // elements of a line (axis -1), a multiple of 4
    strips: u32,      // ceil(n1 / COLS)
    bands: u32,       // ceil(n0 / rows)
    rows: u32,        // output lines an invocation walks
    centre_a: i32,
    centre_b: i32,
    groups_x: u32,
    total: u32,       // planes * bands * sel_count
    constant_a: f32,  // the constant (mode 1) of the pass along axis -2
    constant_b: f32,  // of the pass along axis -1
    sel_lo: u32,      // `edge`: the interior strips are sel_lo .. sel_hi - 1
    sel_hi: u32,
    sel_count: u32,   // strips this dispatch takes a band
    _pad: u32,
    // Per tap (f32 in .x): the `ta` weights along axis -2, then the `tb` along axis -1.
    w: array<vec4<f32>, {$ ta + tb $}>,
}

{% if wide %}
{% include "nd_wide.wgsl" %}
{% else %}
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;

fn chunk(i: u32) -> vec4<f32> {
    return src[i];
}

fn put(i: u32, v: vec4<f32>) {
    dst[i] = v;
}

fn element(e: u32) -> f32 {
    return src[e / 4u][e % 4u];
}
{% endif %}
@group(0) @binding(3) var<uniform> params: PlaneParams;
{% if shuffle %}

{% include "nd_shuffle.wgsl" %}
{% endif %}

override BORDER_MODE_A: i32 = 0;
override BORDER_MODE_B: i32 = 0;

{% include "nd_border.wgsl" %}

{% set map_a = "nd_border_index_near" if neara else "nd_border_index" %}
{% set map_b = "nd_border_index_near" if nearb else "nd_border_index" %}

// Element `col` (already mapped; -1: outside) of the line starting at element `base`.
fn load_el(base: u32, col: i32) -> f32 {
    if (col < 0) {
        // A constant border's column: the array's value there under `rev` (axis -1's pass
        // first); else its first-pass sum is replaced by the second pass's constant.
        return params.constant_b;
    }
    return element(base + u32(col));
}

{% macro load_line(slot, pre) %}
    {
        let ri = {$ map_a $}(top + t, n0, BORDER_MODE_A);
        rowconst = BORDER_MODE_A == 1 && ri < 0;
        if (rowconst) {
{% for w in range(W) %}
            {$ pre $}{$ w $} = params.constant_a;
{% endfor %}
        } else {
            let base = pbase + u32(ri) * params.n1;
            if ({% if edge == "interior" %}true{% else %}interior{% endif %}) {
                let c = (base + u32(start - {$ s0 $})) / {$ cw $}u;
{% for q in range(own) %}
                let c{$ q $} = chunk(c + {$ q $}u);
{% endfor %}
{% for q in range(own, chunks) %}
                // Chunk q is the neighbour's (q // own strips on) own chunk q % own.
                var c{$ q $} = shuffled(c{$ q % own $}, {$ q // own $}u);
                if (!nb{$ q // own $}) {
                    c{$ q $} = chunk(c + {$ q $}u);
                }
{% endfor %}
{% for w in range(W) %}
                {$ pre $}{$ w $} = {$ el(s0 + w) $};
{% endfor %}
            }{% if edge != "interior" %} else {
{% for w in range(W) %}
                {$ pre $}{$ w $} = load_el(base, {$ map_b $}(start + {$ w $}, n1, BORDER_MODE_B));
{% endfor %}
            }{% endif %}
        }
    }
{% endmacro %}

// The walk of a band: the window's first ta - 1 lines (`line(false)`: loaded, nothing
// stored), then one output line a step (`line(true)`). A loop, not ta - 1 copies of a line's
// code: a 17-tap pair's border shader took 11 s to compile and first run on lavapipe with
// them unrolled, 0.4 s so.
{% macro walk(line) %}
    var t = 0;
    for (var o = r0 - {$ ta - 1 $}; o < r0; o++) {
{$ line(false) $}
    }
    for (var o = r0; o < r_end; o++) {
{$ line(true) $}
    }
{% endmacro %}

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
    if (g >= params.total) {
        return;
    }
    let k = g % params.sel_count;
{% if shuffle %}
    // nb_m: the invocation m lanes on in the subgroup takes the strip m on, in this band (it
    // walks the same lines in step with this one), so its own chunks are this one's others.
{% for m in range(1, (chunks - 1) // own + 1) %}
    let nb{$ m $} = sid + {$ m $}u < ssz && subgroupShuffleDown(g, {$ m $}u) == g + {$ m $}u
        && g + {$ m $}u < params.total && k + {$ m $}u < params.sel_count;
{% endfor %}
{% endif %}
    let rest = g / params.sel_count;
{% if edge == "interior" %}
    let strip = params.sel_lo + k;
{% elif edge == "border" %}
    let strip = select(params.sel_hi + (k - params.sel_lo), k, k < params.sel_lo);
{% else %}
    let strip = k;
{% endif %}
    let band = rest % params.bands;
    let plane = rest / params.bands;
    let n0 = i32(params.n0);
    let n1 = i32(params.n1);
    let pbase = plane * params.n0 * params.n1;
    let j0 = i32(strip) * {$ cols $};
    let start = j0 - params.centre_b;
    let interior = start >= 0 && start + {$ W $} <= n1;
    let r0 = i32(band * params.rows);
    let r_end = min(r0 + i32(params.rows), n0);
    let top = r0 - params.centre_a;  // the input line of window slot 0 for output line r0
    var rowconst = false;
{% if rev %}
    // `rev`: axis -1's pass first. A window of `ta` lines of its COLS sums (an input line
    // outside the plane under a constant border is the second pass's constant).
{% for w in range(W) %}
    var x{$ w $}: f32;
{% endfor %}
{% for s in range(ta) %}
{% for c in range(cols) %}
    var h{$ s $}_{$ c $}: f32;
{% endfor %}
{% endfor %}
{% macro first_sums(slot) %}
{$ load_line(slot, "x") $}
{% for c in range(cols) %}
        h{$ slot $}_{$ c $} = select({$ fsum(tb, symb, ta, "x", c, "") $}, params.constant_a,
            rowconst);
{% endfor %}
{% endmacro %}
{% macro rev_line(store) %}
        t = o - r0 + {$ ta - 1 $};
{$ first_sums(ta - 1) $}
{% if store %}
        let obase = (pbase + u32(o) * params.n1 + u32(j0)) / {$ cw $}u;
{% for q in range(cols // cw) %}
        if (j0 + {$ cw * q $} < n1) {
            put(obase + {$ q $}u{% for h in range(cw // 4) %}, vec4<f32>(
{% for r in range(4) %}
                {$ fsum(ta, syma, 0, "h", 0, "_" ~ (cw * q + 4 * h + r)) $},
{% endfor %}
            ){% endfor %});
        }
{% endfor %}
{% endif %}
{% for s in range(ta - 1) %}
{% for c in range(cols) %}
        h{$ s $}_{$ c $} = h{$ s + 1 $}_{$ c $};
{% endfor %}
{% endfor %}
{% endmacro %}
{$ walk(rev_line) $}
{% else %}
{% for s in range(ta) %}
{% for w in range(W) %}
    var m{$ s $}_{$ w $}: f32;
{% endfor %}
{% endfor %}
{% macro fw_line(store) %}
        t = o - r0 + {$ ta - 1 $};
{$ load_line(ta - 1, "m" ~ (ta - 1) ~ "_") $}
{% if store %}
        // The first pass's sums over the W columns (the intermediate line), then the second's.
{% for w in range(W) %}
        let v{$ w $} = select({$ fsum(ta, syma, 0, "m", 0, "_" ~ w) $}, params.constant_b,
            BORDER_MODE_B == 1 && (start + {$ w $} < 0 || start + {$ w $} >= n1));
{% endfor %}
        let obase = (pbase + u32(o) * params.n1 + u32(j0)) / {$ cw $}u;
{% for q in range(cols // cw) %}
        if (j0 + {$ cw * q $} < n1) {
            put(obase + {$ q $}u{% for h in range(cw // 4) %}, vec4<f32>(
{% for r in range(4) %}
                {$ fsum(tb, symb, ta, "v", cw * q + 4 * h + r, "") $},
{% endfor %}
            ){% endfor %});
        }
{% endfor %}
{% endif %}
{% for s in range(ta - 1) %}
{% for w in range(W) %}
        m{$ s $}_{$ w $} = m{$ s + 1 $}_{$ w $};
{% endfor %}
{% endfor %}
{% endmacro %}
{$ walk(fw_line) $}
{% endif %}
}
