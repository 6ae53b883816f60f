#!/usr/bin/env python3
"""kernel_regs.py - the partitioner's register estimate against ptxas.

    tools/kernel_regs.py FGC [MODEL.fg ...]      (default: samples/*.fg)

For each model at its default sizes: `fgc compile` writes the .cu, `nvcc
-Xptxas -v` compiles it for sm_90a (no GPU needed), and `fgc report
--format json` gives each group's est_regs.  Prints one markdown row per
kernel: how many elements a thread of it carries at once (its lanes, or a
row's elements held in registers, from the kernel's head comment), the
partitioner's est_regs (passes/kinds.c's register model: 16 for indices, 2
per tensor read, 4 per live value, i.e. a live value of 4 elements a
thread), that model scaled to the kernel's elements (16 + (est - 16) *
elements / 4: fg_kind_regs_at(), which the emitters use to choose lanes
and rows in registers), what ptxas allocated,
the relative error of the scaled estimate, and the bytes ptxas spilled.
Exit status 1 when any kernel spills.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NVCC = os.environ.get("NVCC", "/usr/local/cuda/bin/nvcc")


def ptxas_info(log):
    """kernel name -> (registers, spill bytes) from nvcc -Xptxas -v output."""
    out, name = {}, None
    for line in log.splitlines():
        if "Compiling entry function" in line:
            # an unmangled C++ name: _Z<length><name><parameters>
            m = re.search(r"'_Z(\d+)", line)
            mangled = line.split("'")[1]
            n = int(m.group(1))
            start = 2 + len(m.group(1))
            name = mangled[start:start + n]
            out[name] = [0, 0]
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            out[name][1] = int(m.group(1)) + int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            out[name][0] = int(m.group(1))
    return out


def carried(cu, kernel):
    """Elements a thread of `kernel` carries, from its head comment."""
    m = re.search(r"\* %s: ([^\n]*)" % re.escape(kernel.replace("_partial", "")), cu)
    if not m:
        return 1
    head = m.group(1)
    m = re.search(r"(\d+) lanes a thread", head)
    if m:
        return int(m.group(1))
    m = re.search(r"\((\d+) x (\d+) elements a thread\)", head)
    if m:
        return int(m.group(1)) * int(m.group(2))
    return 1


def main(argv):
    if not argv:
        sys.stderr.write(__doc__)
        return 2
    fgc = argv[0]
    models = argv[1:] or sorted(os.path.join(ROOT, "samples", f)
                                for f in os.listdir(os.path.join(ROOT, "samples")) if f.endswith(".fg"))
    spilled = 0
    print("| model | kernel | elements a thread | est_regs | estimate scaled | ptxas registers | error | spill bytes |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for fg in models:
            name = os.path.basename(fg)[:-3]
            out = os.path.join(tmp, name)
            subprocess.run([fgc, "compile", fg, "-o", out], check=True)
            rep = json.loads(subprocess.run([fgc, "report", "--format", "json", fg], check=True,
                                            capture_output=True, text=True).stdout)
            est = {g["name"]: g["est_regs"] for g in rep["groups"]}
            p = subprocess.run([NVCC, "-gencode=arch=compute_90a,code=sm_90a", "-Xptxas", "-v",
                                "-I", os.path.join(ROOT, "runtime"), "-c", out + ".cu", "-o", out + ".o"],
                               capture_output=True, text=True)
            if p.returncode != 0:
                sys.stderr.write(p.stderr)
                return 1
            with open(out + ".cu") as f:
                cu = f.read()
            for kernel, (regs, spill) in sorted(ptxas_info(p.stderr + p.stdout).items()):
                group = kernel[:-len("_partial")] if kernel.endswith("_partial") else kernel
                spilled += spill > 0
                n = carried(cu, kernel)
                if group in est:
                    scaled = 16 + (est[group] - 16) * n // 4
                    cols = "%d | %d | %d | %+.0f%%" % (est[group], scaled, regs, 100.0 * (scaled - regs) / regs)
                else:
                    cols = "- | - | %d | -" % regs
                print("| %s | %s | %d | %s | %d |" % (name, kernel, n, cols, spill))
    return 1 if spilled else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
