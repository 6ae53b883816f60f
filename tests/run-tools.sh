#!/bin/bash
# run-tools.sh FGC SOURCE_DIR BUILD_DIR - the developer tools' own logic
# where it needs no GPU and no disassembler: tools/sass.py's reading of
# an nvdisasm -hex listing (a kernel's instructions and labels, VIADD
# decoded from the words an older nvdisasm leaves out, loops found by
# their predicated backward branches, an mbarrier retry's branch back not
# one; cuobjdump's kernel heading too) and its rewrite of a CUDA 13
# cubin header into the one CUDA 11.8's nvdisasm reads, and
# tools/op_issue.py's count of a call's instructions.  Each check
# asserts a value the code under test could get wrong; the listings below
# are hand-written in nvdisasm's and cuobjdump's formats.  Then
# bench/peers.py's compile_lib, with a stand-in fgc, and its sustained
# timing's turns and clock and power summary, with a stand-in NVML, and
# its replayed regime's graphs of several calls, with a stand-in
# torch.cuda; and --build-only of peers.py and sweep.py with that
# stand-in.
set -u
src=$2
pass=0 fail=0
. "$src/tests/lib.sh"
log=$(mktemp) && trap 'rm -f "$log"' EXIT
python3 - "$src/tools/sass.py" >"$log" 2>&1 <<'PY'
import importlib.util, os, struct, sys, tempfile
spec = importlib.util.spec_from_file_location("sass", sys.argv[1])
sass = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sass)
bad = []
def want(what, got, expected):
    if got != expected:
        bad.append("%s: got %r, expected %r" % (what, got, expected))

W = "/* 0x%016x */"
listing = "\n".join([
    "\t.text._Z1kPf:",
    "        /*0000*/                   MOV R1, c[0x0][0x28] ;   " + W % 1,
    "                                                             " + W % 2,
    ".L_x_0:",
    "                                                             " + W % 0x0000000107087836,   # VIADD R8, R7, 0x1 (left out)
    "                                                             " + W % 3,
] + ["        /*%04x*/                   FADD R2, R2, R3 ;   " % (0x20 + 16 * i) + W % 4 + "\n"
     "                                                             " + W % 5 for i in range(20)] + [
    "        /*0160*/              @P0 BRA `(.L_x_0) ;   " + W % 6,
    "                                                             " + W % 7,
    "                                                             " + W % 0x00000008ff0e7836,   # VIADD R14, RZ, 0x8
    "                                                             " + W % 8,
    "                                                             " + W % 0x0000000000007848,   # opcode 0x848
    "                                                             " + W % 9,
    ".L_x_1:",
    "        /*0190*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R1], R2 ;   " + W % 10,
    "                                                             " + W % 11,
] + ["        /*%04x*/                   NOP ;   " % (0x1a0 + 16 * i) + W % 12 + "\n"
     "                                                             " + W % 13 for i in range(20)] + [
    "        /*02e0*/                   BRA `(.L_x_1) ;   " + W % 14,
    "                                                             " + W % 15,
])
code, labels = sass.kernels(listing)
k = code.get("_Z1kPf", [])
want("kernels", list(code), ["_Z1kPf"])
want("instructions", len(k), 47)
want("left out, decoded", k[1], (0x10, "VIADD R8, R7, 0x1"))
want("label on a left-out instruction", labels["_Z1kPf"].get(".L_x_0"), 0x10)
want("RZ", k[23][1], "VIADD R14, RZ, 0x8")
want("undecoded", k[24][1], "UNDECODED.0x848")
want("addresses after them", k[25][0], 0x190)
want("loops", sass.loops(k, labels["_Z1kPf"]), [(0x10, 0x160)])
want("opcode", sass.opcode("@!P0 BRA `(.L_x_0)"), "BRA")
# cuobjdump's listing (the H200's) names a kernel its own way
code, _ = sass.kernels("\t\tFunction : _Z1gv\n        /*0000*/                   EXIT ;   " + W % 1 + "\n"
                       "                                                             " + W % 2)
want("cuobjdump's kernel", code, {"_Z1gv": [(0, "EXIT")]})

# a CUDA 13 header (ELF ABI 8: OS/ABI 0x29, sm_90 in e_flags bits 8-15)
hdr = bytearray(64)
hdr[:4], hdr[4], hdr[7], hdr[8] = b"\x7fELF", 2, 0x29, 8
struct.pack_into("<I", hdr, 48, 0x6005a04)
with tempfile.TemporaryDirectory() as d:
    a, b = os.path.join(d, "a"), os.path.join(d, "b")
    open(a, "wb").write(bytes(hdr) + b"code")
    sass.as_abi7(a, b)
    out = open(b, "rb").read()
want("OS/ABI, ABI version", (out[7], out[8]), (0x33, 7))
want("e_flags", struct.unpack_from("<I", out, 48)[0], 0x005a055a)
want("the rest untouched", out[:7] + out[9:48] + out[52:], bytes(hdr[:7] + hdr[9:48] + hdr[52:]) + b"code")
for line in bad:
    print(line)
PY
verdict "sass.py" "$log"

# tools/op_issue.py's arithmetic (gen.c's ISSUE rows): a call is the
# difference between 16 chained calls and 8, over 8, NOPs not counted;
# an op without a fast form gets its accurate figure twice
python3 - "$src/tools/op_issue.py" >"$log" 2>&1 <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("op_issue", sys.argv[1])
oi = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oi)
code = {}
for op, (acc, fast) in oi.FORMS.items():
    for w, base, each in (("a", 10, 3), ("f", 10, 1)):
        if w == "a" or fast:
            for n in (8, 16):
                code["_Z%dk%d_%s_%sPKfPf" % (7, n, w, op)] = [(0, "FFMA R1, R1, R2, R3")] * (base + each * n) + [(0, "NOP")] * n
got = oi.per_call(code)
if got["SIN"] != (3, 3) or got["EXP"] != (3, 1) or len(got) != len(oi.FORMS):
    print("per_call: got SIN %r, EXP %r, %d ops; expected (3, 3), (3, 1), %d" % (got["SIN"], got["EXP"], len(got), len(oi.FORMS)))
PY
verdict "op_issue.py: a call's instructions" "$log"

# bench/peers.py's compile_lib: a library is built again exactly when what
# it is built from changed (fgc, the runtime's files, the source, the
# flags), and a failed or cut-off build is never taken for the one
# before.  A stand-in fgc counts its calls; PyTorch is bench/torchshim's
# stand-in.
py=${PYTHON:-/usr/bin/python3}
if "$py" -c 'import numpy' 2>/dev/null; then
	PYTHONPATH="$src/bench/torchshim:$src/bench" "$py" - >"$log" 2>&1 <<'PY'
import os, shutil, stat, tempfile
import torch
import peers
bad = []
def want(what, got, expected):
    if got != expected:
        bad.append("%s: got %r, expected %r" % (what, got, expected))
d = tempfile.mkdtemp()
fgc, src, rt = os.path.join(d, "fgc"), os.path.join(d, "m.fg"), os.path.join(d, "rt")
os.mkdir(rt)
with open(fgc, "w") as f:      # fgc compile SRC --lib -o LIB FLAGS...
    f.write('#!/bin/sh\necho "$@" >> "%s/calls"\n'
            'if grep -q bad "$2"; then echo "$2:1:1: error: bad graph"; exit 1; fi\n'
            'echo "built from $(cat "$2") $*" > "$5"\n'
            'if grep -q cut "$2"; then exit 1; fi\n' % d)      # a build cut off once it wrote
os.chmod(fgc, stat.S_IRWXU)
def put(path, text):
    with open(path, "w") as f:
        f.write(text)
def calls():
    return len(open(os.path.join(d, "calls")).read().splitlines()) if os.path.exists(os.path.join(d, "calls")) else 0
put(src, "graph a")
put(os.path.join(rt, "fg.cuh"), "one")
os.environ["FGC_RUNTIME"] = rt
lib = os.path.join(d, "w", "libm.so")
want("first build", (peers.compile_lib(fgc, src, lib, ["-D", "N=4"]), calls()), (lib, 1))
want("same bytes: kept", (peers.compile_lib(fgc, src, lib, ["-D", "N=4"]), calls()), (lib, 1))
peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
want("other flags: built", calls(), 2)
put(src, "graph b")
peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
want("source changed: built", (calls(), open(lib).read().split()[3]), (3, "b"))
put(os.path.join(rt, "fg.cuh"), "two")
peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
want("runtime changed: built", calls(), 4)
with open(fgc, "a") as f:
    f.write("# another fgc\n")
peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
want("fgc changed: built", calls(), 5)
os.remove(lib)
peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
want("library gone: built", (calls(), os.path.exists(lib)), (6, True))
put(src, "graph bad")
for i in range(2):      # the library of "graph b" and its key stay, but are never returned
    r = peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
    want("failed build %d" % i, (type(r).__name__, "error: bad graph" in str(r), calls()), ("RuntimeError", True, 7 + i))
put(src, "graph b")
peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
put(src, "graph cut")
peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
put(src, "graph b")     # the library on disk is the cut build's: built again, not taken on the old key
peers.compile_lib(fgc, src, lib, ["-D", "N=5"])
want("after a cut build", (calls(), open(lib).read().split()[3]), (11, "b"))
shutil.rmtree(d)

# the sustained regime's turns (reversed every other round), each run's
# NVML samples its own competitor's, and their summary (clock, power; a
# missing reading left out)
class FakeNvml:
    def __init__(self):
        self.readings = iter([(1980, 0x4, 690.5), (1500, 0x1, None), (None, 0, 700.0)] * 100)
    def sample(self):
        return next(self.readings)
    def watch(self):
        nvml = self
        class Watch:
            def __enter__(self):
                self.samples = [nvml.sample()]
                return self
            def __exit__(self, *exc):
                pass
        return Watch()
order = []
fns = {k: (lambda k=k: order.append(k)) for k in ("a", "b", "c")}
per, clocks = peers.time_sustained(peers.Clock("cpu"), FakeNvml(), fns, 3, 0.0, {k: 1.0 for k in fns})
runs = [order[i] for i in range(0, len(order), 11)]      # a run: one call ahead, then n = 10
want("calls a run", len(order), 9 * 11)
want("turns", runs, list("abccbaabc"))
# a run takes the next reading: a gets readings 0, 2, 0; b reading 1 thrice
want("a's samples", (clocks["a"]["mhz"], clocks["a"]["watts"], clocks["a"]["watts_max"]), (1980, 690.5, 700.0))
want("b's samples", (clocks["b"]["mhz"], clocks["b"]["watts"], clocks["b"]["reasons"]), (1500, None, []))
s = peers.Nvml.summary([(1980, 0x4, 690.5), (1500, 0x1, None), (None, 0, 700.0), (1700, 0x20, 600.0)])
want("summary", s, {"mhz": 1700, "mhz_min": 1500, "mhz_max": 1980, "watts": 690.5, "watts_max": 700.0,
                    "reasons": ["sw-power-cap", "sw-thermal"]})
want("nothing read", peers.Nvml.summary([peers.Nvml("cpu").sample()])["watts"], None)

# the replayed regime: each call captured --replay-calls times in one
# graph, the time per call (a graph's replay over its calls), a call that
# cannot be captured left out with its error.  A stand-in torch.cuda
# records the calls made while capturing; a stand-in clock counts each
# call's milliseconds
import contextlib, types
work = {"now": 0.0}
class FakeGraph:
    def __init__(self):
        self.calls = []
    def replay(self):
        for f in self.calls:
            f()
class FakeStream:
    def wait_stream(self, other):
        pass
cuda = types.SimpleNamespace(capturing=None, Stream=FakeStream, current_stream=FakeStream,
                             stream=lambda s: contextlib.nullcontext(), synchronize=lambda: None, CUDAGraph=FakeGraph)
@contextlib.contextmanager
def capture(g):
    cuda.capturing = g
    yield
    cuda.capturing = None
cuda.graph = capture
def costing(ms):
    def run():
        work["now"] += ms
    return lambda: cuda.capturing.calls.append(run) if cuda.capturing else run()
def uncapturable():
    if cuda.capturing:
        raise RuntimeError("operation not permitted when stream is capturing")
class CountingClock:
    cuda = False
    def time(self, fn):
        t0 = work["now"]
        fn()
        return work["now"] - t0
    def sync(self):
        pass
saved, peers.torch.cuda = getattr(peers.torch, "cuda", None), cuda
for calls in (1, 20):
    row = {}
    args = types.SimpleNamespace(replay_calls=calls, rounds=3, sustain=0.0)
    per, _ = peers.time_replayed(CountingClock(), FakeNvml(), {"a": costing(1.0), "b": costing(2.5), "c": uncapturable},
                                 row, args, {"a": 1.0, "b": 2.5, "c": 1.0})
    want("replayed per call, %d a graph" % calls, per, {"a": 1.0, "b": 2.5})
    want("replay_calls, %d a graph" % calls, row.get("replay_calls"), calls)
    want("not captured, %d a graph" % calls, row.get("c_replayed_error"), "error: operation not permitted when stream is capturing")
g = peers.captured({"a": costing(1.0)}, {}, 7)["a"]
before = work["now"]
g()
want("a graph's replay runs its calls", work["now"] - before, 7.0)
want("replay_words", (peers.replay_words([{"replay_calls": 20}]), peers.replay_words([{}]),
                      peers.replay_words([{}, {"replay_calls": 20}])), ("20 calls a graph", "1 call a graph", "1 or 20 calls a graph"))
peers.torch.cuda = saved

# the gates taken a chunk at a time (float_verdict over peers.slices):
# every chunking gives the whole result's verdict and figures, and each
# catches one planted element: one outside the elementwise gate, one
# beyond the RMSE gate's outlier bound while the RMSE itself passes
# (a bound from a chunk's own RMS would differ), one NaN
import numpy as np
rng = np.random.default_rng(1)
n = 100000
ref = torch.from_numpy(rng.standard_normal(n) * np.exp(rng.uniform(-3, 3, n)))
near = ref.to(torch.float32)
tol = peers.TOLERANCE[torch.float32]
rounded = lambda r: r.to(torch.float32).to(torch.float64)
def planted(i, v):
    x = near.copy()
    x[i] = v
    return x
cases = {"close": near, "one off": planted(n // 3, near[n // 3] + 5e-4), "one NaN": planted(3, float("nan"))}
# ones, and 100s in the first 8192: an error of 5e-5 at a 100 is within
# its magnitude's outlier bound (the RMS of all: 28.6), not within one
# from its chunk's RMS (100)
block = torch.from_numpy(np.where(np.arange(n) < 8192, 100.0, 1.0))
cases["within its bound"] = (block.to(torch.float32) + torch.from_numpy(np.where(np.arange(n) == 5000, 5e-5, 0.0)).to(torch.float32), block)
got = {}
for what, x in cases.items():
    x, r = x if isinstance(x, tuple) else (x, ref)
    for rmse in (False, True):
        whole = peers.float_verdict(peers.slices(x, r, n), tol, rmse, rounded)
        got[what, rmse] = whole
        for chunk in (n - 1, 4096, 7):
            want("%s, rmse %s, chunks of %d" % (what, rmse, chunk),
                 peers.float_verdict(peers.slices(x, r, chunk), tol, rmse, rounded), whole)
want("close", [got["close", r][0] for r in (False, True)], [True, True])
want("within its bound", [got["within its bound", r][0] for r in (False, True)], [True, True])
want("one off", [got["one off", r][0] for r in (False, True)], [False, False])
want("one off: the RMSE passes, one outlier", got["one off", True][1].split(" ")[2:3] + got["one off", True][1].split(", ")[1:],
     ["<=", "1 beyond the outlier bound"])
want("one NaN", [got["one NaN", r][1].endswith("NaN/Inf misplaced") for r in (False, True)], [True, True])
for line in bad:
    print(line)
PY
	verdict "bench/peers.py: compile_lib, the sustained turns, NVML's summary, the gates a chunk at a time" "$log"
	# sweep.py and peers.py --build-only: each case's library built with no
	# GPU, none built again on a second run, and exit status 1 naming the
	# case a stand-in fgc fails (any at 64 rows).
	d=$(mktemp -d)
	printf '#!/bin/sh\necho "$@" >> %s/calls\ncase "$*" in *R=64*) echo "stand-in: no"; exit 1;; esac\necho built > "$5"\n' \
		"$d" >"$d/fgc" && chmod +x "$d/fgc"
	bo() { PYTHONPATH="$src/bench/torchshim" "$py" "$src/bench/$1" --build-only --fgc "$d/fgc" "${@:2}" >"$d/out" 2>&1
	       echo "rc=$? calls=$(cat "$d/calls" 2>/dev/null | wc -l)"; }
	grid="--work $d/w --ops rmsnorm,softmax --dtypes f32 --cols 128,1024 --jobs 2"
	got="$(bo sweep.py $grid --rows 8) / $(bo sweep.py $grid --rows 8) / $(bo sweep.py $grid --rows 8,64)"
	grep -q '^.*rmsnorm_f32.fg:R=64,C=128: fgc failed:' "$d/out" || got="$got / no failure named"
	got="$got / $(bo peers.py --work "$d/p" --samples "softmax_f16 rmsnorm_bf16:R=64")"
	grep -q '^rmsnorm_bf16:R=64: fgc failed:' "$d/out" || got="$got / no failure named"
	want="rc=0 calls=4 / rc=0 calls=4 / rc=1 calls=8 / rc=1 calls=10"
	[ "$got" = "$want" ] && : >"$log" || printf 'got      %s\nexpected %s\n' "$got" "$want" >"$log"
	verdict "sweep.py and peers.py --build-only: built once, failures named" "$log"
	rm -rf "$d"
	# sweep.py's cells: one that did not fit the card says so; a wrong value
	# stays an error naming the competitor; --resume runs either again
	PYTHONPATH="$src/bench/torchshim:$src/bench" "$py" - >"$log" 2>&1 <<'PY'
import sweep
oom = {"fgc_check": "error: sweep_softmax_f16: cannot allocate the arena (2147483648 bytes, 2.00 GiB;", "eager_check": "ok"}
wrong = {"fgc_check": "wrong: 3 of 8 values outside the gate", "eager_check": "ok"}
for row, want in ((oom, "does not fit this card's memory"), ({"error": "CUDA out of memory. Tried to allocate 8.00 GiB"},
                  "does not fit this card's memory"), (wrong, "error: fgc wrong: 3 of 8 values outside the gate")):
    got = sweep.cell_text(row, "sustained")
    if got != want:
        print("cell_text(%r): got %r, expected %r" % (row, got, want))
    if not sweep.failed(row):
        print("failed(%r): false, so --resume would keep it" % row)
if sweep.failed({"fgc_check": "ok", "eager_check": "ok"}):
    print("failed(): true of a cell whose checks passed")
PY
	verdict "sweep.py: a cell that did not fit the card, a wrong one, both run again" "$log"
	# sweep.py's replayed tables: a replayed cell's speedups over the
	# default mode and eager, its % of the floor and of a plain kernel
	# over the same bytes, a cell not replayed
	# (its floor over REPLAY_FLOOR_MS) left empty, one whose fgc call was
	# not captured says so
	PYTHONPATH="$src/bench/torchshim:$src/bench" "$py" - >"$log" 2>&1 <<'PY'
import os, tempfile, types
import sweep
ok = {k: "ok" for k in sweep.CHECKS}
ok.update(floor_kind="memory", sustained_fgc_ms=0.02, sustained_compile_ms=0.04, sustained_compile_ro_ms=0.03,
          sustained_eager_ms=0.05, sustained_fgc_pct_of_floor=20.0)
rows = [dict(ok, op="softmax", dtype="f32", rows=64, cols=128, replayed_fgc_ms=0.01, replayed_compile_ms=0.015,
             replayed_eager_ms=0.02, replayed_fgc_pct_of_floor=80.0, replayed_fgc_pct_of_copy=95.0),
        dict(ok, op="softmax", dtype="f32", rows=4096, cols=131072),
        dict(ok, op="rmsnorm", dtype="f16", rows=8, cols=128, fgc_replayed_error="operation not permitted when "
             "stream is capturing")]
sweep.log = lambda *a: None     # the report's echo and the heat map's word
with tempfile.TemporaryDirectory() as d:
    sweep.report({"rows": rows}, types.SimpleNamespace(out=d))
    with open(os.path.join(d, "sweep.md")) as f:
        text = f.read()
replayed = text.split("## Replayed")[-1]
for want in ("| 64 | 1.50x (2.00x) 80%, copy 95% |  |", "| 4096 |  |  |", "### rmsnorm f16",
             "| 8 | fgc not captured: operation not permitted when stream is cap |  |"):
    if want not in replayed:
        print("the replayed tables lack %r:\n%s" % (want, replayed))
if text.count("## Replayed") != 1 or "### rmsnorm f16" not in text.split("## Replayed")[0]:
    print("not one replayed section after the others:\n" + text)
# rows replayed one call a graph (before --replay-calls) carry the caveat;
# rows of 20 calls a graph name their count and do not
for r in rows:
    r["replay_calls"] = 20
with tempfile.TemporaryDirectory() as d:
    sweep.report({"rows": rows}, types.SimpleNamespace(out=d))
    with open(os.path.join(d, "sweep.md")) as f:
        text20 = f.read()
if "(1 call a graph)" not in text or "A graph of one call times the host" not in text:
    print("rows of one call a graph without their count or caveat:\n" + text[:900])
if "(20 calls a graph)" not in text20 or "A graph of one call" in text20:
    print("rows of 20 calls a graph without their count, or with the caveat:\n" + text20[:900])
PY
	verdict "sweep.py: the replayed tables" "$log"
	# sweep.py's summary: per regime the cells fgc leads, the geometric
	# mean and the least, each cell it does not lead (least first, with
	# its % of the floor and of the plain kernel), and the failed cells
	PYTHONPATH="$src/bench/torchshim:$src/bench" "$py" - >"$log" 2>&1 <<'PY'
import os, tempfile, types
import sweep
ok = {k: "ok" for k in sweep.CHECKS}
def cell(op, r, c, fgc, peer, **kw):
    return dict(ok, op=op, dtype="f16", rows=r, cols=c, sustained_fgc_ms=fgc, sustained_compile_ms=peer,
                sustained_compile_ro_ms=peer * 2, **kw)
rows = [cell("softmax", 8, 128, 1.0, 4.0),
        cell("rmsnorm", 64, 1024, 1.0, 0.9, sustained_fgc_pct_of_floor=97.0, replayed_fgc_ms=1.0,
             replayed_compile_ms=0.5, replayed_fgc_pct_of_copy=40.0),
        cell("layernorm", 512, 4096, 1.0, 0.8),
        cell("bias_gelu", 1, 128, 1.0, 9.0, fgc_check="max error 3e-1 (tolerance 1e-2)")]
sweep.log = lambda *a: None
with tempfile.TemporaryDirectory() as d:
    sweep.report({"rows": rows}, types.SimpleNamespace(out=d))
    with open(os.path.join(d, "sweep.md")) as f:
        text = f.read()
got = text.split("## Summary")[-1].split("## Sustained")[0].strip().splitlines()
want = ["- Checks: 1 of 4 cells failed: bias_gelu f16 1 x 128",
        # speedups 4.0, 0.9, 0.8 (the faster mode): mean (2.88)^(1/3); the failed cell left out
        "- Sustained: fgc ahead in 1 of 3 cells (geometric mean 1.42x, the least 0.80x); not ahead:",
        "  - layernorm f16 512 x 4096: 0.800x, under a launch",
        "  - rmsnorm f16 64 x 1024: 0.900x, 97% of the floor",
        "- Replayed: fgc ahead in 0 of 1 cells (geometric mean 0.50x, the least 0.50x); not ahead:",
        "  - rmsnorm f16 64 x 1024: 0.500x, under a launch, 40% of the plain kernel"]
if got != want:
    print("the summary:\n%s\nwanted:\n%s" % ("\n".join(got), "\n".join(want)))
if text.index("## Summary") > text.index("## Sustained"):
    print("the summary after the tables")
PY
	verdict "sweep.py: the summary" "$log"
	# sweep.py's report over a sweep resumed in another call: each call's
	# copy bandwidth named (each cell's floor is its own call's), one
	# call's alone as before
	PYTHONPATH="$src/bench/torchshim:$src/bench" "$py" - >"$log" 2>&1 <<'PY'
import os, tempfile, types
import sweep
env = {"date": "d", "gpu": "g", "torch": "t", "triton": "tr", "cuda": "c", "copy_gbs": 2688.7, "fgc": "f"}
cell = lambda r, bw: {"op": "softmax", "dtype": "f16", "rows": r, "cols": 128, "copy_gbs": bw, "error": "x"}
sweep.log = lambda *a: None
for rows, want in (([cell(1, 2880.2), cell(8, 2880.4), cell(64, 2688.7)],
                    "copy bandwidth measured by each call, each cell's floor from its own call's: "
                    "2880 GB/s (2 cells), 2689 GB/s (1 cell);"),
                   ([cell(1, 2880.2)], "copy bandwidth 2880 GB/s in the same run;")):
    with tempfile.TemporaryDirectory() as d:
        sweep.report({"rows": rows, "environment": env}, types.SimpleNamespace(out=d))
        with open(os.path.join(d, "sweep.md")) as f:
            text = f.read()
    if want not in text:
        print("the report lacks %r:\n%s" % (want, text[-400:]))
PY
	verdict "sweep.py: each call's copy bandwidth in a resumed sweep's report" "$log"
else
	echo "FAIL bench/peers.py compile_lib: $py cannot import numpy (Debian: apt-get install python3-numpy)"
	fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
