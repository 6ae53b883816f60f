#!/usr/bin/env bash
# run-lib.sh FGC SOURCE_DIR BUILD_DIR - compiled models as libraries (fgc
# compile --lib), without a GPU: for three samples at their test dims
# (softmax_f16: one kernel; gemm_bias_gelu_bf16: a matmul; transformer_block:
# cuBLASLt, the generated matmul and saved values),
#   1. --lib writes DIR/NAME.cu, DIR/NAME.h and the library, which exports
#      the C ABI alone (runtime/fgrt_model.h);
#   2. tests/runtime/lib_abi.c, a C program, dlopens all three in one process
#      and finds each one's name and its tensors in the order the .fg gives
#      (inputs and params as declared, outputs in `output` order, then the
#      @save values; read from the .fg by this script, not from fgc), and
#      fg_model_create fails with -1 and "no CUDA device" (succeeds where
#      nvidia-smi sees a GPU);
#   3. the headers compile in one strict C11 program whose enums must equal
#      those indices, and it links against a library;
#   4. a --lib compile that fails leaves no file behind.
# Without nvcc every test is skipped.
set -u
fgc=$1 src=$2 build=$3
. "$src/tests/lib.sh"
need_nvcc "the library tests"
py=${PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d "${build%/}/lib.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
check() {       # check NAME WHY-IT-FAILED (empty: it passed)
	if [ -z "$2" ]; then echo "PASS $1"; pass=$((pass + 1)); else echo "FAIL $1: $2"; fail=$((fail + 1)); fi
}

models=(softmax_f16 gemm_bias_gelu_bf16 transformer_block)
for n in "${models[@]}"; do
	read -ra dims < <(sed -n 's/^# test-dims://p' "$src/samples/$n.fg")
	mkdir -p "$tmp/$n"
	"$fgc" compile "$src/samples/$n.fg" "${dims[@]}" --lib -o "$tmp/$n/lib$n.so" >"$tmp/$n.log" 2>&1 &
done
wait
# The interface order, from the .fg text alone.
order() {
	"$py" - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
decls = re.findall(r"^\s*(?:input|param)\s+(\w+)", text, re.M)
outs = [o.strip() for o in re.search(r"^\s*output\s+(.*)$", text, re.M).group(1).split(",")]
saved = [s for s in re.findall(r"^\s*(\w+)\s*=.*@save", text, re.M) if s not in outs]
print(",".join(decls + outs + saved))
PY
}
args=()
for n in "${models[@]}"; do
	why=""
	for f in "$n/$n.cu" "$n/$n.h" "$n/lib$n.so"; do [ -s "$tmp/$f" ] || why="$why no $f;"; done
	[ -z "$why" ] || why="$why $(head -3 "$tmp/$n.log")"
	check "fgc compile --lib $n" "$why"
	args+=("$tmp/$n/lib$n.so:$(order "$src/samples/$n.fg")")
done
gpu=--no-gpu
nvidia-smi -L >/dev/null 2>&1 && gpu=--gpu
if cc -std=c11 -Wall -Wextra -Werror -pedantic -D_POSIX_C_SOURCE=200809L -I"$src/runtime" \
	"$src/tests/runtime/lib_abi.c" -ldl -o "$tmp/lib_abi" >"$tmp/cc.log" 2>&1; then
	"$tmp/lib_abi" "$gpu" "${args[@]}" >"$tmp/abi.log" 2>&1
	rc=$?
	sed 's/^/    /' "$tmp/abi.log"
	check "lib_abi $gpu: the three libraries in one process" "$([ $rc -eq 0 ] || grep FAIL "$tmp/abi.log" | head -3)"
else
	check "cc lib_abi.c" "$(head -5 "$tmp/cc.log")"
fi

# 2b. The same through the Python package's ctypes layer (python/fgc/_abi.py;
# PyTorch is not needed for it): each library's tensors, and create's error.
specs=()
for n in "${models[@]}"; do specs+=("$tmp/$n/lib$n.so" "$(order "$src/samples/$n.fg")"); done
"$py" - "$src/python" "$gpu" "${specs[@]}" >"$tmp/py.log" 2>&1 <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import fgc
gpu, rest, bad = sys.argv[2] == "--gpu", sys.argv[3:], 0
for path, names in zip(rest[::2], rest[1::2]):
    lib = fgc.Library(path)
    got = ",".join(t.name for t in lib.tensors)
    if got != names:
        print("FAIL %s: tensors %s, want %s" % (path, got, names)); bad = 1
    try:
        lib.destroy(lib.create(0))
        ok = gpu
    except fgc.ModelError as e:
        ok = not gpu and "no CUDA device" in str(e)
    if not ok:
        print("FAIL %s: create on a machine %s a GPU" % (path, "with" if gpu else "without")); bad = 1
try:
    fgc.Library(sys.argv[0] if sys.argv[0].endswith(".so") else "/nonexistent/libx.so")
    print("FAIL: a missing library loaded"); bad = 1
except fgc.ModelError as e:
    print("refused: %s" % e)
sys.exit(bad)
PY
check "python/fgc: the three libraries' tensors and create, through ctypes" "$([ $? -eq 0 ] || head -3 "$tmp/py.log")"

# 2c. The package's dtype tables against the runtime's (FGRT_DTYPES, fgrt.h):
# a dtype the runtime gains must reach python/fgc too.
"$py" - "$src" >"$tmp/dt.log" 2>&1 <<'PY'
import re, sys
src = sys.argv[1]
sys.path.insert(0, src + "/python")
from fgc import _abi
rt = re.findall(r'X\((\w+), "(\w+)"', open(src + "/runtime/fgrt.h").read().split("#define FGRT_DTYPES(X)")[1].split("\n\n")[0])
names = tuple(n for _, n in rt)
torch_table = re.search(r"TORCH_DTYPES = \{(.*?)\}", open(src + "/python/fgc/_torch.py").read(), re.S).group(1)
mapped = tuple(re.findall(r'"(\w+)": (?:torch\.|getattr\(torch, )', torch_table))
bad = 0
if _abi.DTYPES != names:
    print("FAIL fgc/_abi.py DTYPES %s, the runtime's %s" % (_abi.DTYPES, names)); bad = 1
if set(mapped) != set(names):
    print("FAIL fgc/_torch.py TORCH_DTYPES maps %s, the runtime has %s" % (mapped, names)); bad = 1
sys.exit(bad)
PY
check "python/fgc's dtypes are the runtime's (FGRT_DTYPES), each mapped to a torch dtype" \
	"$([ $? -eq 0 ] || head -3 "$tmp/dt.log")"

# 3. Both headers in one strict C program, their enums against the order.
{
	for n in softmax_f16 transformer_block; do echo "#include \"$n.h\""; done
	for n in softmax_f16 transformer_block; do
		i=0
		for name in $(order "$src/samples/$n.fg" | tr ',' ' '); do
			echo "_Static_assert(${n}_$name == $i, \"$n: $name is tensor $i\");"
			i=$((i + 1))
		done
		echo "_Static_assert(${n}_NTENSORS == $i, \"$n: $i tensors\");"
	done
	echo 'int main(void) { return fg_model_abi() == FG_MODEL_ABI && fg_model_ntensors() == softmax_f16_NTENSORS ? 0 : 1; }'
} >"$tmp/both.c"
cc -std=c11 -Wall -Wextra -Werror -pedantic -I"$tmp/softmax_f16" -I"$tmp/transformer_block" "$tmp/both.c" \
	-L"$tmp/softmax_f16" -lsoftmax_f16 -Wl,-rpath,"$tmp/softmax_f16" -o "$tmp/both" >"$tmp/both.log" 2>&1 &&
	"$tmp/both" >>"$tmp/both.log" 2>&1
check "the headers compile in C11 with the tensor indices of the .fg, and link" \
	"$([ $? -eq 0 ] || head -5 "$tmp/both.log")"

# 4. A failed --lib compile leaves nothing.
mkdir -p "$tmp/bad"
"$fgc" compile "$src/samples/gemm_bias_gelu_bf16.fg" --lib --gemm fgc --arch sm_80 -o "$tmp/bad/libg.so" >"$tmp/bad.log" 2>&1
rc=$?
check "a failed --lib compile: exit 1, one error, no file" \
	"$([ $rc -eq 1 ] && grep -q 'needs --arch sm_90a' "$tmp/bad.log" && [ -z "$(ls -A "$tmp/bad" 2>/dev/null)" ] ||
	   echo "exit $rc: $(head -2 "$tmp/bad.log"); left: $(ls "$tmp/bad" 2>/dev/null)")"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
