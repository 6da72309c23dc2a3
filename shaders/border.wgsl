// Border addressing shared by every filter shader (included by the strategy shaders).
//
// The including shader includes bindings.wgsl first: `src`, and `params` (whose `size` is src's
// width and height and whose `constant` is the border value).

// BorderMode value from blurapp.core.borders: 0 clamp, 1 constant, 2 reflect, 3 mirror, 4 wrap.
override BORDER_MODE: i32 = 0;

// i mod n in [0, n) also for negative i, by a remainder of non-negative operands only (WGSL's
// % keeps the sign of i; GLSL's is undefined for negative operands, and wgpu's OpenGL backend
// on llvmpipe gave wrong reflect, mirror and wrap pixels with it).
fn positive_mod(i: i32, n: i32) -> i32 {
    let m = i32(u32(abs(i)) % u32(n));
    return select(m, select(n - m, 0, m == 0), i < 0);
}

// The index in [0, n) that offset i reads, or -1 for "outside: read the constant".
// Reflections repeat, so kernels larger than the image read valid pixels too.
fn border_index(i: i32, n: i32) -> i32 {
    if (i >= 0 && i < n) {
        return i;
    }
    if (BORDER_MODE == 0) {
        return clamp(i, 0, n - 1);
    }
    if (BORDER_MODE == 1) {
        return -1;
    }
    if (BORDER_MODE == 2) {
        // dcba|abcd|dcba: period 2n, the edge pixel repeated.
        let m = positive_mod(i, 2 * n);
        return select(m, 2 * n - 1 - m, m >= n);
    }
    if (BORDER_MODE == 3) {
        // dcb|abcd|cba: period 2n-2, the edge pixel not repeated; one pixel mirrors onto itself.
        if (n == 1) {
            return 0;
        }
        let period = 2 * n - 2;
        let m = positive_mod(i, period);
        return select(m, period - m, m >= n);
    }
    return positive_mod(i, n);
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
