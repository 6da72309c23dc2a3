// The uniform parameters every pass of the fft strategy reads (blurapp.gpu.fft packs them):
// which overlap-save blocks this batch holds and where they sit in the image. border.wgsl reads
// `size` and `constant` by those names.

struct Params {
    size: vec2<i32>,    // image width, height
    tile: vec2<i32>,    // valid outputs per block: columns, rows (block side - kernel side + 1)
    anchor: vec2<i32>,  // the kernel's anchor: column (cols // 2), row (rows // 2)
    blocks_x: i32,      // blocks per block row, across the image
    first_block: i32,   // the image-wide index of this batch's first block (row-major)
    blocks: i32,        // blocks in this batch
    channels: i32,      // channels that carry data (1..4)
    constant: f32,      // border value for BorderMode.CONSTANT
    pad: i32,
}

@group(0) @binding(3) var<uniform> params: Params;

// Real signal ri of a batch is channel ri % channels of block ri / channels; complex item q
// carries real signals 2q (real part) and 2q + 1 (imaginary part). A real kernel filters both
// halves independently, so two real transforms cost one complex one.

// The image-wide (x, y) of element (0, 0) of batch block lb's output tile.
fn block_origin(lb: i32) -> vec2<i32> {
    let g = params.first_block + lb;
    return vec2<i32>((g % params.blocks_x) * params.tile.x, (g / params.blocks_x) * params.tile.y);
}
