// Halo-tiled 2-D correlation: a workgroup computes a TILE×TILE block of outputs from its
// (TILE+KW-1)×(TILE+KH-1) input halo, loaded once into workgroup memory by all invocations.
//
// Each invocation computes a BLOCK_H×BLOCK_W block of outputs (not one), so a 32×32 tile needs
// 64 invocations instead of 1024: the halo loads are shared by fewer, longer-lived threads, the
// one barrier synchronises fewer of them, and each halo row an invocation reads from workgroup
// memory (BLOCK_W+KW-1 texels, held in registers) feeds BLOCK_H×BLOCK_W×KW multiply-adds.
// The kernel's columns are unrolled; its rows are a loop over the halo rows an invocation
// covers (weights padded with BLOCK_H-1 zero rows above and below, which keeps the indexing
// simple); an output row skips the halo rows its kernel does not reach, and every zero tap is
// skipped, so a NaN or Inf spreads exactly as far as the kernel's non-zero taps.
//
// Layout "vec4" keeps RGBA texels in the halo (one load, one barrier). Layout "scalar" keeps one
// f32 channel at a time, a quarter of the memory, so that big kernels still fit: the workgroup
// then loops over the channels, reloading the halo for each.

// `skip_zero`: the kernel has zero weights (a branch per tap, measured 1.5 × slower on
// lavapipe for a 17×17 Gaussian, so only then).
{% set skip_zero = skip_zero | default(true) %}

{% include "bindings.wgsl" %}
// (BLOCK_H - 1) zero rows, the KH × KW kernel row-major, (BLOCK_H - 1) zero rows.
@group(0) @binding(2) var<storage, read> weights: array<f32>;

{% include "border.wgsl" %}

const TILE: i32 = {$ tile $};
const KW: i32 = {$ kw $};
const KH: i32 = {$ kh $};
const BLOCK_W: i32 = {$ block_w $};
const BLOCK_H: i32 = {$ block_h $};
const GROUP_W: i32 = TILE / BLOCK_W;  // invocations along x
const GROUP_H: i32 = TILE / BLOCK_H;  // invocations along y
const HALO_W: i32 = TILE + KW - 1;
const HALO_H: i32 = TILE + KH - 1;
{% set texel = "vec4<f32>" if layout == "vec4" else "f32" %}
{% set pick = "" if layout == "vec4" else "[c]" %}
var<workgroup> halo: array<{$ texel $}, {$ (tile + kw - 1) * (tile + kh - 1) $}>;

@compute @workgroup_size({$ tile // block_w $}, {$ tile // block_h $})
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let lx = i32(lid.x);
    let ly = i32(lid.y);
    // Top-left input pixel of the halo: the tile origin moved up-left by the anchor.
    let ox = i32(wid.x) * TILE - KW / 2;
    let oy = (i32(wid.y) + params.group_y0) * TILE - KH / 2;
    // Top-left output of this invocation's block, and where its window starts in the halo.
    let x0 = i32(wid.x) * TILE + lx * BLOCK_W;
    let y0 = (i32(wid.y) + params.group_y0) * TILE + ly * BLOCK_H;
    let base = ly * BLOCK_H * HALO_W + lx * BLOCK_W;
{% for o in range(block_h) %}{% for j in range(block_w) %}
    var a{$ o $}_{$ j $} = vec4<f32>(0.0);
{% endfor %}{% endfor %}
{% if layout == "scalar" %}
    for (var c = 0; c < params.channels; c++) {
{% endif %}
    // Cooperative load, rows strided by the workgroup's height and columns by its width (no
    // division per texel), each row's index mapped by the border mode once. One path for all
    // workgroups: an interior copy without the mapping measured no faster on lavapipe.
    for (var r = ly; r < HALO_H; r += GROUP_H) {
        let sy = border_index(oy + r, params.size.y);
        for (var i = lx; i < HALO_W; i += GROUP_W) {
            halo[r * HALO_W + i] = load_mapped(border_index(ox + i, params.size.x), sy){$ pick $};
        }
    }
    // Invocations whose block lies outside the image still loaded their share and reach the
    // barrier; they only skip the stores.
    workgroupBarrier();
{% if layout == "scalar" %}
{% for o in range(block_h) %}{% for j in range(block_w) %}
    var s{$ o $}_{$ j $} = 0.0;
{% endfor %}{% endfor %}
{% set acc = "s" %}
{% else %}
{% set acc = "a" %}
{% endif %}
    for (var r = 0; r < BLOCK_H + KH - 1; r++) {
        let row = base + r * HALO_W;
{% for i in range(block_w + kw - 1) %}
        let t{$ i $} = halo[row + {$ i $}];
{% endfor %}
{% for o in range(block_h) %}
        // Output row {$ o $} takes kernel row r - {$ o $}, when there is one: the zero rows of
        // padding, like every zero tap (`skip_zero`), are skipped rather than multiplied, so
        // that a NaN or Inf under them does not spread (DESIGN.md "Numbers"). r and the weights
        // are the same in every invocation: the branches are uniform.
        if (r >= {$ o $} && r < {$ o $} + KH) {
            let w{$ o $} = (r + {$ block_h - 1 - o $}) * KW;
{% for kx in range(kw) %}
            {
                let k = weights[w{$ o $} + {$ kx $}];
{% if skip_zero %}
                if (k != 0.0) {
{% endif %}
{% for j in range(block_w) %}
                    {$ acc $}{$ o $}_{$ j $} += k * t{$ j + kx $};
{% endfor %}
{% if skip_zero %}
                }
{% endif %}
            }
{% endfor %}
        }
{% endfor %}
    }
{% if layout == "scalar" %}
{% for o in range(block_h) %}{% for j in range(block_w) %}
    a{$ o $}_{$ j $}[c] = s{$ o $}_{$ j $};
{% endfor %}{% endfor %}
    // The next channel overwrites the halo: everyone must be done reading this one.
    workgroupBarrier();
    }
{% endif %}
{% for o in range(block_h) %}{% for j in range(block_w) %}
    if (x0 + {$ j $} < params.size.x && y0 + {$ o $} < params.size.y) {
        textureStore(dst, vec2<i32>(x0 + {$ j $}, y0 + {$ o $}), a{$ o $}_{$ j $});
    }
{% endfor %}{% endfor %}
}
