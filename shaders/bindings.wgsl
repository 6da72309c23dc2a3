// The bind group every filter pass shares (blurapp.gpu.engine builds its one layout per output
// format to match): the source texture, the destination, the pass's weights (binding 2, which
// each shader declares with what its array holds) and the uniform parameters.

struct Params {
    size: vec2<i32>,  // width, height of src (and of dst, except for the transpose's)
    constant: f32,    // border value for BorderMode.CONSTANT (see each pass for what it holds)
    channels: i32,    // channels that carry data (1..4)
    group_y0: i32,    // the first workgroup row of this dispatch (a long pass runs in bands of
                      // rows, one submission each, so that it can be stopped between them)
}

@group(0) @binding(0) var src: texture_2d<f32>;
// dst_format: rgba32float, or rgba8unorm for the last pass when the caller wants 8-bit output
// (the store rounds to nearest and clamps to [0, 1]); intermediates always stay rgba32float.
@group(0) @binding(1) var dst: texture_storage_2d<{$ dst_format | default("rgba32float") $}, write>;
@group(0) @binding(3) var<uniform> params: Params;
