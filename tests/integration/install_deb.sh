#!/bin/bash
# The Debian package, as a site deploys it:
#   - `dpkg-buildpackage -us -uc -b` builds vigil and python3-vigil-timing
#     from a copy of the distributed tree (`make distdir`; nothing is
#     written into the source tree), without the unit tests (nocheck);
#   - lintian reports no error and no warning;
#   - vigil depends on the MPI runtime, hwloc, cJSON and libnuma, suggests
#     Slurm, and has its settings as a configuration file;
#   - `apt-get install ./vigil_*.deb ./python3-vigil-timing_*.deb` on this
#     machine; then from the installed files: vigil check, `import
#     vigil_timing` without PYTHONPATH, a 2-rank `vigil run` of the example
#     training, and the wrapper as slurmd's HealthCheckProgram;
#   - `apt-get purge` leaves none of the packages' files behind.
# The packages are purged however the test ends.  A machine where vigil is
# installed already fails the test, untouched.  Needs root (dpkg, the
# Slurm cluster), dpkg-dev, debhelper, dh-python and lintian; skips (77)
# without them, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"
. "$(dirname "$0")/install_lib.sh"

sl_require
for c in dpkg-buildpackage dpkg-checkbuilddeps dh lintian apt-get; do
	if ! command -v "$c" >/dev/null 2>&1; then
		echo "skip: $c not found (dpkg-dev, debhelper, dh-python, lintian)"
		exit 77
	fi
done
PKGS="vigil python3-vigil-timing"
export DEBIAN_FRONTEND=noninteractive

installed() {
	dpkg-query -W -f='${db:Status-Status}\n' "$1" 2>/dev/null | grep -qv '^not-installed$'
}
for p in $PKGS; do
	if installed "$p"; then
		fail "package $p is on this machine: this test installs and purges it; remove it first"
		finish
	fi
done
if [ -e /usr/bin/vigil ] || [ -e /usr/sbin/vigil-healthcheck ]; then
	fail "/usr/bin/vigil or /usr/sbin/vigil-healthcheck exists outside a package: this test would replace it"
	finish
fi

# Purged whatever happens from here; the EXIT trap of the cluster runs
# this one after its own.
purge() {
	local p left=
	for p in $PKGS; do
		installed "$p" && left="$left $p"
	done
	if [ -n "$left" ]; then
		# shellcheck disable=SC2086
		timeout -k 10 120 apt-get purge -y -q -o Dpkg::Lock::Timeout=60 $left >>"$SCRATCH/purge.log" 2>&1 ||
			timeout -k 10 60 dpkg --purge $left >>"$SCRATCH/purge.log" 2>&1
	fi
	for p in $PKGS; do
		installed "$p" && echo "FAIL: $p is still installed: dpkg --purge $p" >&2
	done
	[ -e /usr/bin/vigil ] && echo "FAIL: /usr/bin/vigil left behind" >&2
}
on_exit() {
	purge
	cleanup_scratch
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

inst_dirs || { fail "make print-install-dirs"; finish; }
V=${INST[VERSION]}
# apt's download user reads the packages: the directories above them are
# searchable (not writable) by others.
chmod 755 "$SCRATCH"
mkdir -m 755 "$SCRATCH/pkg"
if ! inst_make distdir distdir="$SCRATCH/pkg/vigil-$V" >"$SCRATCH/dist.log" 2>&1; then
	fail "make distdir: $(tail -5 "$SCRATCH/dist.log")"
	finish
fi

# 1. Build.
start=$SECONDS
(cd "$SCRATCH/pkg/vigil-$V" &&
	DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=$(nproc)" DEB_BUILD_PROFILES=nocheck \
		timeout -k 10 600 dpkg-buildpackage -us -uc -b) >"$SCRATCH/build.log" 2>&1
rc=$?
if [ "$rc" = 0 ]; then
	pass "dpkg-buildpackage -us -uc -b in $((SECONDS - start)) s"
else
	tail -n 40 "$SCRATCH/build.log" >&2
	fail "dpkg-buildpackage: $rc"
	finish
fi
arch=$(dpkg --print-architecture)
cd "$SCRATCH/pkg" || finish
deb=$(ls vigil_"$V"-*_"$arch".deb 2>/dev/null)
pydeb=$(ls python3-vigil-timing_"$V"-*_all.deb 2>/dev/null)
changes=$(ls vigil_"$V"-*_"$arch".changes 2>/dev/null)
expect_match "vigil and python3-vigil-timing built" '^vigil_.*\.deb python3-vigil-timing_.*_all\.deb$' "$deb $pydeb"

# 2. lintian, at its default level (as root it says so on stderr).
out=$(timeout -k 10 300 lintian "$changes" 2>&1); rc=$?
out=$(printf '%s\n' "$out" | grep -v '^running with root privileges')
expect_eq "lintian: no error, no warning" "0 " "$rc $(printf '%s\n' "$out" | grep -E '^[EW]: ')"
[ -z "$out" ] || printf 'lintian: %s\n' "$out"

# 3. What the packages declare.
dep=$(dpkg-deb -f "$deb" Depends)
for lib in 'libopenmpi[0-9]|libmpich[0-9]' 'mpi-default-bin' 'libhwloc[0-9]' 'libcjson[0-9]' 'libnuma[0-9]'; do
	expect_match "vigil depends on $lib" "(^|, )($lib)" "$dep"
done
expect_no_match "Slurm is no dependency" 'slurm' "$dep"
expect_match "Slurm is a suggestion" '(^|, )slurmd' "$(dpkg-deb -f "$deb" Suggests)"
expect_eq "the settings are vigil's configuration file" /etc/default/vigil-healthcheck \
	"$(dpkg-deb --ctrl-tarfile "$deb" | tar -xOf - ./conffiles)"
expect_match "the helper's package needs python3" '^python3:any' "$(dpkg-deb -f "$pydeb" Depends)"

# 4. Install on this machine.
if timeout -k 10 300 apt-get install -y -q -o Dpkg::Lock::Timeout=60 \
	"./$deb" "./$pydeb" >"$SCRATCH/apt.log" 2>&1; then
	pass "apt-get install ./$deb ./$pydeb"
else
	fail "apt-get install: $(tail -5 "$SCRATCH/apt.log")"
	finish
fi
files=$(dpkg -L $PKGS | sort -u | while IFS= read -r f; do [ -d "$f" ] || echo "$f"; done)
expect_eq "vigil in PATH is the package's" /usr/bin/vigil "$(command -v vigil)"
expect_eq "installed vigil runs" "vigil $V" "$(vigil --version 2>&1 | head -1)"
R=$SCRATCH/root
make_root "$R"
# shellcheck disable=SC2046
out=$(vigil check --sysfs-root "$R" $(pascal_flags) 2>&1); rc=$?
expect_eq "vigil check: healthy, silent" "0 " "$rc $out"
# Debian's python3, the one the package depends on (not one earlier in PATH).
out=$(cd "$SCRATCH" && env -u PYTHONPATH /usr/bin/python3 -c 'import vigil_timing; print(vigil_timing.__file__)' 2>&1)
expect_eq "import vigil_timing without PYTHONPATH" /usr/lib/python3/dist-packages/vigil_timing.py "$out"

# The example under `vigil run`, 2 ranks, from the installed files.
out=$(cd "$SCRATCH" && run_mpi -np 2 vigil run --tag-output --report "$SCRATCH/report.json" -- \
	/usr/share/vigil/examples/train_sim.py --iters 5 --iter-ms 20 --ckpt-dir "$SCRATCH/ck" 2>"$SCRATCH/run.err"); rc=$?
expect_eq "vigil run of the installed example, 2 ranks" 0 "$rc"
expect_eq "each rank's 5 timing lines" 10 "$(printf '%s\n' "$out" | grep -c 'this iteration hardware time is')"
expect_eq "the report says it succeeded" "0" \
	"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["exit_code"])' "$SCRATCH/report.json" 2>&1)"

# The wrapper as slurmd's HealthCheckProgram.  The nodes' /etc/default is
# a copy of this machine's (with the package's settings), and this test
# edits that copy as a site edits the file.
mkdir "$SCRATCH/default"
cp -p /etc/default/vigil-healthcheck "$SCRATCH/default/"
echo "VIGIL_CONFIG=$SCRATCH/vigil.json" >>"$SCRATCH/default/vigil-healthcheck"
export SL_ETC_DEFAULT=$SCRATCH/default
inst_healthcheck /usr/sbin/vigil-healthcheck

# 5. Purge: nothing of the packages stays, byte code included.
/usr/bin/python3 -c 'import vigil_timing' >/dev/null 2>&1  # as root: byte code written, for purge to remove
purge
for p in $PKGS; do
	installed "$p" && fail "$p still installed after purge"
done
left=$(for f in $files /usr/share/vigil /usr/share/doc/vigil /usr/share/doc/python3-vigil-timing \
	/usr/lib/python3/dist-packages/__pycache__/vigil_timing.*; do
	[ -e "$f" ] && echo "$f"
done)
expect_eq "apt-get purge leaves nothing behind" "" "$left"

finish
