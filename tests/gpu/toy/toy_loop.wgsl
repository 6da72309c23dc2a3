// The toy strategy's shader: every tap a loop iteration (tests/gpu/toy/toy_loop.py).

{% include "bindings.wgsl" %}
@group(0) @binding(2) var<storage, read> weights: array<f32>;  // rows × cols, row-major

override KH: i32 = 1;
override KW: i32 = 1;

{% include "border.wgsl" %}

@compute @workgroup_size(8, 8)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x = i32(gid.x);
    let y = i32(gid.y);
    if (x >= params.size.x || y >= params.size.y) {
        return;
    }
    var acc = vec4<f32>(0.0);
    for (var ky = 0; ky < KH; ky++) {
        let sy = border_index(y - KH / 2 + ky, params.size.y);
        for (var kx = 0; kx < KW; kx++) {
            let k = weights[ky * KW + kx];
            if (k != 0.0) {
                acc += k * load_mapped(border_index(x - KW / 2 + kx, params.size.x), sy);
            }
        }
    }
    textureStore(dst, vec2<i32>(x, y), acc);
}
