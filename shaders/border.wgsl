// Border addressing shared by every filter shader (included by the strategy shaders).
//
// The including shader includes bindings.wgsl first: `src`, and `params` (whose `size` is src's
// width and height and whose `constant` is the border value).

// BorderMode value from blurapp.core.borders: 0 clamp, 1 constant, 2 reflect, 3 mirror, 4 wrap.
override BORDER_MODE: i32 = 0;

{% include "nd_border.wgsl" %}

// The index in [0, n) that offset i reads, or -1 for "outside: read the constant": the n-D
// passes' mapping with this pipeline's mode (reflections repeat, so kernels larger than the
// image read valid pixels too).
fn border_index(i: i32, n: i32) -> i32 {
    return nd_border_index(i, n, BORDER_MODE);
}

// The src texel at indices (sx, sy) from border_index: the constant where either is -1.
// Shaders that reuse an index for many loads (a kernel row's columns) map it once.
fn load_mapped(sx: i32, sy: i32) -> vec4<f32> {
    // BORDER_MODE is a pipeline constant: the test disappears from the other modes' code.
    if (BORDER_MODE == 1 && (sx < 0 || sy < 0)) {
        return vec4<f32>(params.constant);
    }
    return textureLoad(src, vec2<i32>(sx, sy), 0);
}

// The src texel that offset (x, y) reads under the border mode.
fn load_src(x: i32, y: i32) -> vec4<f32> {
    return load_mapped(border_index(x, params.size.x), border_index(y, params.size.y));
}
