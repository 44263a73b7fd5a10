#!/bin/bash
# layers.sh - the folders of src/ are layers, and each looks only down.
#
# The order, from the bottom up (README, "Layout"):
#   lib sys comm proc launch conf check perf prep agent report cli, main.c
# Fails when
#   - a file includes a header of a folder above its own;
#   - a function declared in one folder's header is defined in another
#     folder (a call that runs up without an include);
#   - files include each other in a circle;
#   - mpi.h is included outside comm/, or hwloc outside sys/topo.c;
#   - a source file under src/ is not in a known folder.
set -euo pipefail
src=${TESTS_SRCDIR:-$(dirname "$0")}/../src

python3 - "$src" <<'EOF'
import os, re, sys

src = sys.argv[1]
order = ['lib', 'sys', 'comm', 'proc', 'launch', 'conf', 'check', 'perf',
         'prep', 'agent', 'report', 'cli']
rank = {d: i for i, d in enumerate(order)}
rank['.'] = len(order)          # main.c
bad = []

files = {}
for root, _, names in os.walk(src):
    for n in names:
        if n.endswith(('.c', '.h')):
            rel = os.path.relpath(os.path.join(root, n), src)
            files[rel] = open(os.path.join(root, n), encoding='utf-8').read()

def folder(rel):
    return rel.split('/')[0] if '/' in rel else '.'

inc = {}
for rel, text in files.items():
    f = folder(rel)
    if f not in rank:
        bad.append('%s: folder %s is not a layer (add it to the order)' % (rel, f))
        continue
    inc[rel] = []
    for m in re.finditer(r'^#include "([^"]+)"', text, re.M):
        h = m.group(1)
        if h in ('autoconf.h', 'vigil.h'):
            continue
        if h not in files:
            bad.append('%s includes "%s": not a path under src/' % (rel, h))
            continue
        inc[rel].append(h)
        if rank[folder(h)] > rank[f]:
            bad.append('%s (%s) includes %s, a layer above it' % (rel, f, h))
    if re.search(r'^#include <mpi\.h>', text, re.M) and f != 'comm':
        bad.append('%s includes mpi.h: MPI lives in comm/ alone' % rel)
    if re.search(r'^#include <hwloc', text, re.M) and rel != 'sys/topo.c':
        bad.append('%s includes hwloc: it lives in sys/topo.c alone' % rel)

# circles among files (a header with its own .c, and a module's private
# header, X_priv.h or X_int.h, count as one room)
def room(rel):
    return re.sub(r'_(priv|int)$', '', rel[:-2])
graph = {}
for rel, hs in inc.items():
    graph.setdefault(room(rel), set()).update(room(h) for h in hs if room(h) != room(rel))
state = {}
def visit(n, path):
    state[n] = 1
    for m in sorted(graph.get(n, ())):
        if state.get(m) == 1:
            bad.append('include circle: ' + ' -> '.join(path[path.index(m):] + [m]))
        elif m not in state:
            visit(m, path + [m])
    state[n] = 2
for n in sorted(graph):
    if n not in state:
        visit(n, [n])

# functions: declared in a header of folder F, defined in a .c of folder F
decl = {}
for rel, text in files.items():
    if rel.endswith('.h'):
        for m in re.finditer(r'^[A-Za-z_][\w \*]*?\b(\w+)\(', text, re.M):
            decl.setdefault(m.group(1), set()).add(rel)
for rel, text in files.items():
    if not rel.endswith('.c'):
        continue
    for m in re.finditer(r'^(?!static)[a-z_].*\n(\w+)\([^;]*?\)\n\{', text, re.M):
        name = m.group(1)
        for h in decl.get(name, ()):
            if folder(h) != folder(rel):
                bad.append('%s() is declared in %s but defined in %s' % (name, h, rel))

if bad:
    print('\n'.join(sorted(set(bad))))
    sys.exit(1)
print('layers: %d files, %d includes, all looking down' %
      (len(files), sum(len(v) for v in inc.values())))
EOF
