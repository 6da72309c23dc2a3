// Border addressing of the n-D passes over storage buffers (nd_line, nd_taps): the index an
// out-of-range offset reads along one axis, with the mode as an argument, since nd_taps has one
// per axis. border.wgsl (the texture strategies' addressing) includes it with its pipeline's
// mode.

// i mod n in [0, n) also for negative i, by a remainder of non-negative operands only (WGSL's
// % keeps the sign of i; GLSL's is undefined for negative operands, and wgpu's OpenGL backend
// on llvmpipe gave wrong reflect, mirror and wrap indices with it).
fn nd_positive_mod(i: i32, n: i32) -> i32 {
    let m = i32(u32(abs(i)) % u32(n));
    return select(m, select(n - m, 0, m == 0), i < 0);
}

// The index in [0, n) that offset i reads under `mode` (blurapp.core.borders.BorderMode: 0
// clamp, 1 constant, 2 reflect, 3 mirror, 4 wrap), or -1 for "outside: read the constant".
// Reflections repeat, so kernels longer than the axis read valid elements too.
fn nd_border_index(i: i32, n: i32, mode: i32) -> i32 {
    if (i >= 0 && i < n) {
        return i;
    }
    if (mode == 0) {
        return clamp(i, 0, n - 1);
    }
    if (mode == 1) {
        return -1;
    }
    if (mode == 2) {
        // dcba|abcd|dcba: period 2n, the edge element repeated.
        let m = nd_positive_mod(i, 2 * n);
        return select(m, 2 * n - 1 - m, m >= n);
    }
    if (mode == 3) {
        // dcb|abcd|cba: period 2n-2, the edge element not repeated; one element mirrors onto
        // itself.
        if (n == 1) {
            return 0;
        }
        let period = 2 * n - 2;
        let m = nd_positive_mod(i, period);
        return select(m, period - m, m >= n);
    }
    return nd_positive_mod(i, n);
}

// nd_border_index for offsets at most one reflection away, i in [-(n - 1), 2n - 2] (the
// caller's windows reach less than the axis's length): no division and no branch, only
// selects, which matters on SIMD lanes (lavapipe runs every branch that any lane takes).
fn nd_border_index_near(i: i32, n: i32, mode: i32) -> i32 {
    let below = i < 0;
    let above = i >= n;
    if (mode == 0) {
        return clamp(i, 0, n - 1);
    }
    if (mode == 1) {
        return select(i, -1, below || above);
    }
    if (mode == 2) {
        return select(select(i, -1 - i, below), 2 * n - 1 - i, above);
    }
    if (mode == 3) {
        return select(select(select(i, -i, below), 2 * n - 2 - i, above), 0, n == 1);
    }
    return select(select(i, i + n, below), i - n, above);
}
