// Direct 2-D correlation: one invocation per output pixel, every tap read from global memory.
// The baseline the other strategies are measured against.
//
// The kernel's columns are unrolled ({$ kw $} of them, a template parameter) and its rows are a
// loop: a compiler that runs invocations as SIMD lanes (lavapipe) or a GPU both do best with
// straight-line loads and FMAs. The border mode maps each of the window's columns and rows
// once per invocation (see main).

// `skip_zero` (the kernel has zero weights): a zero tap is skipped, not multiplied, so that a
// NaN or Inf under it does not spread (DESIGN.md "Numbers", as scipy.ndimage.correlate). Every
// invocation reads the same weight, so the branch is uniform; kernels without zeros keep the
// plain multiply-adds.
{% set skip_zero = skip_zero | default(true) %}
{% set unroll_max = unroll_max | default(64) %}

{% include "bindings.wgsl" %}
@group(0) @binding(2) var<storage, read> weights: array<f32>;  // rows × cols, row-major

const KW: i32 = {$ kw $};  // kernel columns (the unrolled ones)
override KH: i32 = 3;      // kernel rows

{% include "border.wgsl" %}

@compute @workgroup_size({$ wg_x $}, {$ wg_y $})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x = i32(gid.x);
    let y = i32(gid.y) + params.group_y0 * {$ wg_y $};
    if (x >= params.size.x || y >= params.size.y) {
        return;
    }
    // Correlation anchored at (rows // 2, cols // 2), as in scipy.ndimage.correlate.
    let x0 = x - KW / 2;
    let y0 = y - KH / 2;
    // The border mode maps each column and each row once, not once per tap. One path for all
    // invocations: lavapipe runs invocations as SIMD lanes and executes both sides of a branch
    // they take apart, so an interior copy without the mapping cost more than it saved.
{% if kw <= unroll_max %}
{% for kx in range(kw) %}
    let sx{$ kx $} = border_index(x0 + {$ kx $}, params.size.x);
{% endfor %}
    var acc = vec4<f32>(0.0);
    for (var ky = 0; ky < KH; ky++) {
        let w = ky * KW;
        let sy = border_index(y0 + ky, params.size.y);
{% for kx in range(kw) %}
{% if skip_zero %}
        {
            let k = weights[w + {$ kx $}];
            if (k != 0.0) {
                acc += k * load_mapped(sx{$ kx $}, sy);
            }
        }
{% else %}
        acc += weights[w + {$ kx $}] * load_mapped(sx{$ kx $}, sy);
{% endif %}
{% endfor %}
    }
{% else %}
    // A kernel wider than unroll_max columns loops over them, unroll_max at a time: unrolled
    // whole, its code (and the compile: minutes on lavapipe for 513 columns) grows with the
    // width. Chunks, not single columns: lavapipe stops a loop after 65535 iterations, which a
    // 513×128 kernel's inner loop would pass.
    var acc = vec4<f32>(0.0);
    for (var ky = 0; ky < KH; ky++) {
        let w = ky * KW;
        let sy = border_index(y0 + ky, params.size.y);
        for (var c = 0; c < KW; c += {$ unroll_max $}) {
{% for kx in range(unroll_max) %}
            if (c + {$ kx $} < KW) {
                let k = weights[w + c + {$ kx $}];
{% if skip_zero %}
                if (k != 0.0) {
                    acc += k * load_mapped(border_index(x0 + c + {$ kx $}, params.size.x), sy);
                }
{% else %}
                acc += k * load_mapped(border_index(x0 + c + {$ kx $}, params.size.x), sy);
{% endif %}
            }
{% endfor %}
        }
    }
{% endif %}
    textureStore(dst, vec2<i32>(x, y), acc);
}
