#!/bin/bash
# `make install` into a DESTDIR, then what was installed, run from there:
#   - exactly the files a node needs, with their modes, in the directories
#     configured (bindir, sbindir, sysconfdir/default, datadir/vigil, the
#     Python site directory, mandir, docdir);
#   - the health-check wrapper and the sbatch template name the installed
#     vigil and settings; the settings are a commented sample;
#   - in a mount namespace of this test where the DESTDIR's files appear
#     at their installed paths (overlays; nothing changes for the rest of
#     the machine): the installed vigil runs, `import vigil_timing` works
#     without PYTHONPATH when python3 searches the configured directory,
#     and slurmd runs the installed wrapper as its HealthCheckProgram,
#     which drains and resumes a node with the installed vigil;
#   - a second install keeps changed settings; uninstall removes exactly
#     what was installed, and keeps changed settings;
#   - contrib/python installs into a virtual environment with pip, from
#     the source tree, without a package index.
# Needs root (mounts, the Slurm cluster); skips (77) without it, which the
# CI script counts as a failure.
if [ "${VIGIL_INSTALL_NS:-}" != 1 ]; then
	if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1; then
		VIGIL_INSTALL_NS=1 exec unshare -m --propagation private "${BASH:-bash}" "$0" "$@"
	fi
	echo "skip: needs root and unshare (a mount namespace)"
	exit 77
fi
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"
. "$(dirname "$0")/install_lib.sh"

sl_require
export PYTHONDONTWRITEBYTECODE=1
CONTRIB=$TESTS_SRCDIR/../contrib

inst_dirs || { fail "make print-install-dirs"; finish; }
D=$SCRATCH/dest
if inst_make install DESTDIR="$D" >"$SCRATCH/install.log" 2>&1; then
	pass "make install DESTDIR=..."
else
	fail "make install: $(tail -5 "$SCRATCH/install.log")"
	finish
fi

# 1. Exactly these files.
expect_eq "the files installed" "$(inst_files)" \
	"$(cd "$D" && find . ! -type d | sed 's|^\.||' | sort)"
modes() {
	local f
	for f in "$@"; do
		stat -c '%a' "$D$f"
	done | paste -sd' '
}
p=${INST[pkgdatadir]}
expect_eq "programs and scripts 755" "755 755 755 755 755 755 755" \
	"$(modes "${INST[bindir]}/vigil" "${INST[sbindir]}/vigil-healthcheck" "$p/slurm/vigil.sbatch" \
		"$p/notify/mail.sh" "$p/notify/webhook.sh" "$p/examples/train_sim.py" "$p/examples/ddp_train.py")"
expect_eq "settings and module 644" "644 644" \
	"$(modes "${INST[sysconfdir]}/default/vigil-healthcheck" "${INST[pythondir]}/vigil_timing.py")"

# 2. The installed paths in the files that name them, and nothing else
#    changed from contrib/.
hc=${INST[sbindir]}/vigil-healthcheck
settings=${INST[sysconfdir]}/default/vigil-healthcheck
expect_eq "the wrapper: only the vigil and the settings' directory set" \
	"> VIGIL=${INST[bindir]}/vigil|> SYSCONFDIR=${INST[sysconfdir]}" \
	"$(diff "$CONTRIB/slurm/vigil-healthcheck" "$D$hc" | grep '^>' | paste -sd'|')"
expect_eq "the template: only the vigil" "> VIGIL=\${VIGIL:-${INST[bindir]}/vigil}" \
	"$(diff "$CONTRIB/slurm/vigil.sbatch" "$D$p/slurm/vigil.sbatch" | grep '^>')"
expect_eq "the settings: comments only" "" "$(grep -v '^#' "$D$settings" | grep .)"
expect_match "the settings name the installed vigil" "^#VIGIL=${INST[bindir]}/vigil\$" "$(cat "$D$settings")"
expect_eq "the sample kept for comparison is the same" "" \
	"$(cmp "$D$settings" "$D$p/slurm/vigil-healthcheck.default" 2>&1)"

# The wrapper sources its settings as root, and hands the default vigil.json
# to vigil: only files root alone can have written, wherever SYSCONFDIR is.
# A copy of the installed wrapper with SYSCONFDIR in this scratch
# directory and a vigil that prints its arguments.
E=$SCRATCH/etc
mkdir -m 755 "$E" "$E/default" "$SCRATCH/open"
chmod 1777 "$SCRATCH/open"
printf '#!/bin/sh\necho "$@"\n' >"$SCRATCH/echo-vigil" && chmod 755 "$SCRATCH/echo-vigil"
sed -e "s|^SYSCONFDIR=.*|SYSCONFDIR=$E|" -e "s|^VIGIL=.*|VIGIL=$SCRATCH/echo-vigil|" "$D$hc" >"$SCRATCH/hc"
chmod 755 "$SCRATCH/hc"
wrap() { env -i SLURMD_NODENAME=n1 "$SCRATCH/hc" 2>&1; }
printf 'VIGIL_CHECK_OPTS="--nic ib0"\n' >"$E/default/vigil-healthcheck"
chmod 644 "$E/default/vigil-healthcheck"
expect_eq "root's settings are read" "check --drain --undrain --nic ib0" "$(wrap)"
chmod 777 "$E/default"
out=$(wrap); rc=$?
expect_eq "settings in a directory others may write: refused" 78 "$rc"
expect_match "and said so" "^vigil-healthcheck: $E/default/vigil-healthcheck must be a file of root's .* in a directory only root may write" "$out"
chmod 755 "$E/default"
mv "$E/default/vigil-healthcheck" "$SCRATCH/open/settings"
ln -s "$SCRATCH/open/settings" "$E/default/vigil-healthcheck"
out=$(wrap); rc=$?
expect_eq "settings linked into a directory others may write: refused" 78 "$rc"
rm "$E/default/vigil-healthcheck"
echo '{}' >"$E/vigil.json"
chmod 666 "$E/vigil.json"
out=$(wrap); rc=$?
expect_eq "a default vigil.json others may write: refused" "78" "$rc"
chmod 644 "$E/vigil.json"
expect_eq "root's default vigil.json is used" "check --drain --undrain --config $E/vigil.json" "$(wrap)"

# 3. As installed.  The Python site directory: on python3's search path
#    when python3 searches a directory under the prefix (/usr, /usr/local),
#    as configure found; otherwise configure warned and PYTHONPATH is
#    needed.
searched=$(python3 -I -c 'import sys
lib = sys.argv[1].rstrip("/") + "/lib/"
print("yes" if any(d.startswith(lib) and d.endswith("-packages") for d in sys.path) else "no")' "${INST[prefix]}")
onpath=$(python3 -I -c 'import sys; print("yes" if sys.argv[1] in sys.path else "no")' "${INST[pythondir]}")
expect_eq "prefix ${INST[prefix]}: the helper's directory is on python3's path as configure found" \
	"$searched" "$onpath"

# Overlays: each topmost existing directory above the installed files
# shows the DESTDIR's files over its own, in this namespace only.
tops=$(cd "$D" && find . ! -type d | sed 's|^\.||' | while IFS= read -r f; do
	d=${f%/*}
	while [ -n "$d" ] && [ ! -d "$d" ]; do d=${d%/*}; done
	echo "${d:-/}"
done | sort -u | awk '{ for (i = 1; i <= n; i++) if (index($0, k[i] "/") == 1) next; k[++n] = $0; print }')
for t in $tops; do
	if [ "$t" = / ]; then
		fail "no directory of the configured prefix exists but /: configure --prefix with a parent that exists"
		finish
	fi
	mount -t overlay vigil-install -o "lowerdir=$D$t:$t" "$t" || { fail "overlay on $t"; finish; }
done
pass "installed files at their paths: $(echo $tops)"

expect_eq "installed vigil runs" "vigil ${INST[VERSION]}" "$("${INST[bindir]}/vigil" --version 2>&1 | head -1)"
R=$SCRATCH/root
make_root "$R"
# shellcheck disable=SC2046
out=$("${INST[bindir]}/vigil" check --sysfs-root "$R" $(pascal_flags) 2>&1); rc=$?
expect_eq "installed vigil check: healthy, silent" "0 " "$rc $out"
if [ "$searched" = yes ]; then
	out=$(cd "$SCRATCH" && env -u PYTHONPATH python3 -c 'import vigil_timing; print(vigil_timing.__file__)' 2>&1)
	expect_eq "import vigil_timing without PYTHONPATH" "${INST[pythondir]}/vigil_timing.py" "$out"
else
	out=$(cd "$SCRATCH" && env -u PYTHONPATH python3 -c 'import vigil_timing' 2>&1); rc=$?
	expect_eq "prefix ${INST[prefix]} is not python3's: import needs PYTHONPATH" 1 "$rc"
	out=$(cd "$SCRATCH" && PYTHONPATH=${INST[pythondir]} python3 -c 'import vigil_timing; print(vigil_timing.__file__)' 2>&1)
	expect_eq "import vigil_timing with PYTHONPATH" "${INST[pythondir]}/vigil_timing.py" "$out"
fi
out=$(cd "$SCRATCH" && PYTHONPATH=${INST[pythondir]} python3 -c '
from vigil_timing import IterationTimer
t = IterationTimer(device="cpu")
with t.iteration():
    sum(range(1000))' 2>&1)
expect_match "the installed helper prints the timing line" \
	'^this iteration hardware time is [0-9.]+ and e2e time is [0-9.e-]+ ms\.$' "$out"

# slurmd runs the installed wrapper; its settings are the installed file,
# which a site edits: here, to name vigil's configuration.  The overlays
# come down while the DESTDIR changes (an overlay's lower directory must
# not change under it).
for t in $tops; do umount "$t"; done
cp -p "$D$settings" "$SCRATCH/settings.sample"
echo "VIGIL_CONFIG=$SCRATCH/vigil.json" >>"$D$settings"
for t in $tops; do mount -t overlay vigil-install -o "lowerdir=$D$t:$t" "$t"; done
inst_healthcheck "$hc"
for t in $tops; do umount "$t" || fail "umount $t"; done

# 4. Install again: the changed settings stay.  Uninstall: all gone but
#    them; an unchanged install leaves nothing at all.
cp -p "$D$settings" "$SCRATCH/settings.changed"
out=$(inst_make install DESTDIR="$D" 2>&1) || fail "second make install: $out"
expect_match "second install says it kept the settings" "^kept $D$settings as it is" "$out"
expect_eq "second install kept them" "" "$(cmp "$D$settings" "$SCRATCH/settings.changed" 2>&1)"
inst_make uninstall DESTDIR="$D" >"$SCRATCH/uninstall.log" 2>&1 || fail "make uninstall: $(tail -3 "$SCRATCH/uninstall.log")"
expect_eq "uninstall keeps changed settings, removes the rest" "$settings" \
	"$(cd "$D" && find . ! -type d | sed 's|^\.||')"
rm -f "$D$settings"
inst_make install DESTDIR="$D" >/dev/null 2>&1 || fail "third make install"
expect_eq "a fresh install has the sample" "" "$(cmp "$D$settings" "$SCRATCH/settings.sample" 2>&1)"
inst_make uninstall DESTDIR="$D" >/dev/null 2>&1 || fail "second make uninstall"
expect_eq "uninstall leaves nothing" "" "$(cd "$D" && find . ! -type d)"
# (the prefix itself and the directories above it may hold the name, as
# make distcheck's .../vigil-VERSION/_inst does: they are not vigil's)
expect_eq "nor vigil's directories" "" "$(cd "$D" && find . -name '*vigil*' | while IFS= read -r p; do
	case "${INST[prefix]}/" in "${p#.}/"*) ;; *) echo "$p" ;; esac
done)"

# 5. pip, in a virtual environment, from the source tree (a copy: building
#    writes nothing there, and the copy shows it), without an index.
cp -r "$CONTRIB/python" "$SCRATCH/pysrc"
before=$(cd "$SCRATCH/pysrc" && find . | sort)
if python3 -m venv "$SCRATCH/venv" >"$SCRATCH/venv.log" 2>&1 &&
	timeout -k 5 120 "$SCRATCH/venv/bin/python" -m pip install --no-index --disable-pip-version-check \
		-q "$SCRATCH/pysrc" >>"$SCRATCH/venv.log" 2>&1; then
	pass "pip install contrib/python, no index"
else
	fail "pip install: $(tail -5 "$SCRATCH/venv.log")"
fi
out=$(cd "$SCRATCH" && env -u PYTHONPATH "$SCRATCH/venv/bin/python" -c 'import vigil_timing; print(vigil_timing.__file__)' 2>&1)
expect_match "imported from the environment" "^$SCRATCH/venv/lib/python3[.0-9]*/site-packages/vigil_timing.py\$" "$out"
expect_eq "the distribution's version is vigil's" "${INST[VERSION]}" \
	"$("$SCRATCH/venv/bin/python" -m pip show vigil-timing 2>/dev/null | sed -n 's/^Version: //p')"
expect_eq "nothing written into the source" "$before" "$(cd "$SCRATCH/pysrc" && find . | sort)"

finish
