// Double-float ("df64") arithmetic: a float64 value held as an unevaluated sum hi + lo of two
// f32s, with error-free transformations (Dekker 1971, Knuth's TwoSum; the DSFUN90 and QD
// libraries, Thall 2006 "Extended-Precision Floating-Point Numbers for GPU Computation").
//
// WGSL has no `precise`: nothing stops a compiler from contracting a*b+c into an FMA or from
// rewriting (a+b)-a as b, either of which destroys an error term. Each step below that must
// round as written multiplies by `params.one` (1.0, read from the uniform buffer, so that no
// compiler can fold it): an algebraic rewrite no longer matches, and a contraction of x*one+y
// is exact (x*1 has no rounding error). A product that feeds a TwoSum is made the same way,
// (a*b)*one, so that a contraction cannot fuse it into the sum. blurapp.gpu.ndpass's start-up check runs these
// functions on the adapter and compares them with exact arithmetic before any df64 pass runs.
//
// The including shader declares `params` with an f32 field `one`. Template parameter
// `two_prod`: "fma" (the product's error as fma(a, b, -a*b): exact where fma is fused) or
// "dekker" (Dekker's split into 12-bit halves, every partial product exact); the start-up
// check picks the one that is exact here.

// True where v is ±inf or NaN (WGSL has no isinf/isnan, and may assume neither occurs in
// arithmetic; the bit pattern cannot be optimised away).
fn df_nonfinite(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7f800000u) == 0x7f800000u;
}

// Knuth's TwoSum: s + e == a + b exactly, s = fl(a + b).
fn df_two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = a + b;
    let bb = s * params.one - a;
    let e = (a - (s - bb)) + (b - bb);
    return vec2<f32>(s, e);
}

// Dekker's FastTwoSum (|a| >= |b|): renormalises a pair so that |lo| <= ulp(hi) / 2.
fn df_quick_two_sum(a: f32, b: f32) -> vec2<f32> {
    let s = a + b;
    let e = b - (s * params.one - a);
    return vec2<f32>(s, e);
}

{% if two_prod == "fma" %}
// The rounding error of p = fl(a * b): exact when fma is fused.
fn df_prod_err(a: f32, b: f32, p: f32) -> f32 {
    return fma(a, b, -p);
}
{% else %}
// Dekker's split: hi has the top 12 bits of a, lo the rest (4097 = 2^12 + 1).
fn df_split(a: f32) -> vec2<f32> {
    let t = (4097.0 * a) * params.one;
    let hi = t * params.one - (t - a);
    return vec2<f32>(hi, a - hi);
}

// The rounding error of p = fl(a * b) from the halves' products, each exact in f32.
fn df_prod_err(a: f32, b: f32, p: f32) -> f32 {
    let sa = df_split(a);
    let sb = df_split(b);
    return ((sa.x * sb.x - p) + sa.x * sb.y + sa.y * sb.x) + sa.y * sb.y;
}
{% endif %}

// a * b of two df64s, to about 2^-46 relative (the lo * lo term dropped).
fn df_mul(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let p = (a.x * b.x) * params.one;  // a rounded product: not fused into the sum below
    let e = df_prod_err(a.x, b.x, p) + (a.x * b.y + a.y * b.x);
    return df_quick_two_sum(p, e);
}

// a + b of two df64s (QD's accurate add: both parts' errors kept).
fn df_add(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    let s = df_two_sum(a.x, b.x);
    let t = df_two_sum(a.y, b.y);
    let u = df_quick_two_sum(s.x, s.y + t.x);
    return df_quick_two_sum(u.x, u.y + t.y);
}

// One tap of a looped df64 correlation (nd_line_loop, nd_taps_loop): the accumulator (hi, lo,
// raw) plus w * v, both df64; `raw` is the plain f32 sum of the rounded products, whose
// non-finite values (inf, NaN, inf - inf) are exactly float64's, since the caller scales the
// data so that nothing finite overflows.
fn df_tap(acc: vec3<f32>, w: vec2<f32>, v: vec2<f32>) -> vec3<f32> {
    let ph = (w.x * v.x) * params.one;  // rounded as written
    let pl = df_prod_err(w.x, v.x, ph) + (w.x * v.y + w.y * v.x);
    let s = df_two_sum(acc.x, ph);
    let r = df_quick_two_sum(s.x, s.y + (acc.y + pl));
    return vec3<f32>(r.x, r.y, acc.z + ph);
}

// The (hi, lo) result of a df_tap accumulator: (raw, 0) where raw is not finite.
fn df_result(acc: vec3<f32>) -> vec2<f32> {
    return select(acc.xy, vec2<f32>(acc.z, 0.0), df_nonfinite(acc.z));
}
