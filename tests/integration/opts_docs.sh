#!/bin/bash
# The table of `vigil run`'s options (opts_run.c) against what users read:
# every row is in `vigil run --help` and in vigil(1)'s OPTIONS FOR RUN;
# every row a site may set is a key of vigil.conf(5)'s "run" section, and
# every row "run.limits" may cap a key of that one; and nothing is
# documented there that the table does not know.  Then the check itself:
# copies with one line taken out or one option made up must fail it.
. "$(dirname "$0")/lib.sh"

: "${OPTS_ROWS:?OPTS_ROWS must name tests/integration/opts_rows}"
doc=$TESTS_SRCDIR/../doc

"$OPTS_ROWS" > "$SCRATCH/rows"; rc=$?
expect_eq "the table printed" 0 "$rc"
"$VIGIL" run --help > "$SCRATCH/help"; rc=$?
expect_eq "vigil run --help" 0 "$rc"

# check_docs ROWS HELP MAN1 MAN5: one line per problem; exit 1 if any.
check_docs() {
	python3 - "$@" <<'PY'
import re, sys

rows_file, help_file, man1, man5 = sys.argv[1:5]
rows = [l.split() for l in open(rows_file) if l.strip()]
names = {r[0] for r in rows}
letters = {r[0]: r[1] for r in rows if r[1] != '-'}
key = lambda name: name.replace('-', '_')
site = {key(r[0]) for r in rows if r[2] == '1'}
limit = {key(r[0]) for r in rows if r[3] == '1'}
bad = []

def section(path, start, level):
    """The lines of section START (".SH X" or ".SS X") up to the next of its
    level or above."""
    out, inside = [], False
    stops = ('.SH',) if level == '.SH' else ('.SH', '.SS')
    for line in open(path, encoding='utf-8'):
        line = line.rstrip('\n')
        if line == start:
            inside = True
            continue
        if inside and line.split(' ')[0] in stops:
            break
        if inside:
            out.append(line)
    if not out:
        bad.append('%s: no section "%s"' % (path, start))
    return out

def tags(lines):
    """The tag lines of .TP paragraphs: what the section defines."""
    return [lines[i + 1] for i, l in enumerate(lines[:-1]) if l == '.TP']

def unroff(s):
    return re.sub(r'\\f[BIRP]', '', s).replace('\\-', '-')

def compare(where, found, want, what, unknown='is not an option of the table'):
    for n in sorted(want - found):
        bad.append('%s: %s missing' % (where, what(n)))
    for n in sorted(found - want):
        bad.append('%s: %s %s' % (where, what(n), unknown))

# --help, from the binary: an entry is "  --NAME" or "  -L, --NAME".
found, found_letters = set(), {}
for line in open(help_file):
    m = re.match(r'  (?:-(\w), )?--([a-z][a-z0-9-]*)', line)
    if m:
        found.add(m.group(2))
        if m.group(1):
            found_letters[m.group(2)] = m.group(1)
compare('vigil run --help', found, names, lambda n: '--' + n)
for n, l in letters.items():
    if found_letters.get(n) != l:
        bad.append('vigil run --help: -%s, --%s missing' % (l, n))

# vigil(1): the options OPTIONS FOR RUN defines.
found = set()
for t in tags(section(man1, '.SH OPTIONS FOR RUN', '.SH')):
    t = unroff(t)
    found |= set(re.findall(r'(?<![\w-])--([a-z][a-z0-9-]*)', t))
    for n, l in letters.items():
        if '--' + n in t and not re.search(r'(?<![\w-])-%s\b' % l, t):
            bad.append('vigil.1: -%s, --%s: -%s missing' % (l, n, l))
compare('vigil.1 OPTIONS FOR RUN', found, names, lambda n: '--' + n)

# vigil.conf(5): the keys the run and run.limits sections define; a tag is
# ".BR key1 \", \" key2 \" (type)\"": its words outside quotes are keys.
def keys(lines):
    out = set()
    for t in tags(lines):
        t = re.sub(r'"[^"]*"', ' ', unroff(t))
        out |= {w for w in t.split()[1:]}
    return out
found = keys(section(man5, '.SS run', '.SS')) - {'limits'}
compare('vigil.conf.5 run', found, site, lambda k: 'run.' + k,
        'is not an option the table lets a site set')
found = keys(section(man5, '.SS run.limits', '.SS'))
compare('vigil.conf.5 run.limits', found, limit, lambda k: 'run.limits.' + k,
        'is not an option the table lets a site cap')

for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
}

out=$(check_docs "$SCRATCH/rows" "$SCRATCH/help" "$doc/vigil.1" "$doc/vigil.conf.5" 2>&1); rc=$?
expect_eq "--help and the manual pages hold every option, and only those" 0 "$rc"
[ -z "$out" ] || printf '%s\n' "$out" >&2

# ---- the check can fail: one line out, or one option made up
# must_fail WHAT MESSAGE HELP MAN1 MAN5: the check fails, saying MESSAGE alone
must_fail() {
	local out rc
	out=$(check_docs "$SCRATCH/rows" "$3" "$4" "$5"); rc=$?
	expect_eq "$1 fails" 1 "$rc"
	expect_eq "$1: the message" "$2" "$out"
}
help=$SCRATCH/help man1=$doc/vigil.1 man5=$doc/vigil.conf.5

grep -v -- '--hook-timeout' "$help" > "$SCRATCH/help.less"
must_fail "a --help without --hook-timeout" "vigil run --help: --hook-timeout missing" \
	"$SCRATCH/help.less" "$man1" "$man5"

# the tag line of --hook-timeout (and its .TP) taken out of OPTIONS FOR RUN
python3 - "$man1" > "$SCRATCH/vigil.1.less" <<'PY'
import sys
lines = open(sys.argv[1], encoding='utf-8').read().split('\n')
i = next(i for i, l in enumerate(lines) if l.startswith('.BI \\-\\-hook\\-timeout '))
del lines[i - 1:i + 1]
sys.stdout.write('\n'.join(lines))
PY
must_fail "a vigil.1 without --hook-timeout" "vigil.1 OPTIONS FOR RUN: --hook-timeout missing" \
	"$help" "$SCRATCH/vigil.1.less" "$man5"

sed 's/^\.SH OPTIONS FOR RUN$/&\n.TP\n.BI \\-\\-stage\\-speed " N"\nMade up./' "$man1" \
	> "$SCRATCH/vigil.1.more"
must_fail "a vigil.1 with an option the table does not know" \
	"vigil.1 OPTIONS FOR RUN: --stage-speed is not an option of the table" \
	"$help" "$SCRATCH/vigil.1.more" "$man5"

# a key of the run section taken out (its tag and .TP), and one made up
sed '/^\.TP$/{N;/\n\.BR ckpt_confirm /d}' "$man5" > "$SCRATCH/vigil.conf.5.less"
must_fail "a vigil.conf.5 without run.ckpt_confirm" "vigil.conf.5 run: run.ckpt_confirm missing" \
	"$help" "$man1" "$SCRATCH/vigil.conf.5.less"
sed 's/^\.SS run$/&\n.TP\n.BR time_limit " (duration)"\nNot for a site./' "$man5" \
	> "$SCRATCH/vigil.conf.5.more"
must_fail "a vigil.conf.5 with a key no site may set" \
	"vigil.conf.5 run: run.time_limit is not an option the table lets a site set" \
	"$help" "$man1" "$SCRATCH/vigil.conf.5.more"

finish
