#!/usr/bin/env python3
"""Checks fgc's fusion report (JSON) for one .fg against its `# expect` lines.

  # expect: groups=N kinds=a,b launches=N edges=N min-groups=N kernels=N bound=a,b grid=a,b underfills=a,b
                                 extra=a,b
                                 bound: each group's, memory or compute
                                 grid=a,b: each group's largest launch, in blocks
                                 underfills=0,1: each group's warning that it
                                 cannot fill the GPU
                                 extra=a,b: each group's bytes beyond reading its
                                 reads and writing its writes once
                                 kernels: groups with kernel code of their own
                                 (the others launch an earlier group's)
                                 merged=N: repeated values computed once
                                 recomputed=N: values computed in several groups
                                 max-bytes=N: the plan moves at most N bytes
                                 reads=NAME:N: N groups read NAME from memory
  # expect-explain: NAME: TEXT  fgc report --explain NAME says TEXT
  # expect-diff: OTHER: TEXT     fgc report --diff OTHER says TEXT (OTHER: planning
                                 flags, or a .fg beside this one)
  # expect-merged: NAME as VALUE a repeat (its name, or its op where it has
                                 none) computed once as VALUE
  # expect-edge: REASON          some boundary has this reason
  # expect-edge: REASON VALUE: TEXT   ... VALUE crosses it, its detail says TEXT
  # expect-write: VALUE REASON   VALUE is written for REASON
  # expect-error: LINE:COL: TEXT fgc report fails with this located error
  # expect-gpu: VALUE: TEXT      the gemm or attention group that writes VALUE
                                 says TEXT of how it runs on the GPU (its on_gpu)

Whatever the expectations, every report must be well formed: each write
and each edge has one of the reasons of the contract, every group reads
and writes something, and the totals add up.
"""
import json
import os
import subprocess
import sys

REASONS = {"output", "saved", "cross-block", "register-pressure", "fan-out", "user"}


def fail(path, msg):
    print(f"FAIL {path}: {msg}")
    sys.exit(1)


def expectations(path):
    exp, edges, writes, error, gpu, merged, explain, diff = {}, [], [], None, [], [], [], []
    for line in open(path, encoding="utf-8", errors="replace"):
        if line.startswith("# expect:"):
            for item in line.split(":", 1)[1].split():
                key, value = item.split("=")
                exp[key] = value
        elif line.startswith("# expect-edge:"):
            edges.append(line.split(":", 1)[1].strip())
        elif line.startswith("# expect-write:"):
            writes.append(line.split(":", 1)[1].split())
        elif line.startswith("# expect-error:"):
            error = line.split(":", 1)[1].strip()
        elif line.startswith("# expect-gpu:"):
            gpu.append(line.split(":", 1)[1].strip().split(": ", 1))
        elif line.startswith("# expect-merged:"):
            merged.append(line.split(":", 1)[1].split())
        elif line.startswith("# expect-explain:"):
            explain.append(line.split(":", 1)[1].strip().split(": ", 1))
        elif line.startswith("# expect-diff:"):
            diff.append(line.split(":", 1)[1].strip().split(": ", 1))
    return exp, edges, writes, error, gpu, merged, explain, diff


def check_shape(path, r):
    total = 0
    for g in r["groups"]:
        if not g["writes"]:
            fail(path, f"group {g['id']} writes nothing")
        for w in g["writes"]:
            if w["reason"] not in REASONS:
                fail(path, f"group {g['id']} writes {w['value']} for reason {w['reason']!r}")
        total += g["launches"]
    readers = {}
    for e in r["edges"]:
        if e["reason"] not in REASONS or not e.get("detail"):
            fail(path, f"edge {e} lacks a reason or its numbers")
        readers.setdefault(e["producer"], set()).add(e["to"])
    for e in r["edges"]:
        n = len(readers[e["producer"]])
        if e["readers"] != n or e["bytes"] % (n + 1):
            fail(path, f"edge {e}: its value is read by {n} groups across boundaries")
    if total != r["totals"]["fused"]["launches"]:
        fail(path, "group launches do not add up to the total")
    fused = r["totals"]["fused"]
    for key in ("est_us", "flops_tc", "flops_cc"):
        parts = sum(g[key] for g in r["groups"])
        if abs(parts - fused[key]) > 1e-3 * len(r["groups"]) + 1e-6 * abs(fused[key]):  # JSON's rounding
            fail(path, f"group {key} add up to {parts}, not the total {fused[key]}")
    for g in r["groups"]:
        if g["bound"] not in ("memory", "compute"):
            fail(path, f"group {g['id']} is bound by {g['bound']!r}")
    if r["memory"]["planned_bytes"] > r["memory"]["naive_bytes"]:
        fail(path, "the memory plan is larger than one buffer per value")


def main():
    fgc, path = sys.argv[1], sys.argv[2]
    exp, edges, writes, error, gpu, merged, explain, diff = expectations(path)
    p = subprocess.run([fgc, "report", "--format", "json", path], capture_output=True, text=True)
    if error:
        where, text = error.split(": ", 1)
        if p.returncode != 1 or f"{path}:{where}: error: " not in p.stderr or text not in p.stderr:
            fail(path, f"wanted exit 1 and {where}: ...{text}, got {p.returncode}:\n{p.stderr}")
        print(f"PASS {path}")
        return
    if p.returncode != 0:
        fail(path, f"fgc report failed:\n{p.stderr}")
    r = json.loads(p.stdout)
    check_shape(path, r)
    groups = r["groups"]
    if "groups" in exp and len(groups) != int(exp["groups"]):
        fail(path, f"{len(groups)} groups, wanted {exp['groups']}")
    if "min-groups" in exp and len(groups) < int(exp["min-groups"]):
        fail(path, f"{len(groups)} groups, wanted at least {exp['min-groups']}")
    if "kinds" in exp and [g["kind"] for g in groups] != exp["kinds"].split(","):
        fail(path, f"kinds {[g['kind'] for g in groups]}, wanted {exp['kinds']}")
    if "grid" in exp and [g["max_grid"] for g in groups] != [int(x) for x in exp["grid"].split(",")]:
        fail(path, f"largest launches {[g['max_grid'] for g in groups]}, wanted {exp['grid']}")
    if "underfills" in exp and [int(g["underfills"]) for g in groups] != [int(x) for x in exp["underfills"].split(",")]:
        fail(path, f"underfilling {[g['underfills'] for g in groups]}, wanted {exp['underfills']}")
    extra = [g["bytes"] - g["bytes_read"] - g["bytes_written"] for g in groups]
    if "extra" in exp and extra != [int(x) for x in exp["extra"].split(",")]:
        fail(path, f"bytes beyond one read and one write {extra}, wanted {exp['extra']}")
    if "bound" in exp and [g["bound"] for g in groups] != exp["bound"].split(","):
        fail(path, f"bounds {[g['bound'] for g in groups]}, wanted {exp['bound']}")
    if "launches" in exp and r["totals"]["fused"]["launches"] != int(exp["launches"]):
        fail(path, f"{r['totals']['fused']['launches']} launches, wanted {exp['launches']}")
    for g in groups:
        owner = g["kernel_of"]
        if owner is not None and (owner > g["id"] or groups[owner]["kernel_of"] != owner):
            fail(path, f"group {g['id']} runs group {owner}'s kernels, which runs {groups[owner]['kernel_of']}'s")
    own = sum(1 for g in groups if g["kernel_of"] == g["id"])
    if "kernels" in exp and own != int(exp["kernels"]):
        fail(path, f"{own} groups with kernels of their own, wanted {exp['kernels']}: "
                   f"{[g['kernel_of'] for g in groups]}")
    if "edges" in exp and len(r["edges"]) != int(exp["edges"]):
        fail(path, f"{len(r['edges'])} boundaries, wanted {exp['edges']}")
    for edge in edges:
        reason, _, rest = edge.partition(" ")
        value, _, text = rest.partition(": ")
        if not any(e["reason"] == reason and (not value or e["producer"] == value) and text in e["detail"]
                   for e in r["edges"]):
            fail(path, f"no boundary for {edge!r}: "
                       f"{[(e['producer'], e['reason'], e['detail']) for e in r['edges']]}")
    for value, reason in writes:
        found = [w for g in groups for w in g["writes"] if w["value"] == value]
        if not found or found[0]["reason"] != reason:
            fail(path, f"{value} is not written for {reason}: {found}")
    if "max-bytes" in exp and r["totals"]["fused"]["bytes"] > int(exp["max-bytes"]):
        fail(path, f"{r['totals']['fused']['bytes']} bytes, wanted at most {exp['max-bytes']}")
    if "reads" in exp:
        name, n = exp["reads"].split(":")
        got = sum(1 for g in groups if any(v["value"] == name for v in g["reads"]))
        if got != int(n):
            fail(path, f"{got} groups read {name}, wanted {n}")
    if "recomputed" in exp and len(r["recomputed"]) != int(exp["recomputed"]):
        fail(path, f"{len(r['recomputed'])} values recomputed, wanted {exp['recomputed']}: {r['recomputed']}")
    for v in r["recomputed"]:
        homes = [g["id"] for g in groups if any(n["value"] == v["value"] for n in g["ops"])]
        if homes != v["groups"]:
            fail(path, f"{v['value']} is recomputed in groups {v['groups']}, but the groups' ops put it in {homes}")
    if "merged" in exp and len(r["merged"]) != int(exp["merged"]):
        fail(path, f"{len(r['merged'])} repeats merged, wanted {exp['merged']}: {r['merged']}")
    for name, _, value in merged:
        if not any((m["name"] or m["op"]) == name and m["as"] == value for m in r["merged"]):
            fail(path, f"{name} is not computed as {value}: {r['merged']}")
    for name, text in explain:
        p = subprocess.run([fgc, "report", "--explain", name, path], capture_output=True, text=True)
        if p.returncode != 0 or text not in p.stdout:
            fail(path, f"fgc report --explain {name} does not say {text!r}:\n{p.stdout}{p.stderr}")
    for other, text in diff:
        if not other.startswith("-"):
            other = os.path.join(os.path.dirname(path), other)
        p = subprocess.run([fgc, "report", path, "--diff", other], capture_output=True, text=True)
        if p.returncode != 0 or text not in p.stdout:
            fail(path, f"fgc report --diff {other} does not say {text!r}:\n{p.stdout}{p.stderr}")
    for value, text in gpu:
        notes = [g.get("on_gpu", "") for g in groups if any(w["value"] == value for w in g["writes"])]
        if not notes or text not in notes[0]:
            fail(path, f"the group writing {value} does not say {text!r} of the GPU: {notes}")
    print(f"PASS {path}")


main()
