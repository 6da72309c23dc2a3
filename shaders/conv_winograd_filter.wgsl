// Winograd filter transform U = G g Gᵀ of F(m×m, 3×3): once per weights, not per image.
// One invocation per (output channel, input channel of its group): reads the 3×3 taps, writes
// the α×α transformed values to U[(t·Cout + m)·Cg + c], t = ξ·α + ν, so that each of the α²
// GEMMs reads its Cout×Cg matrix (one Mg×Cg block per group) row-major.
// Template: alpha, code (the unrolled G·g·Gᵀ, winograd.transform_code), wg.

struct Params {
    cout: u32, cg: u32, total: u32, row_pitch: u32,
};

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> wt: array<f32>;   // (cout, cg, 3, 3)
@group(0) @binding(2) var<storage, read_write> u: array<f32>;

@compute @workgroup_size({$ wg $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let idx = gid.y * p.row_pitch + gid.x;
    if (idx >= p.total) {
        return;
    }
    let base = idx * 9u;  // idx = m·Cg + c, the weights' own order
{% for i in range(3) %}{% for j in range(3) %}
    let g_{$ i $}_{$ j $} = wt[base + {$ 3 * i + j $}u];
{% endfor %}{% endfor %}
{% for line in code %}
    {$ line $}
{% endfor %}
    let stride = p.cout * p.cg;
{% for i in range(alpha) %}{% for j in range(alpha) %}
    u[{$ i * alpha + j $}u * stride + idx] = u_{$ i $}_{$ j $};
{% endfor %}{% endfor %}
}
