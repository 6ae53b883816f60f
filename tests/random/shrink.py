#!/usr/bin/env python3
"""shrink.py - shrinks a .fg that `fgc verify` fails on to a minimal one
that fails the same way (greedy delta debugging over statements).

    shrink.py FGC IN.fg OUT.fg [--no-fuse | --compile | --sh CMD] [--seed S]
                               [--match TEXT] [--options "PLAN OPTIONS"]
                               [--allow-rounding]

(--options: what run-random.sh printed between verify's mode and --seed,
e.g. "--reg-limit 28".)

The failure is the one IN.fg shows: a crash (exit status other than 0
and 1), an illegal plan (exit 1 without a mismatch), or a mismatch; with
--compile, `fgc compile IN.fg -o OUT` refusing the plan (exit 1: a group
the CUDA emitter cannot run) or crashing; with --sh CMD, the shell
command CMD (where {} stands for the candidate .fg) exiting with status 0.
With --match, the output must also contain TEXT.  A mismatch must survive
with every f16/bf16 made f32, else it is the rounding of f16/bf16 values,
not a bug (as tests/run-random.sh's ROUND); --allow-rounding lifts that.
Every candidate must pass `fgc check`.

The graph is first rewritten one op a statement (`fgc check -d build`,
then `-d expand` when the failure survives that), then, until nothing
changes: outputs dropped, @save/@materialize dropped, fuse { } unwrapped,
statements deleted, a statement bypassed (`v = op(a, ...)` becomes
`v = a` when a has v's type), or cut (`v = ...` becomes `input v : T`),
and unused inputs deleted.  Python 3 standard library only.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

STMT = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*((?:@\w+\s*)*)(#.*)?$")
DECL = re.compile(r"^\s*(input|param)\s+([A-Za-z_][A-Za-z0-9_]*)\s*:")
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Shrinker:
    def __init__(self, fgc, mode, seed, match, allow_rounding, options=(), sh=None):
        self.options = list(options)
        self.sh = sh            # --sh: the command, {} for the candidate
        self.fgc = fgc
        self.mode = mode
        self.seed = seed
        self.match = match
        self.allow_rounding = allow_rounding
        self.tmp = tempfile.mkdtemp(prefix="shrink.")
        self.calls = 0

    def write(self, lines, name="cand.fg"):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        return path

    def verify(self, path):
        args = [self.fgc, "verify"] + (["--no-fuse"] if self.mode == "no-fuse" else []) + \
            self.options + ["--seed", str(self.seed), path]
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            return "crash", "timeout"
        out = p.stdout + p.stderr
        if p.returncode == 0:
            return "ok", out
        if p.returncode == 1:
            return ("mismatch" if "differ from the op-by-op" in out else "illegal-plan"), out
        return "crash", out

    def classify(self, lines):
        self.calls += 1
        path = self.write(lines)
        p = subprocess.run([self.fgc, "check", path], capture_output=True, text=True)
        if p.returncode != 0:
            return "invalid", p.stderr
        if self.mode == "sh":
            cmd = self.sh.replace("{}", path)
            try:
                p = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                return "crash", "timeout"
            return ("failing" if p.returncode == 0 else "ok"), p.stdout + p.stderr
        if self.mode == "compile":
            out = os.path.join(self.tmp, "out")
            try:
                p = subprocess.run([self.fgc, "compile"] + self.options + [path, "-o", out],
                                   capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                return "crash", "timeout"
            if p.returncode == 0:
                return "ok", p.stdout + p.stderr
            return ("refused" if p.returncode == 1 else "crash"), p.stdout + p.stderr
        cls, out = self.verify(path)
        if cls == "mismatch" and not self.allow_rounding:
            text = "\n".join(lines)
            promoted = re.sub(r"\b(bf16|f16)\b", "f32", text)
            if promoted != text and self.verify(self.write(promoted.split("\n"), "cand32.fg"))[0] != "mismatch":
                return "rounding", out
        return cls, out

    def interesting(self, lines):
        cls, out = self.classify(lines)
        return cls == self.want and (self.match is None or self.match in out)

    def dump(self, lines, stage):
        p = subprocess.run([self.fgc, "check", "-d", stage, self.write(lines)], capture_output=True, text=True)
        if p.returncode != 0:
            return None
        return [l for l in p.stdout.rstrip("\n").split("\n") if not l.startswith("# fgc: after")]

    def types(self, lines):
        """value name -> type text, from the unfused report."""
        p = subprocess.run([self.fgc, "report", "--no-fuse", "--format", "json", self.write(lines)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return {}
        t = {}
        for g in json.loads(p.stdout)["groups"]:
            for o in g["ops"]:
                t[o["value"]] = o["type"]
        return t

    # ------------------------------------------------------------ passes
    def try_each(self, lines, candidates):
        """Applies the first interesting candidate of each; returns the
        lines and whether anything changed."""
        changed = False
        i = 0
        while True:
            cands = candidates(lines)
            if i >= len(cands):
                return lines, changed
            c = cands[i]
            if c is not None and c != lines and self.interesting(c):
                lines = c
                changed = True
                continue        # same index: the list moved up
            i += 1

    @staticmethod
    def out_index(lines):
        for i, l in enumerate(lines):
            if l.strip().startswith("output "):
                return i
        return -1

    def drop_outputs(self, lines):
        k = self.out_index(lines)
        names = [x.strip() for x in lines[k].strip()[len("output "):].split(",")]
        res = []
        for j in range(len(names)):
            if len(names) == 1:
                break
            rest = names[:j] + names[j + 1:]
            res.append(lines[:k] + ["  output " + ", ".join(rest)] + lines[k + 1:])
        return res

    def drop_annotations(self, lines):
        res = []
        for i, l in enumerate(lines):
            for ann in ("@save", "@materialize"):
                if ann in l:
                    res.append(lines[:i] + [l.replace(" " + ann, "").replace(ann, "")] + lines[i + 1:])
        return res

    def unwrap_fuse(self, lines):
        res = []
        for i, l in enumerate(lines):
            if l.strip() == "fuse {":
                for j in range(i + 1, len(lines)):
                    if lines[j].strip() == "}":
                        res.append(lines[:i] + lines[i + 1:j] + lines[j + 1:])
                        break
        return res

    def delete_statements(self, lines):
        res = []
        for i in reversed(range(len(lines))):
            if STMT.match(lines[i]) or (lines[i].strip().startswith("#") and i > 0):
                res.append(lines[:i] + lines[i + 1:])
        return res

    def operands(self, rhs):
        return [w for w in WORD.findall(re.sub(r"\w+\s*=\s*\[[^\]]*\]|\w+\s*=\s*[\w.+-]+", "", rhs))]

    def bypass(self, lines):
        types = self.types(lines)
        res = []
        for i in reversed(range(len(lines))):
            m = STMT.match(lines[i])
            if not m:
                continue
            ind, name, rhs, ann = m.group(1), m.group(2), m.group(3), m.group(4)
            for op in self.operands(rhs):
                if op != name and op in types and types.get(op) == types.get(name) and op != rhs:
                    res.append(lines[:i] + [("%s%s = %s %s" % (ind, name, op, ann.strip())).rstrip()] + lines[i + 1:])
                elif op != name and op in self.decl_types(lines) and self.decl_types(lines)[op] == types.get(name):
                    res.append(lines[:i] + [("%s%s = %s %s" % (ind, name, op, ann.strip())).rstrip()] + lines[i + 1:])
        return res

    def inline_copies(self, lines):
        """`v = a`: every later v becomes a."""
        res = []
        for i, l in enumerate(lines):
            m = STMT.match(l)
            if not m or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", m.group(3)):
                continue
            v, a = m.group(2), m.group(3)
            pat = re.compile(r"\b%s\b" % re.escape(v))
            rest = [pat.sub(a, x) if not x.lstrip().startswith("#") else x for x in lines[i + 1:]]
            out = self.out_index(lines)
            if out > i:
                # an output named twice is an error: drop the duplicate
                k = out - i - 1
                names = [x.strip() for x in rest[k].strip()[len("output "):].split(",")]
                seen = []
                for x in names:
                    if x not in seen:
                        seen.append(x)
                rest[k] = "  output " + ", ".join(seen)
            res.append(lines[:i] + rest)
        return res

    def decl_types(self, lines):
        t = {}
        for l in lines:
            m = re.match(r"^\s*(input|param)\s+(\w+)\s*:\s*(\w+)\[(.*)\]", l)
            if m:
                dims = [d.split("=")[-1].strip() for d in m.group(4).split(",") if d.strip()]
                t[m.group(2)] = "%s[%s]" % (m.group(3), ",".join(dims))
        return t

    def cut(self, lines):
        types = self.types(lines)
        res = []
        last_decl = max(i for i, l in enumerate(lines) if DECL.match(l) or l.startswith("graph"))
        for i in reversed(range(len(lines))):
            m = STMT.match(lines[i])
            if not m or m.group(2) not in types or m.group(1) != "  ":
                continue
            name = m.group(2)
            decl = "  input %s : %s" % (name, types[name])
            new = lines[:i] + lines[i + 1:]
            new = new[:last_decl + 1] + [decl] + new[last_decl + 1:]
            if m.group(4).strip():
                # keep a saved or materialized cut value an output instead
                pass
            res.append(new)
        return res

    def drop_inputs(self, lines):
        res = []
        for i, l in enumerate(lines):
            m = DECL.match(l)
            if m:
                res.append(lines[:i] + lines[i + 1:])
        return res

    def run(self, lines):
        self.want, out = self.classify(lines)
        if self.want in ("ok", "invalid", "rounding"):
            sys.stderr.write("shrink.py: the input does not fail (%s):\n%s\n" % (self.want, out[-2000:]))
            return None
        sys.stderr.write("shrink.py: shrinking a %s, %d lines\n" % (self.want, len(lines)))
        for stage in ("build", "expand"):
            d = self.dump(lines, stage)
            if d and self.interesting(d):
                lines = d
        while True:
            changed = False
            for p in (self.drop_outputs, self.drop_annotations, self.unwrap_fuse, self.delete_statements,
                      self.bypass, self.inline_copies, self.cut, self.drop_inputs):
                lines, c = self.try_each(lines, p)
                changed |= c
            if not changed:
                break
        sys.stderr.write("shrink.py: %d lines after %d tries\n" % (len(lines), self.calls))
        return lines


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    fgc, src, dst = argv[0], argv[1], argv[2]
    mode, seed, match, allow, options, sh = "fused", 0, None, False, [], None
    i = 3
    while i < len(argv):
        if argv[i] == "--no-fuse":
            mode = "no-fuse"
            i += 1
        elif argv[i] == "--compile":
            mode = "compile"
            i += 1
        elif argv[i] == "--sh":
            mode, sh = "sh", argv[i + 1]
            i += 2
        elif argv[i] == "--seed":
            seed = int(argv[i + 1])
            i += 2
        elif argv[i] == "--match":
            match = argv[i + 1]
            i += 2
        elif argv[i] == "--options":
            options = argv[i + 1].split()
            i += 2
        elif argv[i] == "--allow-rounding":
            allow = True
            i += 1
        else:
            sys.stderr.write("shrink.py: unknown argument %s\n" % argv[i])
            return 2
    with open(src) as f:
        lines = f.read().rstrip("\n").split("\n")
    s = Shrinker(os.path.abspath(fgc), mode, seed, match, allow, options, sh)
    res = s.run(lines)
    if res is None:
        return 1
    with open(dst, "w") as f:
        f.write("\n".join(res) + "\n")
    print("\n".join(res))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
