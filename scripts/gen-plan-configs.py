#!/usr/bin/env python3
"""Writes examples/plans/configs/<kernel>.yaml: random valid CPU plans for the
example kernels as examples/plans/tests/plans.rs compiles them (the property
tests of the low-level plan).

Each kernel gets ENTRIES entries, each a random plan that `CpuPlan::validate`
accepts (lists of one entry per md_hom dimension, tiles >= 1, `order` a
permutation, only the innermost PW dimension with reg > 1 among the PW
dimensions, at most 512 register-tile points per output, `pack` per input
access either [] or a permutation of the dimensions it uses, `stream` in
half of the plans, `exact` (a body for exactly the pinned sizes) in half of
them), pinned with
`sizes:` to a different random size vector, so that the run-time dispatch
(nearest tuned sizes by log distance) spreads the tests' sizes over all plans.
Tile sizes are deliberately odd and rarely divide the sizes; `l1` and `l2` may
be smaller than `reg` and `l2` smaller than `l1` (validate allows it).

Deterministic: run it again and the files come out the same.

    python3 scripts/gen-plan-configs.py
"""

import os
import random

ENTRIES = 8
SPECIAL = [1, 2, 3, 5, 7, 13, 31, 97]
TILES = [1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 32, 48, 64, 100, 128, 256, 1000]
REG_KEPT = [1, 1, 1, 2, 3, 4, 5, 8, 16, 32, 64]
REG_PW = [1, 2, 3, 4, 8, 16, 32, 64]
MAX_REGISTER_TILE = 512

# name, dims (size parameter, kind, max size), output accesses, max points
# (the product of the pinned sizes: the interpreter must stay fast).
# ACCESSES: per kernel, the dimensions each input access uses (in the order
# of the scalar function's parameters), for random packed layouts.
KERNELS = [
    ("dot", [("N", "PW", 100000)], 1, 100000),
    ("matvec", [("I", "CC", 300), ("K", "PW", 1000)], 1, 30000),
    ("matmul", [("I", "CC", 97), ("J", "CC", 97), ("K", "PW", 97)], 1, 30000),
    ("matmul_t", [("I", "CC", 97), ("J", "CC", 97), ("K", "PW", 97)], 1, 30000),
    ("bmatmul", [("NB", "CC", 7), ("I", "CC", 31), ("J", "CC", 97), ("K", "PW", 61)], 1, 30000),
    ("conv2d", [("P", "CC", 40), ("Q", "CC", 40), ("R", "PW", 7), ("S", "PW", 7)], 1, 30000),
    ("mcc", [("N", "CC", 3), ("P", "CC", 7), ("Q", "CC", 7), ("K", "CC", 13),
                  ("R", "PW", 5), ("S", "PW", 5), ("C", "PW", 5)], 1, 20000),
    ("ccsdt", [("NA", "CC", 5), ("NB", "CC", 5), ("NC", "CC", 7), ("ND", "CC", 5),
                    ("NE", "CC", 5), ("NF", "CC", 7), ("NG", "PW", 13)], 1, 20000),
    ("jacobi1d", [("N", "CC", 100000)], 1, 100000),
    ("jacobi3d", [("N", "CC", 31), ("M", "CC", 31), ("L", "CC", 31)], 1, 30000),
    ("prl", [("I", "CC", 97), ("J", "PW", 300)], 1, 20000),
    ("histo", [("E", "PW", 1000), ("B", "CC", 97)], 1, 30000),
    ("map", [("N", "CC", 100000)], 1, 100000),
    ("reduce", [("N", "PW", 100000)], 1, 100000),
    ("reduce2", [("N", "PW", 100000)], 2, 100000),
    ("scan", [("N", "PS", 1000)], 1, 1000),
    ("mbbs", [("I", "PS", 97), ("J", "PW", 200)], 1, 10000),
    ("mandelbrot", [("H", "CC", 61), ("W", "CC", 97)], 1, 6000),
    ("matmul_bf16", [("I", "CC", 97), ("J", "CC", 97), ("K", "PW", 97)], 1, 30000),
    # The product stage of matmul_bias_relu, whose epilogue `cpu` fuses
    # into its stores (and `cpu_unfused` runs after it).
    ("matmul_bias_relu_product", [("I", "CC", 97), ("J", "CC", 97), ("K", "PW", 97)], 1, 30000),
]


ACCESSES = {
    "dot": [[0], [0]],
    "matvec": [[0, 1], [1]],
    "matmul": [[0, 2], [1, 2]],
    "matmul_t": [[0, 2], [1, 2]],
    "bmatmul": [[0, 1, 3], [0, 2, 3]],
    "conv2d": [[0, 1, 2, 3], [2, 3]],
    "mcc": [[0, 1, 2, 4, 5, 6], [3, 4, 5, 6]],
    "ccsdt": [[0, 1, 3, 6], [2, 4, 5, 6]],
    "jacobi1d": [[0]] * 3,
    "jacobi3d": [[0, 1, 2]] * 7,
    "prl": [[0]] * 3 + [[1]] * 3,
    "histo": [[0], [1]],
    "map": [[0], [0]],
    "reduce": [[0]],
    "reduce2": [[0]],
    "scan": [[0]],
    "mbbs": [[0, 1]],
    "mandelbrot": [],
    "matmul_bf16": [[0, 2], [1, 2]],
    "matmul_bias_relu_product": [[0, 2], [1, 2]],
}


def pack(rng, accesses):
    """Per input access: [] (read in place) or a random packed layout."""
    out = []
    for used in accesses:
        if rng.random() < 0.4:
            out.append([])
        else:
            layout = list(used)
            rng.shuffle(layout)
            out.append(layout)
    return out


def size(rng, hi):
    if rng.random() < 0.4:
        opts = [s for s in SPECIAL if s <= hi]
        return rng.choice(opts)
    # small or medium, log-uniform, biased up so that full tiles occur
    return min(hi, max(1, int(round(hi ** (0.3 + 0.7 * rng.random())))))


def sizes(rng, dims, cap, taken):
    while True:
        s = [size(rng, hi) for (_, _, hi) in dims]
        p = 1
        for x in s:
            p *= x
        if p <= cap and tuple(s) not in taken:
            taken.add(tuple(s))
            return s


def plan(rng, dims, outs):
    d = len(dims)
    kinds = [k for (_, k, _) in dims]
    pws = [x for x in range(d) if kinds[x] == "PW"]
    inner_pw = pws[-1] if pws else None
    reg = []
    for x in range(d):
        if kinds[x] != "PW":
            reg.append(rng.choice(REG_KEPT))
        elif x == inner_pw:
            reg.append(rng.choice(REG_PW))
        else:
            reg.append(1)
    while prod(reg) * outs > MAX_REGISTER_TILE:
        x = rng.choice([y for y in range(d) if reg[y] > 1])
        reg[x] = max(1, reg[x] // rng.choice([2, 3, 4]))
    l1 = []
    for x in range(d):
        r = rng.random()
        if r < 0.5:
            l1.append(reg[x] * rng.choice([1, 1, 2, 3, 5]))
        elif r < 0.6:
            l1.append(reg[x] + rng.choice([1, 2, 3, 7]))
        else:
            l1.append(rng.choice(TILES))
    l2 = []
    for x in range(d):
        r = rng.random()
        if r < 0.55:
            l2.append(l1[x] * rng.choice([1, 2, 3, 4, 7]))
        elif r < 0.7:
            l2.append(l1[x] + rng.choice([1, 3, 5, 17]))
        else:
            l2.append(rng.choice(TILES))
    if rng.random() < 0.5:
        cor = [0] * d
    else:
        cor = [rng.choice([0, 0, 1, 2, 3, 4, 7]) for _ in range(d)]
    order = list(range(d))
    rng.shuffle(order)
    return {"cor": cor, "l2": l2, "l1": l1, "reg": reg, "order": order}


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def flow(xs):
    return "[" + ", ".join(str(x) for x in xs) + "]"


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out_dir = os.path.join(root, "examples", "plans", "configs")
    os.makedirs(out_dir, exist_ok=True)
    for name, dims, outs, cap in KERNELS:
        # The seeds name the kernels as the tests once declared them again
        # (`plan_<name>`), so that the plans stayed the ones tested before.
        seed = "plan_" + name
        rng = random.Random("mdh-plans-1:" + seed)
        # A stream of its own, so that adding packing left the other fields
        # of the plans as they were.
        pack_rng = random.Random("mdh-plans-pack-1:" + seed)
        stream_rng = random.Random("mdh-plans-stream-1:" + seed)
        exact_rng = random.Random("mdh-plans-exact-1:" + seed)
        taken = set()
        lines = [
            "# Generated by scripts/gen-plan-configs.py: do not edit by hand, run the",
            "# script. Random valid CPU plans, each pinned to random sizes, for the",
            "# property tests in examples/plans/tests/plans.rs (dims: "
            + ", ".join(f"{n} {k}" for (n, k, _) in dims) + ").",
            f"kernel: {name}",
            "entries:",
        ]
        for _ in range(ENTRIES):
            s = sizes(rng, dims, cap, taken)
            p = plan(rng, dims, outs)
            p["pack"] = pack(pack_rng, ACCESSES[name])
            lines.append("  - backend: cpu")
            lines.append('    device: "*"')
            lines.append("    sizes: {" + ", ".join(f"{n}: {v}" for (n, _, _), v in zip(dims, s)) + "}")
            lines.append("    cpu:")
            for f in ["cor", "l2", "l1", "reg", "order"]:
                lines.append(f"      {f}: {flow(p[f])}")
            lines.append("      pack: [" + ", ".join(flow(x) for x in p["pack"]) + "]")
            if stream_rng.random() < 0.5:
                lines.append("      stream: true")
            if exact_rng.random() < 0.5:
                lines.append("      exact: true")
        with open(os.path.join(out_dir, name + ".yaml"), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
