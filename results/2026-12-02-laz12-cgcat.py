import sys, re, collections
# Self Ir of a callgrind file (positions: instr line) by category: each instruction's (file, line);
# library-file instructions are given to the last own-source line before them in address order.
path = sys.argv[1]
files = {}
cur_fl = cur_fi = None
fn = None
pos = [0, 0]
skip = False
ins = {}   # addr -> [cost, file, line, fn]
calls = collections.Counter()  # (fn, cfn) inclusive
cfn = None
def num(tok, i):
    if tok.startswith('+'): return pos[i] + int(tok[1:], 0)
    if tok.startswith('-'): return pos[i] - int(tok[1:], 0)
    if tok == '*': return pos[i]
    return int(tok, 0)
def name(s, table):
    m = re.match(r'\((\d+)\)(?: (.*))?', s)
    if m:
        if m.group(2): table[m.group(1)] = m.group(2)
        return table[m.group(1)]
    return s
fns = {}
for line in open(path):
    line = line.rstrip('\n')
    if not line: continue
    if line.startswith('fl='): cur_fl = name(line[3:], files); cur_fi = cur_fl; continue
    if line.startswith('fi=') or line.startswith('fe='): cur_fi = name(line[3:], files); continue
    if line.startswith('fn='): fn = name(line[3:], fns); cur_fi = cur_fl; continue
    if line.startswith('cfn='): cfn = name(line[4:], fns); continue
    if line.startswith('cfi=') or line.startswith('cfl='): name(line[4:], files); continue
    if line.startswith('calls='): skip = True; continue
    c = line[0]
    if c.isdigit() or c in '+-*':
        toks = line.split()
        a = num(toks[0], 0); l = num(toks[1], 1)
        pos[0], pos[1] = a, l
        if skip:
            skip = False
            if len(toks) > 2: calls[(fn, cfn)] += int(toks[2])
            continue
        if len(toks) > 2:
            e = ins.setdefault(a, [0, cur_fi, l, fn]); e[0] += int(toks[2])
tot = sum(e[0] for e in ins.values())
print('total', tot)
own = '/work/'
last = None
bycat = collections.Counter(); byline = collections.Counter()
import os
src = open(os.environ.get('ARITH', '/work/wt-laz12/src/cloud/formats/laz/arith.rs')).read().split('\n')
def find(pat):
    for i, l in enumerate(src):
        if re.search(pat, l): return i + 1
    raise Exception(pat)
b = [find(r'fn byte\('), find(r'fn renorm\('), find(r'pub fn symbol<'), find(r'pub fn bit\('), find(r'pub fn bits\('), find(r'^fn laz_table_bits'),
     find(r'^impl<T: Entry> Model<T>'), find(r'^impl BitModel'), find(r'pub fn decode\('), find(r'^mod tests')]
ranges = [('arith.rs', b[0] - 1, b[1] - 6, 'renorm (byte)'), ('arith.rs', b[1] - 5, b[2] - 2, 'renorm'), ('arith.rs', b[2] - 1, b[3] - 2, 'symbol'),
          ('arith.rs', b[3] - 1, b[4] - 3, 'bit'), ('arith.rs', b[4] - 2, b[5] - 1, 'raw bits'), ('arith.rs', b[6], b[7] + 20, 'model update/build (inlined parts)'),
          ('arith.rs', b[8] - 2, b[9] - 1, 'IntDecoder logic')]
for a in sorted(ins):
    c, f, l, fname = ins[a]
    if f and own in f and 'main.rs' not in f:
        last = (f, l)
    key = last if last else (f, l)
    if f and own not in f and 'update' in (fname or ''):
        key = (fname, 0)
    ff, ll = key
    cat = None
    base = (ff or '').split('/')[-1]
    for rf, lo, hi, nm in ranges:
        if base == rf and lo <= ll <= hi: cat = nm
    if cat is None: cat = base if own in (ff or '') else (fname or '?')[:60]
    if 'update' in (fname or ''): cat = 'Model/BitModel update (called)'
    if 'memset' in (fname or '') : cat = 'memset'
    bycat[cat] += c; byline[(base, ll)] += c
for k, v in bycat.most_common(30): print('%12d %6.2f%%  %s' % (v, 100*v/tot, k))
print()
for k, v in byline.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 0): print('%12d %s:%d' % (v, k[0], k[1]))
