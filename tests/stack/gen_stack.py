#!/usr/bin/env python3
"""gen_stack.py - a GPT-2-style stack of transformer layers as one .fg graph,
for the tests of kernel deduplication (tests/run-stack.sh): every layer is
the same code on its own weights, so the compiled .cu should grow with the
model's variety, not its depth.

    gen_stack.py LAYERS [-o OUT]      write the stack (stdout by default)
    gen_stack.py --test-dims          print the small sizes tests run it at

Each layer, pre-norm as GPT-2 (hidden H = 768 in 12 heads of 64, MLP width
F, sequence S; both symbolic, `# test-dims:` shrinks them):

    n1 = layernorm(x)                q, k, v = heads of n1 Wqkv + bqkv
    p  = softmax(mask(q k^T / 8))    c = p v, heads merged
    a  = x + c Wo + bo
    n2 = layernorm(a)                x' = a + gelu_tanh(n2 W1 + b1) W2 + b2

The mask is an input (true where query i may see key j); masked scores get
-1e4, so that a row the mask empties stays finite.  Python 3 standard
library only; the same arguments give the same bytes.
"""
import argparse
import sys

H, HEADS, HD = 768, 12, 64
TEST_DIMS = "-D S=16 -D F=96"


def layer(i, x):
    """The statements of layer i reading x; returns them and its output."""
    p = f"l{i}_"
    s = [
        f"  # layer {i}",
        f"  {p}n1 = layernorm({x}, {p}ln1_g, {p}ln1_b)",
        f"  {p}qkv = matmul({p}n1, {p}wqkv) + {p}bqkv",
    ]
    for j, name in enumerate("qkv"):
        s.append(f"  {p}{name} = transpose(reshape(slice({p}qkv, axis=1, start={j * H}, end={(j + 1) * H}), "
                 f"shape=[-1, {HEADS}, {HD}]), perm=[1, 0, 2])")
    s += [
        f"  {p}s = matmul({p}q, transpose({p}k)) * {1 / HD ** 0.5}",
        f"  {p}p = softmax(where(mask, {p}s, -1e4))",
        f"  {p}c = reshape(transpose(matmul({p}p, {p}v), perm=[1, 0, 2]), shape=[-1, {H}])",
        f"  {p}a = matmul({p}c, {p}wo) + {p}bo + {x}",
        f"  {p}n2 = layernorm({p}a, {p}ln2_g, {p}ln2_b)",
        f"  {p}y = matmul(gelu_tanh(matmul({p}n2, {p}w1) + {p}b1), {p}w2) + {p}b2 + {p}a",
    ]
    return s, f"{p}y"


def params(i):
    p = f"l{i}_"
    f = "F=3072" if i == 0 else "F"     # the default at its first use
    return [
        f"  param {p}ln1_g : bf16[H]", f"  param {p}ln1_b : bf16[H]",
        f"  param {p}wqkv  : bf16[H, {3 * H}]", f"  param {p}bqkv  : bf16[{3 * H}]",
        f"  param {p}wo    : bf16[H, H]", f"  param {p}bo    : bf16[H]",
        f"  param {p}ln2_g : bf16[H]", f"  param {p}ln2_b : bf16[H]",
        f"  param {p}w1    : bf16[H, {f}]", f"  param {p}b1    : bf16[F]",
        f"  param {p}w2    : bf16[F, H]", f"  param {p}b2    : bf16[H]",
    ]


def stack(layers):
    out = [
        f"# stack{layers} - {layers} GPT-2-style transformer layer{'s' if layers > 1 else ''}, written by "
        f"tests/stack/gen_stack.py {layers}",
        f"# test-dims: {TEST_DIMS}",
        f"graph stack{layers} {{",
        f"  input x    : bf16[S=1024, H={H}]",
        "  input mask : bool[S, S]",
    ]
    for i in range(layers):
        out += params(i)
    x = "x"
    for i in range(layers):
        s, x = layer(i, x)
        out += s
    out += [f"  output {x}", "}"]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("layers", type=int, nargs="?")
    ap.add_argument("-o", "--out")
    ap.add_argument("--test-dims", action="store_true")
    a = ap.parse_args()
    if a.test_dims:
        print(TEST_DIMS)
        return
    if a.layers is None or a.layers < 1:
        ap.error("LAYERS must be at least 1")
    text = stack(a.layers)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
