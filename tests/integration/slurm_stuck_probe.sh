#!/bin/bash
# A storage probe stuck in the kernel, as on a dead NFS mount, under
# `vigil check` and under slurmd (contrib/slurm/vigil-healthcheck as the
# HealthCheckProgram of a one-node Slurm 22.05 cluster, tests/slurm/cluster.sh).
#
# The stuck probe: a small ext4 image, loop-mounted and frozen with
# fsfreeze(8).  Reading a frozen file system works; creating a file waits
# in the kernel, uninterruptibly (state D, in percpu_rwsem_wait) until it
# is thawed, and SIGKILL does not end the wait: what a probe does on a
# hard NFS mount whose server is gone.  A FIFO (the unit tests' stand-in)
# blocks in an interruptible open instead, which SIGKILL ends at once.
# The path is listed as writable in check.storage, so the probe creates a
# file there.  Needs root, loop devices, mkfs.ext4 and fsfreeze, as on a
# fresh Debian 12 machine; skips (77) without them, which the CI script
# counts as a failure.
#
#   - vigil check ends within check.timeout (2 s) plus a second, and its
#     output reaches EOF then: the stuck probe holds neither stdout nor
#     stderr (a reader waiting for EOF is what slurmd is);
#   - the next check says the path is still stuck, and starts no second
#     probe on it (one process stuck, not one more per run);
#   - under slurmd, every run ends within check.timeout plus a second
#     ("health_check poll timeout" never appears: slurmd waits 60 s for
#     EOF), the node is drained naming the path, and still one probe;
#   - thawed: the stuck probe ends, nothing of vigil is left, the check
#     passes and the node is resumed.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
for c in fsfreeze mkfs.ext4 losetup mount umount; do
	command -v "$c" >/dev/null 2>&1 || { echo "skip: no $c"; exit 77; }
done

img=$SCRATCH/fs.img
mnt=$SCRATCH/mnt
mounted=
frozen=
# Thawed and unmounted before anything else goes: a frozen file system
# left behind would hang whoever writes to it.
undo_mount() {
	if [ -n "$frozen" ]; then
		fsfreeze -u "$mnt" 2>/dev/null
		frozen=
	fi
	if [ -n "$mounted" ]; then
		umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
		mounted=
	fi
}
trap 'undo_mount; cleanup_scratch' EXIT
mkdir "$mnt" && truncate -s 16M "$img" && mkfs.ext4 -q -F "$img" >/dev/null 2>&1 ||
	{ echo "skip: cannot make an ext4 image"; exit 77; }
mount -o loop "$img" "$mnt" 2>/dev/null || { echo "skip: cannot loop-mount an image"; exit 77; }
mounted=1

freeze() { fsfreeze -f "$mnt" && frozen=1; }
thaw() { fsfreeze -u "$mnt" && frozen=; }

# The processes running this vigil binary in state D: stuck probes.
exe=$(readlink -f "$VIGIL")
stuck_count() {
	local p n=0
	for p in $(ps -eo pid=,stat= | awk '$2 ~ /^D/ { print $1 }'); do
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$exe" ] && n=$((n + 1))
	done
	echo "$n"
}
# Every process of this vigil binary, stuck or not (named vigil, or
# vigil-probe once marked).
vigil_count() {
	local p n=0
	for p in $(pgrep -x vigil; pgrep -x vigil-probe); do
		[ "$(readlink "/proc/$p/exe" 2>/dev/null)" = "$exe" ] && n=$((n + 1))
	done
	echo "$n"
}

cfg=$SCRATCH/vigil.json
cat >"$cfg" <<EOF
{"check": {"timeout": 2, "storage": {"paths": [
  {"path": "$mnt", "writable": true},
  {"path": "$SCRATCH", "writable": true}]}}}
EOF
chmod 644 "$cfg"

# check_timed OUT: `vigil check` with its output read until EOF by a
# reader that gives up after 15 s; prints "RC SECONDS READER_RC" (the
# reader's 124: no EOF in time).
check_timed() {
	local t0 t1 rrc
	t0=$(date +%s.%N)
	{ "$VIGIL" check --config "$cfg" 2>&1; echo "rc $?" >"$SCRATCH/rc"; } |
		timeout -k 1 15 cat >"$1"
	rrc=${PIPESTATUS[1]}
	t1=$(date +%s.%N)
	echo "$(sed -n 's/^rc //p' "$SCRATCH/rc") $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') $rrc"
}

# ---- vigil check on its own -------------------------------------------------
out=$("$VIGIL" check --config "$cfg" 2>&1)
expect_eq "healthy before the freeze" "0 " "$? $out"

freeze || fail "fsfreeze"
read -r rc secs rrc < <(check_timed "$SCRATCH/out1")
echo "first check: status $rc, EOF after $secs s: $(cat "$SCRATCH/out1")"
expect_eq "first check: pre-check failed" 80 "$rc"
expect_eq "first check: its output reached EOF" 0 "$rrc"
if awk -v s="$secs" 'BEGIN { exit !(s < 3.5) }'; then pass "first check ended within check.timeout + 1.5 s"
else fail "first check: EOF after $secs s (check.timeout is 2 s)"; fi
expect_match "first check names the path" "storage: $mnt timed out after 2 s" "$(cat "$SCRATCH/out1")"
sleep 0.5
expect_eq "one probe stuck" 1 "$(stuck_count)"

read -r rc secs rrc < <(check_timed "$SCRATCH/out2")
echo "second check: status $rc, EOF after $secs s: $(cat "$SCRATCH/out2")"
expect_eq "second check: pre-check failed" 80 "$rc"
expect_eq "second check: its output reached EOF" 0 "$rrc"
expect_match "second check: still stuck, said so" "storage: $mnt: .*still stuck" \
	"$(cat "$SCRATCH/out2")"
if awk -v s="$secs" 'BEGIN { exit !(s < 1.5) }'; then pass "second check did not wait for a new probe"
else fail "second check took $secs s"; fi
sleep 0.5
expect_eq "second check started no probe on it" 1 "$(stuck_count)"
# into a file: a pipe would wait for a stuck probe that holds it
timeout -k 1 15 "$VIGIL" check --json --config "$cfg" >"$SCRATCH/json" 2>/dev/null
expect_match "--json: the stuck probe's pid" '"stuck_pid":[[:space:]]*[0-9]+' "$(cat "$SCRATCH/json")"

thaw || fail "thaw"
for ((i = 0; i < 40; i++)); do
	[ "$(vigil_count)" = 0 ] && break
	sleep 0.25
done
expect_eq "thawed: nothing of vigil left" 0 "$(vigil_count)"
out=$("$VIGIL" check --config "$cfg" 2>&1)
expect_eq "thawed: healthy again" "0 " "$? $out"

# ---- under slurmd -----------------------------------------------------------
hc=$SCRATCH/vigil-healthcheck
cp "$TESTS_SRCDIR/../contrib/slurm/vigil-healthcheck" "$hc" && chmod 755 "$hc"
runs=$SCRATCH/runs.log
cat >"$SCRATCH/vigil-timed" <<SH
#!/bin/sh
t0=\$(date +%s.%N)
"$VIGIL" "\$@"
rc=\$?
echo "\$rc \$t0 \$(date +%s.%N)" >>"$runs"
exit \$rc
SH
chmod 755 "$SCRATCH/vigil-timed"
mkdir "$SCRATCH/default"
cat >"$SCRATCH/default/vigil-healthcheck" <<SH
# vigil-healthcheck's settings (a test cluster)
VIGIL=$SCRATCH/vigil-timed
VIGIL_CONFIG=$cfg
SH
chmod 644 "$SCRATCH/default/vigil-healthcheck"
export SL_ETC_DEFAULT=$SCRATCH/default
sl_up 1 "HealthCheckProgram=$hc" "HealthCheckInterval=2" || { fail "cluster"; finish; }

count_runs() {
	local n
	n=$(grep -c "^$1 " "$runs" 2>/dev/null)
	echo "${n:-0}"
}
wait_runs() {  # RC N SECONDS: until N runs ended with RC
	local i
	for ((i = 0; i < $3 * 4; i++)); do
		[ "$(count_runs "$1")" -ge "$2" ] && return 0
		sleep 0.25
	done
	return 1
}
wait_runs 0 1 30 || fail "slurmd did not run the check: $(sl_log n1 | grep -i health | tail -3)"

freeze || fail "fsfreeze"
t0=$(date +%s)
if sl_wait_node n1 'IDLE\+DRAIN|DRAINED|DRAINING' 20; then pass "n1 drained"
else fail "n1 not drained"; fi
expect_match "the reason names the path" "^vigil: storage: $mnt" "$(sl_node_field n1 Reason)"
# Runs keep coming: slurmd is not held for 60 s by each.
wait_runs 80 4 40 || fail "fewer than 4 failing runs in 40 s: $(cat "$runs")"
echo "runs in $(($(date +%s) - t0)) s of the freeze:"
cat "$runs"
slow=$(awk '$1 == 80 && $3 - $2 > 3.5' "$runs" | wc -l)
expect_eq "every failing run ended within check.timeout + 1.5 s" 0 "$slow"
expect_no_match "slurmd never waited for the check's output" 'health_check poll timeout' \
	"$(sl_log n1)"
expect_eq "one probe stuck, not one per run" 1 "$(stuck_count)"
expect_match "slurmd logged 'still stuck'" 'health_check failed: rc:80 output:.*still stuck' \
	"$(sl_log n1)"

thaw || fail "thaw"
if sl_wait_node n1 IDLE 30; then pass "n1 resumed once thawed"; else fail "n1 not resumed"; fi
for ((i = 0; i < 40; i++)); do
	[ "$(vigil_count)" = 0 ] && break
	sleep 0.25
done
expect_eq "thawed: no stuck probe left" 0 "$(stuck_count)"

sl_down || fail "the cluster left something behind"
undo_mount
finish
