// The df64 start-up check (blurapp.gpu.ndpass.df64_status): runs nd_df64.wgsl's functions on
// inputs read from a buffer (nothing can be folded at compile time) and writes every result,
// for the host to compare with exact arithmetic. Also a plain a * b + c, written as two
// operations: where the adapter fuses it, the result differs from the two roundings.
//
// Per case i, `inputs` holds (a, b, c, d) and `outputs` receives 12 values: TwoSum(a, b),
// FastTwoSum(a, b), fl(a * b) and its error, df_add((a, b), (c, d)), df_mul((a, b), (c, d)),
// fl(fl(a * b) + c).

struct CheckParams {
    cases: u32,
    one: f32,
    _pad: vec2<u32>,
}

@group(0) @binding(0) var<storage, read> inputs: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> outputs: array<f32>;
@group(0) @binding(3) var<uniform> params: CheckParams;

{% include "nd_df64.wgsl" %}

@compute @workgroup_size(128)  // blurapp.gpu.ndpass dispatches 128 a workgroup
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.cases) {
        return;
    }
    let q = inputs[i];
    let o = i * 12u;
    let ts = df_two_sum(q.x, q.y);
    outputs[o] = ts.x;
    outputs[o + 1u] = ts.y;
    let qs = df_quick_two_sum(q.x, q.y);
    outputs[o + 2u] = qs.x;
    outputs[o + 3u] = qs.y;
    let p = q.x * q.y;
    outputs[o + 4u] = p;
    outputs[o + 5u] = df_prod_err(q.x, q.y, p);
    let s = df_add(vec2<f32>(q.x, q.y), vec2<f32>(q.z, q.w));
    outputs[o + 6u] = s.x;
    outputs[o + 7u] = s.y;
    let m = df_mul(vec2<f32>(q.x, q.y), vec2<f32>(q.z, q.w));
    outputs[o + 8u] = m.x;
    outputs[o + 9u] = m.y;
    outputs[o + 10u] = q.x * q.y + q.z;
    outputs[o + 11u] = 0.0;
}
