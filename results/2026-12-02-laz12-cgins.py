import sys, re, collections
# Self Ir per instruction address from a callgrind file with "positions: instr line".
cost = collections.Counter()
names = {}
pos = [0, 0]
skip_next = False
def num(tok, i):
    if tok.startswith('+'): return pos[i] + int(tok[1:], 0)
    if tok.startswith('-'): return pos[i] - int(tok[1:], 0)
    if tok == '*': return pos[i]
    return int(tok, 0)
for line in open(sys.argv[1]):
    line = line.rstrip('\n')
    if not line: continue
    c = line[0]
    if c.isdigit() or c in '+-*':
        toks = line.split()
        a = num(toks[0], 0); l = num(toks[1], 1)
        pos[0], pos[1] = a, l
        if skip_next:
            skip_next = False
            continue
        if len(toks) > 2: cost[a] += int(toks[2])
    elif line.startswith('calls='):
        skip_next = True
for a, n in cost.items():
    print(hex(a), n)
