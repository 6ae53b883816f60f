#!/usr/bin/env python3
"""make_bad_npy.py - writes the crafted .npy files of tests/npy/ and their
table, cases.txt, which tests/run-npy.sh reads.

Each file is made byte by byte here (Python 3 standard library only, no
NumPy), so that it can be as wrong as an attacker likes.  Every case is one
row of CASES below: the file it writes, the declaration of the input `x` it
is given to (`fgc run` of `graph g { input x : DECL  y = x  output y }`
with --inputs DIR holding the file as DIR/x.npy), whether fgc must accept
or reject it, and for a rejection a substring of the error line it must
print.  The attacks are those of shared/design/testing.md (".npy,
defensively") and issue 5: truncated files, header lengths past the end of
the file, a 12-byte file whose header asks for gigabytes, shape products
that overflow, negative and huge dims, Fortran order, every wrong dtype,
headers that are not exactly {descr, fortran_order, shape}, files that do
not match the declaration, bool bytes other than 0 and 1, trailing data.
Valid files in every header version and spelling must be accepted, and
their data must come back unchanged through `y = x`.

Usage:
    python3 tests/npy/make_bad_npy.py            # rewrites tests/npy/
    python3 tests/npy/make_bad_npy.py --check    # what the runner does:
                                                 # the committed files must
                                                 # be exactly what this writes
    python3 tests/npy/make_bad_npy.py --big DIR  # writes the cases too large
                                                 # to commit into DIR, and
                                                 # their table DIR/cases.txt

The output is deterministic: no clock, no randomness, no NumPy.
"""
import os
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = b'\x93NUMPY'


def dict_text(descr="'<f4'", fortran='False', shape='(4, 3)'):
    """A header dict as NumPy writes it, from the spelled-out values."""
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


def npy(header, data=b'', version=(1, 0), align=64, newline=True, hlen=None):
    """Magic, version, header length, header (padded with spaces and ended
    with '\\n' so that the preamble is a multiple of `align` bytes, as NumPy
    does; align=0: no padding), then data.  hlen overrides the length
    field, to lie about it."""
    if isinstance(header, str):
        header = header.encode('latin-1')
    pre = 10 if version[0] == 1 else 12
    if newline:
        header += b'\n'
    if align:
        total = pre + len(header)
        pad = (-total) % align
        if newline:
            header = header[:-1] + b' ' * pad + b'\n'
        else:
            header += b' ' * pad
    n = len(header) if hlen is None else hlen
    size = struct.pack('<H', n) if version[0] == 1 else struct.pack('<I', n)
    return MAGIC + bytes(version) + size + header + data


def f4(values):
    return struct.pack('<%df' % len(values), *values)


# The 4x3 float32 values every f32 case holds: distinct, exact in bf16 and
# f16, some negative, so a shifted or misread byte shows.
V12 = [(i - 5) * 0.5 for i in range(12)]
DATA = f4(V12)
GOOD = dict_text()

# (file, declaration, 'accept' or 'reject', substring of the error line)
CASES = []


def case(name, decl, verdict, text, content):
    CASES.append((name + '.npy', decl, verdict, text, content))


def reject(name, text, content, decl='f32[4, 3]'):
    case(name, decl, 'reject', text, content)


def accept(name, content, decl='f32[4, 3]'):
    case(name, decl, 'accept', '', content)


def build():
    CASES.clear()
    # ---- the preamble: magic, version, header length
    reject('empty-file', 'file too short for .npy: 0 bytes', b'')
    reject('magic-only', 'file too short for .npy: 6 bytes', MAGIC)
    reject('preamble-9-bytes', 'file too short for .npy: 9 bytes', MAGIC + b'\x01\x00\x76')
    reject('bad-magic', 'bad magic: not a .npy file', b'\x93NUMPZ' + npy(GOOD, DATA)[6:])
    reject('bad-magic-lowercase', 'bad magic', b'\x93numpy' + npy(GOOD, DATA)[6:])
    reject('text-file', 'bad magic', b'x = [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]\n')
    reject('npz-zip-archive', 'bad magic', b'PK\x03\x04\x14\x00\x00\x00\x00\x00' + b'x.npy' + npy(GOOD, DATA))
    reject('version-4-0', 'unsupported .npy format version 4.0', npy(GOOD, DATA, version=(4, 0)))
    reject('version-0-0', 'unsupported .npy format version 0.0', npy(GOOD, DATA, version=(0, 0)))
    reject('version-1-1', 'unsupported .npy format version 1.1', npy(GOOD, DATA, version=(1, 1)))
    reject('version-2-preamble-11-bytes', 'file too short for .npy version 2.0: 11 bytes',
           MAGIC + b'\x02\x00\x76\x00\x00')
    reject('header-past-eof', 'header length 1000 runs past the end of the file',
           npy(GOOD, b'', hlen=1000))
    reject('header-one-past-eof', 'runs past the end of the file',
           npy(GOOD, b'', align=0, newline=False, hlen=len(GOOD) + 1))
    # A 12-byte file whose version-2 header length asks for 4 GiB.
    reject('12-bytes-header-asks-4-gib', 'header length 4294967295 runs past the end of the file (12 bytes)',
           MAGIC + b'\x02\x00\xff\xff\xff\xff')
    reject('12-bytes-header-asks-60000', 'header length 60000 runs past the end of the file (12 bytes)',
           MAGIC + b'\x01\x00\x60\xea{}')
    reject('header-length-zero', 'bad header: not a dict', npy(b'', DATA, align=0, newline=False))
    # ---- the header's syntax
    reject('header-not-dict', 'bad header: not a dict', npy("['<f4', False, (4, 3)]", DATA))
    reject('header-python-call', 'bad header: not a dict', npy("dict(descr='<f4', fortran_order=False, shape=(4, 3))", DATA))
    reject('header-unclosed-dict', "bad header: expected ',' or '}'",
           npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3)", DATA, align=0, newline=False))
    reject('header-missing-comma', "bad header: expected ',' or '}', found '''",
           npy("{'descr': '<f4' 'fortran_order': False, 'shape': (4, 3)}", DATA))
    reject('header-trailing-garbage', "bad header: unexpected 'x' after the dict", npy(GOOD + ' xyz', DATA))
    reject('header-nul-padding', 'bad header: unexpected byte 0x00 after the dict',
           npy(GOOD.encode() + b'\0' * 8, DATA))
    reject('header-unterminated-string', 'bad header: unterminated string',
           npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), 'abc", DATA, align=0, newline=False))
    reject('header-unterminated-key', 'unsupported byte 0x0a in a string', npy("{'descr", DATA))
    reject('header-escape-in-string', 'bad header: unsupported byte 0x5c in a string',
           npy(dict_text(descr="'<f\\x34'"), DATA))
    reject('header-non-ascii-string', 'bad header: unsupported byte 0xc3 in a string',
           npy("{'d\u00e9scr': '<f4', 'fortran_order': False, 'shape': (4, 3), }".encode('utf-8'), DATA, version=(3, 0)))
    reject('header-non-ascii-outside-string', 'found byte 0xef',
           npy('\ufeff'.encode('utf-8') + GOOD.encode(), DATA))
    reject('header-colon-missing', "bad header: expected ':' after a key",
           npy("{'descr' '<f4', 'fortran_order': False, 'shape': (4, 3), }", DATA))
    # ---- the header's keys
    reject('keys-empty-dict', "bad header: missing key 'descr'", npy('{}', DATA))
    reject('keys-missing-descr', "bad header: missing key 'descr'",
           npy("{'fortran_order': False, 'shape': (4, 3), }", DATA))
    reject('keys-missing-fortran-order', "bad header: missing key 'fortran_order'",
           npy("{'descr': '<f4', 'shape': (4, 3), }", DATA))
    reject('keys-missing-shape', "bad header: missing key 'shape'",
           npy("{'descr': '<f4', 'fortran_order': False, }", DATA))
    reject('keys-extra', "bad header: unexpected key 'extra'",
           npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), 'extra': 1, }", DATA))
    reject('keys-duplicate-shape', "bad header: duplicate key 'shape'",
           npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3), 'shape': (4, 3), }", DATA))
    reject('keys-duplicate-descr', "bad header: duplicate key 'descr'",
           npy("{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (4, 3), }", DATA))
    reject('keys-wrong-case', "bad header: unexpected key 'Shape'",
           npy("{'descr': '<f4', 'fortran_order': False, 'Shape': (4, 3), }", DATA))
    reject('keys-unquoted', 'bad header: expected a quoted string',
           npy("{descr: '<f4', fortran_order: False, shape: (4, 3), }", DATA))
    # ---- fortran_order
    reject('fortran-order-true', 'Fortran order is not supported', npy(dict_text(fortran='True'), DATA))
    reject('fortran-order-zero', 'bad header: fortran_order must be True or False', npy(dict_text(fortran='0'), DATA))
    reject('fortran-order-lowercase', 'fortran_order must be True or False', npy(dict_text(fortran='false'), DATA))
    # ---- dtypes
    for name, descr in [('big-endian-f4', '>f4'), ('object', '|O'), ('c8', '<c8'),
                        ('u2', '|u2'), ('i8', '<i8'), ('unicode', '<U3'), ('no-byte-order', 'f4'),
                        ('big-endian-i4', '>i4'), ('padded', '<f4 ')]:
        reject('dtype-' + name, "unsupported dtype '%s' (accepted: '<f4', '<f2', '<i4', '|b1', '<f8', '|i1', '|u1')" % descr,
               npy(dict_text(descr="'%s'" % descr), DATA))
    reject('dtype-structured', 'unsupported dtype: structured dtypes are not accepted',
           npy(dict_text(descr="[('a', '<f4'), ('b', '<f4')]", shape='(4, 3)'), DATA * 2))
    reject('dtype-structured-dict', 'structured dtypes are not accepted',
           npy(dict_text(descr="{'names': ['a'], 'formats': ['<f4']}"), DATA))
    reject('dtype-unquoted', 'bad header: expected a quoted string', npy(dict_text(descr='float32'), DATA))
    # ---- shapes
    reject('shape-negative-dim', 'bad shape: negative dimension', npy(dict_text(shape='(-4, 3)'), DATA))
    reject('shape-dim-overflows-int64', 'bad shape: a dimension overflows int64',
           npy(dict_text(shape='(99999999999999999999, 3)'), DATA))
    reject('shape-product-overflows', 'bad shape: the product of shape (4294967296, 4294967296, 4294967296) overflows int64',
           npy(dict_text(shape='(4294967296, 4294967296, 4294967296)'), DATA))
    reject('shape-bytes-overflow', 'overflows the byte count', npy(dict_text(shape='(2305843009213693952, 2)'), DATA))
    reject('shape-int64-max', 'overflows the byte count', npy(dict_text(shape='(9223372036854775807,)'), DATA))
    reject('shape-asks-for-gigabytes', 'truncated data: shape (1000000000, 3) of <f4 needs 12000000000 bytes, file has 48',
           npy(dict_text(shape='(1000000000, 3)'), DATA))
    reject('shape-list', "bad header: expected '(' to open the shape tuple", npy(dict_text(shape='[4, 3]'), DATA))
    reject('shape-not-a-tuple', 'bad shape: (12) is not a tuple; a 1-tuple is written (12,)',
           npy(dict_text(shape='(12)'), DATA))
    reject('shape-real-dim', "bad shape: expected ',' or ')', found '.'", npy(dict_text(shape='(4.0, 3)'), DATA))
    reject('shape-empty-dim', "bad shape: expected a dimension, found ','", npy(dict_text(shape='(4, , 3)'), DATA))
    reject('shape-rank-9', 'rank 9 is above the maximum 8', npy(dict_text(shape='(1, 1, 1, 1, 1, 1, 1, 4, 3)'), DATA))
    reject('shape-unclosed', "bad shape: expected ',' or ')', found the end of the header",
           npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 3", DATA, align=0, newline=False))
    # ---- data length
    reject('data-truncated', 'truncated data: shape (4, 3) of <f4 needs 48 bytes, file has 47', npy(GOOD, DATA[:-1]))
    reject('data-missing', 'truncated data: shape (4, 3) of <f4 needs 48 bytes, file has 0', npy(GOOD))
    reject('data-trailing', 'trailing data: shape (4, 3) of <f4 needs 48 bytes, file has 52', npy(GOOD, DATA + b'\0\0\0\0'))
    reject('data-two-arrays', 'trailing data', npy(GOOD, DATA) + npy(GOOD, DATA))
    # ---- valid files that do not match the declaration f32[4, 3]
    reject('decl-wrong-shape', "holds <f4 (3, 4), but input 'x' is declared f32[4,3] and needs <f4 (4, 3)",
           npy(dict_text(shape='(3, 4)'), DATA))
    reject('decl-wrong-rank', "holds <f4 (12,), but input 'x' is declared f32[4,3]", npy(dict_text(shape='(12,)'), DATA))
    reject('decl-scalar-for-matrix', "holds <f4 (), but input 'x' is declared f32[4,3]",
           npy(dict_text(shape='()'), DATA[:4]))
    reject('decl-i4-for-f32', "holds <i4 (4, 3), but input 'x' is declared f32[4,3] and needs <f4 (4, 3)",
           npy(dict_text(descr="'<i4'"), struct.pack('<12i', *range(12))))
    # f8 is the unrounded reference's file type (--check), never a dtype's
    reject('decl-f8-for-f32', "holds <f8 (4, 3), but input 'x' is declared f32[4,3] and needs <f4 (4, 3)",
           npy(dict_text(descr="'<f8'"), DATA * 2))
    reject('decl-f2-for-f32', "holds <f2 (4, 3), but input 'x' is declared f32[4,3]",
           npy(dict_text(descr="'<f2'"), DATA[:24]))
    reject('decl-f4-for-f16', "holds <f4 (4, 3), but input 'x' is declared f16[4,3] and needs <f2 (4, 3)",
           npy(GOOD, DATA), decl='f16[4, 3]')
    reject('decl-f4-for-i32', "is declared i32[4,3] and needs <i4 (4, 3)", npy(GOOD, DATA), decl='i32[4, 3]')
    reject('decl-f2-for-bf16', "is declared bf16[4,3] and needs <f4 (4, 3) (bf16 travels as float32 values)",
           npy(dict_text(descr="'<f2'"), DATA[:24]), decl='bf16[4, 3]')
    reject('decl-b1-for-f32', "holds |b1 (4, 3), but input 'x' is declared f32[4,3]",
           npy(dict_text(descr="'|b1'"), bytes([0, 1] * 6)))
    # ---- bool bytes
    reject('bool-byte-2', 'bool element 5 holds byte 0x02 (expected 0 or 1)',
           npy(dict_text(descr="'|b1'"), bytes([0, 1, 1, 0, 1, 2, 0, 0, 1, 1, 0, 1])), decl='bool[4, 3]')
    reject('bool-byte-ff', 'bool element 11 holds byte 0xff (expected 0 or 1)',
           npy(dict_text(descr="'|b1'"), bytes([1] * 11 + [255])), decl='bool[4, 3]')
    # ---- valid files: every version and spelling NumPy's reader takes
    accept('ok-v1-numpy', npy(GOOD, DATA))
    accept('ok-v2', npy(GOOD, DATA, version=(2, 0)))
    accept('ok-v3', npy(GOOD, DATA, version=(3, 0)))
    accept('ok-v1-old-16-byte-alignment', npy(GOOD, DATA, align=16))
    accept('ok-unpadded', npy(GOOD, DATA, align=0, newline=False))
    accept('ok-extra-spaces', npy(" \t{ 'descr' : '<f4' ,\n 'fortran_order' : False , 'shape' : ( 4 , 3 , ) , } \r\n",
                                  DATA, newline=False))
    accept('ok-keys-reordered-double-quotes', npy('{"shape": (4, 3), "fortran_order": False, "descr": "<f4"}', DATA))
    accept('ok-no-trailing-comma', npy("{'descr':'<f4','fortran_order':False,'shape':(4,3)}", DATA))
    accept('ok-scalar', npy(dict_text(shape='()'), f4([2.5])), decl='f32[]')
    accept('ok-one-tuple', npy(dict_text(shape='(12,)'), DATA), decl='f32[12]')
    accept('ok-bool', npy(dict_text(descr="'|b1'"), bytes([0, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 1])), decl='bool[4, 3]')
    accept('ok-i32', npy(dict_text(descr="'<i4'"), struct.pack('<12i', *[-7, 0, 3, 2**31 - 1, -2**31, 5, 6, 7, 8, 9, 10, 11])),
           decl='i32[4, 3]')
    accept('ok-f16', npy(dict_text(descr="'<f2'"), struct.pack('<12e', *V12)), decl='f16[4, 3]')
    accept('ok-bf16-as-f4', npy(GOOD, DATA), decl='bf16[4, 3]')
    return CASES


def build_big():
    """Cases too large to commit, written at run time."""
    CASES.clear()
    # A header longer than the 1 MiB fgc accepts, in a file long enough to
    # hold it: the bound is on the length field, before anything is read.
    big = GOOD + ' ' * (1 << 20)
    reject('header-over-1-mib', 'is larger than the 1048576 accepted',
           npy(big, DATA, version=(2, 0)))
    return CASES


def table(cases):
    lines = ['# file\tdeclaration of x\taccept|reject\tsubstring of the error line',
             '# written by make_bad_npy.py; do not edit']
    for name, decl, verdict, text, _ in cases:
        assert '\t' not in text and '\n' not in text, name
        lines.append('%s\t%s\t%s\t%s' % (name, decl, verdict, text))
    return ('\n'.join(lines) + '\n').encode()


def write(out, cases):
    names = [c[0] for c in cases]
    assert len(set(names)) == len(names), 'duplicate file names'
    os.makedirs(out, exist_ok=True)
    for name, _, _, _, content in cases:
        with open(os.path.join(out, name), 'wb') as f:
            f.write(content)
    with open(os.path.join(out, 'cases.txt'), 'wb') as f:
        f.write(table(cases))


def check():
    """The committed files must be exactly those this script writes."""
    with tempfile.TemporaryDirectory() as tmp:
        write(tmp, build())
        want = sorted(n for n in os.listdir(tmp))
        have = sorted(n for n in os.listdir(HERE) if n.endswith('.npy') or n == 'cases.txt')
        bad = 0
        for n in sorted(set(want) | set(have)):
            if n not in have:
                print('make_bad_npy.py --check: %s is missing from tests/npy' % n)
                bad += 1
            elif n not in want:
                print('make_bad_npy.py --check: tests/npy/%s is not made by this script' % n)
                bad += 1
            else:
                with open(os.path.join(tmp, n), 'rb') as a, open(os.path.join(HERE, n), 'rb') as b:
                    if a.read() != b.read():
                        print('make_bad_npy.py --check: tests/npy/%s differs from what this script writes' % n)
                        bad += 1
        return 1 if bad else 0


def main(argv):
    if argv == ['--check']:
        return check()
    if len(argv) == 2 and argv[0] == '--big':
        write(argv[1], build_big())
        return 0
    if argv:
        print(__doc__.split('Usage:')[1].rstrip(), file=sys.stderr)
        return 2
    write(HERE, build())
    print('wrote %d files and cases.txt into %s' % (len(CASES), HERE))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
