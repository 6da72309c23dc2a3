"""Time the fft strategy's passes per block side: the planner's cost of fft per pixel.

Every block side is forced in turn on the same image with a 1×1 kernel (no overlap: each
block element is one output), interleaved over rounds, best round kept. The figure is
nanoseconds per block element and channel; a kernel of side K costs that times
(N / (N - K + 1))² per output pixel and channel.

Usage::

    .venv/bin/python benchmarks/fft_blocks.py --size 2048x2048 --channels 3 --rounds 4
"""

from __future__ import annotations

import argparse
import math

from blurapp.bench import make_image, parse_size


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", default="2048x2048", help="image WxH")
    p.add_argument("--channels", type=int, default=3)
    p.add_argument("--blocks", default="64,128,256,512,1024,2048")
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args(argv)

    from blurapp.process import prepare_process

    prepare_process()
    from blurapp.core.kernel import Kernel
    from blurapp.gpu import fft
    from blurapp.gpu.engine import get_filter

    width, height = parse_size(args.size)
    x = make_image(width, height, args.channels, "rgba32f")
    k = Kernel.parse("identity")
    original = fft.plan_blocks

    def forced(n: int):
        def plan(kernel_shape, image_shape, channels, limits):
            grid = (math.ceil(image_shape[0] / n), math.ceil(image_shape[1] / n))
            batch = max(1, min(grid[0] * grid[1], (64 << 20) // (n * n * 4 * channels)))
            return fft.BlockPlan((n, n), (n, n), grid, channels, batch)

        return plan

    sides = [int(v) for v in args.blocks.split(",")]
    best: dict[int, list[float]] = {}
    names: list[str] = []
    try:
        for _ in range(args.rounds):
            for n in sides:
                fft.plan_blocks = forced(n)
                _, timing = get_filter().run(x, k, "clamp", "fft")
                ms = [q.ms for q in timing.passes]
                names = [q.name for q in timing.passes]
                if n not in best or sum(ms) < sum(best[n]):
                    best[n] = ms
    finally:
        fft.plan_blocks = original
    print(f"{width}×{height}×{args.channels} float32, 1×1 kernel, best of {args.rounds} rounds")
    print("| block | passes ms | ns per block element and channel | " + " | ".join(names) + " |")
    print("|---:|---:|---:|" + "---:|" * len(names))
    for n in sides:
        blocks = math.ceil(height / n) * math.ceil(width / n)
        elements = blocks * n * n * args.channels
        total = sum(best[n])
        per = " | ".join(f"{v:.1f}" for v in best[n])
        print(f"| {n} | {total:.1f} | {total * 1e6 / elements:.2f} | {per} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
