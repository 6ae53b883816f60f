#!/usr/bin/env python3
"""sass.py - the SASS of a generated .cu's kernels, and what each loop runs.

    tools/sass.py X.cu [--kernel RE] [--loops] [--runtime DIR] [--nvdisasm PATH]

Compiles X.cu for sm_90a as the runtime builds it (nvcc -O3, the runtime's
headers) and prints each kernel's SASS, or with --loops each loop's length
and its instructions by opcode: the per-tile instruction mix of a main loop,
which the cubin's size (tools/kernel_size.sh) only totals.

Which disassembler: a cuobjdump beside nvcc (a whole CUDA toolkit, as on
the H200), else --nvdisasm or $FGC_NVDISASM.  This machine's toolkit has
no cuobjdump; the nvdisasm of Debian's non-free nvidia-cuda-toolkit (CUDA
11.8: `apt-get download nvidia-cuda-toolkit`, `dpkg -x`, no install) reads
sm_90 but not CUDA 13's cubin header (ELF ABI version 8), so the tool hands
it a copy whose header says ABI 7 and sm_90.  The instruction words are
not touched: 11.8 already decodes HGMMA, SYNCS and UTMALDG.  Loops are
found by their backward branches; a loop's figures count every instruction
between its head and its branch, the paths inside it that a tile skips
(a residue tile's masking, a rescaling voted away) included, so read the
listing beside them (docs/performance.md v26).
"""
import argparse
import collections
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INSN = re.compile(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;')
HEX = re.compile(r'^\s*/\* 0x([0-9a-f]{16}) \*/\s*$')
LABEL = re.compile(r'^(\.L_x_\d+):')
TARGET = re.compile(r'`\((\.L_x_\d+)\)')
KERNEL = re.compile(r'^\s*\.text\.(\S+):|^\s*Function : (\S+)')      # nvdisasm's, cuobjdump's


def die(msg):
    sys.stderr.write('sass.py: error: %s\n' % msg)
    sys.exit(1)


def compile_cubin(cu, runtime, out):
    nvcc = shutil.which('nvcc') or '/usr/local/cuda/bin/nvcc'
    r = subprocess.run([nvcc, '-O3', '-gencode=arch=compute_90a,code=sm_90a', '-I' + runtime, '-cubin', cu, '-o', out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        die('nvcc failed on %s:\n%s' % (cu, r.stderr))
    return nvcc


def as_abi7(cubin, out):
    """A copy of CUDA 13's cubin whose ELF header an older nvdisasm reads:
    OS/ABI 0x33 and ABI version 7 (CUDA 13 writes 0x29 and 8), and e_flags
    in version 7's layout for sm_90 (SM in the low byte, the virtual SM in
    the third, 64-bit addresses and unified textures between)."""
    b = bytearray(open(cubin, 'rb').read())
    if b[:4] != b'\x7fELF' or b[4] != 2:
        die('%s is not a 64-bit ELF file' % cubin)
    flags = struct.unpack_from('<I', b, 48)[0]
    sm = (flags >> 8) & 0xff if b[8] >= 8 else flags & 0xff
    if sm != 90:
        die('the cubin is for sm_%d; the header rewrite knows sm_90 only' % sm)
    b[7], b[8] = 0x33, 7
    struct.pack_into('<I', b, 48, 0x005a055a)
    open(out, 'wb').write(b)


def disassemble(cubin, nvcc, nvdisasm, tmp):
    cuobjdump = os.path.join(os.path.dirname(nvcc), 'cuobjdump')
    if os.access(cuobjdump, os.X_OK) and not nvdisasm:
        r = subprocess.run([cuobjdump, '-sass', cubin], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout
    if not nvdisasm:
        die('no cuobjdump beside %s; give --nvdisasm or $FGC_NVDISASM (see the paragraph atop this file)' % nvcc)
    old = os.path.join(tmp, 'abi7.cubin')
    as_abi7(cubin, old)
    r = subprocess.run([nvdisasm, '-c', '-hex', old], capture_output=True, text=True)
    if r.returncode != 0:
        die('%s failed:\n%s' % (nvdisasm, r.stderr))
    return r.stdout


def undecoded(word):
    """The text of an instruction the older nvdisasm prints as bare hex:
    VIADD (opcode 0x836, CUDA 12's integer add of an immediate: Rd in bits
    16-23, Ra in 24-31, the immediate in 32-63), else its opcode number."""
    op, rd, ra, imm = word & 0xfff, (word >> 16) & 0xff, (word >> 24) & 0xff, word >> 32
    reg = lambda r: 'RZ' if r == 0xff else 'R%d' % r
    if op == 0x836:
        return 'VIADD %s, %s, 0x%x' % (reg(rd), reg(ra), imm)
    return 'UNDECODED.0x%03x' % op


def kernels(text):
    """{name: [(address, instruction text)]} and {label: address}, per kernel.
    With -hex each instruction is two words, the first on its line; a word
    alone where a first is due is an instruction that nvdisasm left out."""
    out, labels, name, pending, last, second = {}, {}, None, [], -16, False
    for line in text.split('\n'):
        m = KERNEL.match(line)
        if m:
            name = m.group(1) or m.group(2)
            out[name], labels[name], pending, last, second = [], {}, [], -16, False
            continue
        if name is None:
            continue
        m = LABEL.match(line)
        if m:
            pending.append(m.group(1))
            continue
        m = INSN.match(line)
        h = HEX.match(line)
        if m:
            addr, insn, second = int(m.group(1), 16), m.group(2), True
        elif h and second:
            second = False
            continue
        elif h:
            addr, insn, second = last + 16, undecoded(int(h.group(1), 16)), True
        else:
            continue
        for lab in pending:
            labels[name][lab] = addr
        pending, last = [], addr
        out[name].append((addr, insn))
    return out, labels


def opcode(insn):
    """The opcode of an instruction, its predicate dropped (HGMMA keeps its
    shape: the tile it multiplies is the point)."""
    return re.sub(r'^@!?U?P[0-9T]\s+', '', insn).split()[0]


def loops(code, labels):
    """(head, branch) address pairs of the predicated backward branches,
    outermost first.  Not loops a tile runs: a spin on one barrier (under
    16 instructions), and the unpredicated branch back from an out-of-line
    retry (ptxas puts an mbarrier's retry after the kernel's end)."""
    found = []
    for addr, insn in code:
        m = TARGET.search(insn)
        if m and m.group(1) in labels and insn.startswith('@'):
            head = labels[m.group(1)]
            if head < addr and (addr - head) // 16 >= 16:
                found.append((head, addr))
    return sorted(set(found), key=lambda p: (p[0], -p[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('cu')
    ap.add_argument('--kernel', default='.', help='kernels whose mangled name matches this regular expression')
    ap.add_argument('--loops', action='store_true', help="each loop's length and its instructions by opcode")
    ap.add_argument('--runtime', default=os.path.join(HERE, '..', 'runtime'))
    ap.add_argument('--nvdisasm', default=os.environ.get('FGC_NVDISASM'))
    a = ap.parse_args()
    if not os.path.isfile(a.cu):
        die('no file %s' % a.cu)
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, 'k.cubin')
        nvcc = compile_cubin(a.cu, a.runtime, cubin)
        text = disassemble(cubin, nvcc, a.nvdisasm, tmp)
    code, labels = kernels(text)
    for name in sorted(code):
        if not re.search(a.kernel, name):
            continue
        print('%s: %d instructions' % (name, len(code[name])))
        if not a.loops:
            for addr, insn in code[name]:
                print('  %06x  %s' % (addr, insn))
            continue
        for head, br in loops(code[name], labels[name]):
            body = [i for ad, i in code[name] if head <= ad <= br]
            hist = collections.Counter(opcode(i) for i in body)
            print('  loop %06x-%06x: %d instructions' % (head, br, len(body)))
            for op, n in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])):
                print('    %5d  %s' % (n, op))


if __name__ == '__main__':
    main()
