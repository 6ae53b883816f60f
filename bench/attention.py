#!/usr/bin/env python3
"""
attention.py - fgc's attention kernel against PyTorch's SDPA (cuDNN and
flash backends) and torch.compile of the same primitive graph, in one
process, timed by peers.py's harness (cold and sustained, SM clock and
board power read).

    python3 bench/attention.py [--fgc build/fgc] [--out out/attention] [--work DIR]
                               [--seqs 1024,2048,4096,8192,16384] [--dims 64,128]
                               [--bh 64] [--mods] [--runs N] [--rounds R] ...
    python3 bench/attention.py --decode [--decode-bh 8,16,32,64]
                               [--decode-keys 4096,16384,32768,131072] ...
    python3 bench/attention.py --all      issue 16's whole table, one process
    python3 bench/attention.py --all --build-only   its libraries only (no GPU)

Each case is a graph written here from primitives, bf16 [BH, S, D]:
    o = matmul(softmax(score(matmul(q, transpose(k)) * D^-1/2)), v)
with score the identity, a causal mask (where(iota(1) <= iota(0), s,
-inf)), and with --mods at S = 4096, D = 128: an additive bias [S, S], a
softcap 30 tanh(s / 30), a sliding window of 1024 keys.  fgc runs it as
compiled by `fgc compile --lib` (python/fgc); SDPA gets the same tensors
(is_causal for the causal mask, attn_mask for the bias and the window;
flash takes no mask tensor, so it has no row there); torch.compile gets
`fgc emit-torch`'s module (default mode: Inductor's attention pattern
matcher rewrites the plain form into SDPA).  Each result is compared on
its first two matrices with SDPA's math backend in f32: RMSE no more than
three times cuDNN's (or flash's) own.  TFLOP/s count 4 BH S^2 D, halved
for a causal mask.  Writes OUT/attention.md and OUT/attention.json.

--decode instead times decode steps, D = 128: one query row per matrix
against Sk keys, q [BH, 1, D], k and v [BH, Sk, D], for each BH and Sk
given; the figure is the rate at which K and V are read (2 BH Sk D
bytes of bf16 a call; q and o are 1/Sk of that) as GB/s and as a share
of the device-to-device copy bandwidth measured in the same process
(peers.copy_bandwidth, bytes read plus written).  Writes
OUT/decode.md and OUT/decode.json.

Decode steps and the prefill rows up to S = 2048 are also timed as
CUDA-graph replays (the replayed regime): each peer's call captured
--replay-calls times in a graph of its own, the graphs replayed back to
back as the sustained regime times calls, the time per call; a call of
tens of microseconds is otherwise as much the host's call as the GPU's
work, for every peer.

--all runs the prefill rows, the score-mod rows and the decode steps in
one process and writes them all to OUT/attention.md and
OUT/attention.json (docs/performance.md's table).  Each row goes to the
JSON as it comes; --resume keeps the rows already there (but failed ones)
and runs only the others, so that a table longer than one device call
takes the same command again.  Libraries are kept in --work and built
again only when fgc, the runtime or the graph changed (peers.compile_lib,
by content): --build-only builds them on a machine without a GPU, to be
carried to one.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import peers  # noqa: E402  (the harness: clocks, cold and sustained timing)

MODS = {
    "plain": "s",
    "causal": "where(iota(shape=[S, S], axis=1) <= iota(shape=[S, S], axis=0), s, -inf)",
    "bias": "s + bias",
    "softcap": "30.0 * tanh(s / 30.0)",
    "window": "where(abs(iota(shape=[S, S], axis=1) - iota(shape=[S, S], axis=0)) < 1024, s, -inf)",
}


def graph(bh, sq, sk, d, mod):
    """The case's .fg: S = Sq = Sk but in a decode step (mod "decode",
    no score op)."""
    if mod == "decode":
        return ("graph attention_decode {\n  input q : bf16[BH=%d, SQ=%d, D=%d]\n  input k : bf16[BH, SK=%d, D]\n"
                "  input v : bf16[BH, SK, D]\n  o = matmul(softmax(matmul(q, transpose(k)) * %.17g), v)\n"
                "  output o\n}\n" % (bh, sq, d, sk, d ** -0.5))
    extra = "  input bias : bf16[S, S]\n" if mod == "bias" else ""
    return ("graph attention_%s {\n  input q : bf16[BH=%d, S=%d, D=%d]\n  input k : bf16[BH, S, D]\n"
            "  input v : bf16[BH, S, D]\n%s  s = matmul(q, transpose(k)) * %.17g\n  x = %s\n"
            "  o = matmul(softmax(x), v)\n  output o\n}\n" % (mod, bh, sq, d, extra, d ** -0.5, MODS[mod]))


def case_name(case):
    bh, sq, sk, d, mod = case
    return "BH=%d Sk=%d" % (bh, sk) if mod == "decode" else "%s S=%d D=%d" % (mod, sq, d)


def sdpa_mask(mod, s, inputs):
    """SDPA's arguments for the score op: (attn_mask, is_causal)."""
    if mod == "bias":
        return inputs[3], False
    if mod == "window":
        i = torch.arange(s, device="cuda")
        return (i[None, :] - i[:, None]).abs() < 1024, False
    return None, mod == "causal"


def build(args, cases):
    """Per case: (fg path, lib path, None) or (fg path, None, fgc's error);
    a library built from the same bytes is kept (peers.compile_lib)."""
    import concurrent.futures

    def one(c):
        bh, sq, sk, d, mod = c
        stem = "attn_%s_bh%d_q%d_k%d_d%d" % (mod, bh, sq, sk, d)
        src = os.path.join(args.work, stem + ".fg")
        with open(src, "w") as f:
            f.write(graph(bh, sq, sk, d, mod))
        lib = peers.compile_lib(args.fgc, src, os.path.join(args.work, stem, "lib%s.so" % stem))
        return (src, None, str(lib)[-600:]) if isinstance(lib, Exception) else (src, lib, None)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        return dict(zip(cases, pool.map(one, cases)))


def rmse(a, b):
    return float(((a.float() - b.float()) ** 2).mean().sqrt())


def bench_case(args, case, built, clock, nvml):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    bh, s, sk, d, mod = case
    src, lib, err = built
    row = {"case": case_name(case), "bh": bh, "s": s, "sk": sk, "d": d, "mod": mod}
    flops = 4.0 * bh * s * sk * d / (2 if mod == "causal" else 1)
    kv_bytes = 2.0 * bh * sk * d * 2
    mpath = os.path.join(args.work, os.path.basename(src)[:-3] + ".py")
    subprocess.run([args.fgc, "emit-torch", src, "-o", mpath], check=True)
    mod_py = peers.load_module(mpath)
    inputs = list(mod_py.make_inputs(args.seed, "cuda").values())
    q, k, v = inputs[:3]
    mask, causal = sdpa_mask(mod, s, inputs)
    scale = d ** -0.5
    if mod == "softcap":
        fns = {}
    else:
        def sdpa(backend):
            def f():
                with sdpa_kernel(backend):
                    return F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=mask,
                                                          is_causal=causal, scale=scale)[0]
            return f
        fns = {"cudnn": sdpa(SDPBackend.CUDNN_ATTENTION)}
        if mask is None:
            fns["flash"] = sdpa(SDPBackend.FLASH_ATTENTION)
    if not args.no_compile:
        compiled = torch.compile(mod_py.forward)
        fns["compile"] = lambda: compiled(*inputs)["o"]
    if lib:
        import fgc
        model = fgc.load(lib)
        fns["fgc"] = lambda: model(*inputs)
    else:
        row["fgc_error"] = err
    # the reference: SDPA's math backend in f32 on the first two matrices
    n = min(2, bh)
    ref_mask = mask
    if mod == "softcap":
        sc = torch.matmul(q[:n].float(), k[:n].float().transpose(-1, -2)) * scale
        ref = torch.matmul(torch.softmax(30.0 * torch.tanh(sc / 30.0), -1), v[:n].float())
    else:
        with sdpa_kernel(SDPBackend.MATH):
            ref = F.scaled_dot_product_attention(q[:n].float()[None], k[:n].float()[None], v[:n].float()[None],
                                                 attn_mask=None if ref_mask is None else
                                                 (ref_mask.float() if ref_mask.dtype != torch.bool else ref_mask),
                                                 is_causal=causal, scale=scale)[0]
    errs = {}
    for name, fn in list(fns.items()):
        try:
            errs[name] = rmse(fn()[:n], ref)
        except Exception as e:  # a peer that cannot run this case drops out of the row
            row[name + "_error"] = peers.first_line(e)
            del fns[name]
    base = errs.get("cudnn", errs.get("flash", errs.get("compile")))
    row["rmse"] = errs
    row["agree"] = {k: (e <= 3 * base + 1e-6 if base is not None else None) for k, e in errs.items()}
    for fn in fns.values():
        for _ in range(args.warmup):
            fn()
    cold, cold_clock = peers.time_cold(clock, nvml, fns, args.runs, args.gap)
    sus, sus_clock = peers.time_sustained(clock, nvml, fns, args.rounds, args.sustain, cold)
    regimes = [("cold", cold, cold_clock), ("sustained", sus, sus_clock)]
    if mod == "decode" or s * sk <= REPLAY_MAX:
        regimes.append(("replayed",) + peers.time_replayed(clock, nvml, fns, row, args, cold))
    for regime, times, clocks in regimes:
        for name in times:
            row["%s_%s_ms" % (regime, name)] = times[name]
            row["%s_%s_tflops" % (regime, name)] = flops / times[name] / 1e9
            row["%s_%s_gbs" % (regime, name)] = kv_bytes / times[name] / 1e6
            row["%s_%s_mhz" % (regime, name)] = clocks[name]["mhz"]
            row["%s_%s_watts" % (regime, name)] = clocks[name]["watts"]
    return row


PEERS = ("fgc", "cudnn", "flash", "compile")
# Prefill rows of at most this many scores a matrix (S = 2048) are also
# replayed: their calls take 0.03-0.3 ms, where the host's share of a call
# (SDPA's eager call under sdpa_kernel costs 53-131 us, docs/performance.md
# v31) moves a ratio from run to run.  Larger rows are not: their calls
# dwarf it, and a causal torch.compile graph's private pool would hold its
# S x S scores (34 GB at 16k).
REPLAY_MAX = 2048 * 2048


def verdicts(row):
    """Each result's agreement with the f32 reference, as the RMSE gate
    saw it: "n/a" where no peer ran to set the bar (a softcap without
    torch.compile)."""
    return ", ".join("%s %s" % (k, "n/a" if v is None else "ok" if v else "FAIL")
                     for k, v in row.get("agree", {}).items())


def table(rows, regime):
    """The rows of one regime, all prefill or all decode, as a markdown
    table: each peer's TFLOP/s, or for decode rows the GB/s of K and V it
    read, with fgc's time and share of the copy bandwidth measured in the
    row's process; then fgc / cuDNN in time and a cycle (each rate over
    its median SM clock: under the power cap the one that spends more
    energy a cycle runs at the lower clock), and the clocks and watts."""
    dec = bool(rows) and rows[0]["mod"] == "decode"
    key, unit = ("gbs", "GB/s") if dec else ("tflops", "TFLOP/s")
    head = ("| case | " + " | ".join("%s %s" % (p, unit) for p in PEERS) +
            (" | fgc us | fgc % of copy" if dec else "") +
            " | fgc / cuDNN | a cycle | SM MHz fgc / cuDNN | W fgc / cuDNN | agree (RMSE vs f32) |")
    lines = [head, "|" + "---|" * (len(PEERS) + (8 if dec else 6))]
    for r in rows:
        cells = []
        for p in PEERS:
            v = r.get("%s_%s_%s" % (regime, p, key))
            cells.append("%.0f" % v if v else r.get("%s_%s_error" % (p, regime),
                                                      r.get(p + "_error", r.get("error", "-")))[:40])
        f, c = r.get("%s_fgc_ms" % regime), r.get("%s_cudnn_ms" % regime)
        if dec:
            g, copy = r.get("%s_fgc_gbs" % regime), r.get("copy_gbs")
            cells += ["%.1f" % (f * 1e3) if f else "-", "%.0f%%" % (100 * g / copy) if g and copy else "-"]
        ratio = "%.2fx" % (c / f) if f and c else "-"
        fm, cm = r.get("%s_fgc_mhz" % regime), r.get("%s_cudnn_mhz" % regime)
        cycle = "%.2fx" % (c * cm / (f * fm)) if f and c and fm and cm else "-"
        both = [" / ".join("%.0f" % r[k] if r.get(k) else "-" for k in ("%s_fgc_%s" % (regime, q),
                                                                         "%s_cudnn_%s" % (regime, q)))
                for q in ("mhz", "watts")]
        lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (r["case"], " | ".join(cells), ratio, cycle, *both,
                                                               verdicts(r)))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--fgc", default=os.path.join(ROOT, "build", "fgc"))
    p.add_argument("--out", default=os.path.join(ROOT, "out", "attention"))
    p.add_argument("--work", default="/tmp/fgc-attention")
    p.add_argument("--seqs", default="1024,2048,4096,8192,16384")
    p.add_argument("--dims", default="64,128")
    p.add_argument("--bh", type=int, default=64)
    p.add_argument("--mods", action="store_true", help="also the score-mod rows (bias, softcap, window)")
    p.add_argument("--no-causal", action="store_true")
    p.add_argument("--decode", action="store_true", help="decode steps instead (one query row, D = 128)")
    p.add_argument("--resume", action="store_true",
                   help="keep OUT's rows of these cases from an earlier call, run only the others")
    p.add_argument("--all", action="store_true",
                   help="the whole table in one process: the prefill rows, the score mods and the decode steps")
    p.add_argument("--decode-bh", default="8,16,32,64")
    p.add_argument("--decode-keys", default="4096,16384,32768,131072")
    p.add_argument("--build-only", action="store_true",
                   help="build the cases' libraries in --work and stop (no GPU needed; a later run on the GPU\n"
                        "machine with the same --work, fgc and runtime keeps them)")
    peers.timing_options(p, runs=10, rounds=3, sustain=0.3, warmup=3)
    args = peers.timing_checked(p.parse_args())
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    prefill = not args.decode or args.all
    cases = []
    if prefill:
        cases += [(args.bh, s, s, d, m) for s in map(int, args.seqs.split(",")) for d in map(int, args.dims.split(","))
                  for m in (("plain",) if args.no_causal else ("plain", "causal"))]
    if prefill and (args.mods or args.all):
        cases += [(args.bh, 4096, 4096, 128, m) for m in ("bias", "softcap", "window")]
    if args.decode or args.all:
        cases += [(bh, 1, sk, 128, "decode") for bh in map(int, args.decode_bh.split(","))
                  for sk in map(int, args.decode_keys.split(","))]
    stem = "attention" if prefill else "decode"
    path = os.path.join(args.out, stem + ".json")
    order = {case_name(c): i for i, c in enumerate(cases)}      # the table's rows, in order
    kept = peers.load_rows(path)["rows"] if args.resume else []
    kept = [r for r in kept if "error" not in r and r["case"] in order]
    done = {r["case"] for r in kept}
    todo = [c for c in cases if case_name(c) not in done]
    peers.log("%d cases to run (%d kept)" % (len(todo), len(kept)))
    libs = build(args, todo)
    if args.build_only:
        failed = [(case_name(c), err) for c, (_, _, err) in libs.items() if err]
        for name, err in failed:
            peers.log("%s: fgc failed: %s" % (name, err))
        peers.log("%d of %d libraries built in %s" % (len(libs) - len(failed), len(libs), args.work))
        sys.exit(1 if failed else 0)
    clock, nvml = peers.Clock("cuda"), peers.Nvml("cuda")
    copy_bw = peers.copy_bandwidth("cuda", clock) if any(c[4] == "decode" for c in todo) else None
    env = {"date": time.strftime("%Y-%m-%d %H:%M"), "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "command": " ".join(sys.argv)}
    data = {"environment": env, "rows": kept}
    for c in todo:
        peers.log("== %s" % (c,))
        try:
            row = bench_case(args, c, libs[c], clock, nvml)
        except Exception as e:  # one case's failure must not lose the others
            row = {"case": case_name(c), "mod": c[4], "error": peers.first_line(e)}
            peers.log("failed: %s" % e)
        if c[4] == "decode":
            row["copy_gbs"] = copy_bw / 1e9     # this call's: the row's share of copy
        if not args.no_compile:
            torch._dynamo.reset()
        torch.cuda.empty_cache()
        data["rows"].append(row)
        peers.save_rows(path, data)     # each row as it comes: --resume goes on from there
        peers.log(table([row], "sustained").splitlines()[-1])
    rows = sorted(data["rows"], key=lambda r: order[r["case"]])
    md = "".join(section(title, [r for r in rows if (r["mod"] == "decode") == dec])
                 for dec, title in ((False, "attention: fgc and its peers, bf16, BH = %d" % args.bh),
                                    (True, "attention decode steps: fgc and its peers, bf16, Sq = 1, D = 128")))
    md += "\n%s\n" % json.dumps(env)
    with open(os.path.join(args.out, stem + ".md"), "w") as f:
        f.write(md)
    peers.log("\n" + md)


def section(title, rows):
    """A markdown section of rows of one kind (prefill, or decode): the cold
    table, then the sustained, and for decode steps their graphs' replays;
    none without rows."""
    if not rows:
        return ""
    md = "# %s\n\n## Cold\n\n%s\n\n## Sustained\n\n%s\n\n" % (
        title, table(rows, "cold"), table(rows, "sustained"))
    replayed = [r for r in rows if any("replayed_%s_ms" % p in r for p in PEERS)]
    if replayed:
        md += "## Replayed (each peer's call captured in a CUDA graph, %s, replayed back to back)\n\n%s\n\n" % (
            peers.replay_words(replayed), table(replayed, "replayed"))
    return md

if __name__ == "__main__":
    main()
