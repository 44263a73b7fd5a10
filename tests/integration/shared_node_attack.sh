#!/bin/bash
# Another local user (nobody) attacks root running vigil on a shared node,
# through what it may plant in a sticky directory like /tmp; vigil refuses
# and says which component and why, and nothing of root's is touched:
#   1. --run-dir through nobody's link to a directory of root's (DeepSpeed
#      mode): refused (64) naming the link; nothing made behind it; a
#      private --run-dir works, the hostfile written inside it;
#   2. --output-dir of a batch sub-task through nobody's link, or where
#      nobody's 0777 sweep-0 holds a link to a root file: refused (64);
#   3. check.boards.nvml_library as nobody's link to a good library, or in
#      a directory of nobody's: not loaded (the warning says why);
#   4. a --config of nobody's or writable by others (78), a --hook script
#      of nobody's or 0777 (64, not run, also as `bash FILE`), a --notify
#      program of nobody's (64), a hook of nobody's in the configuration
#      (78);
#   5. node logs of a hidden node (--output coordinator): 0700, 0600;
#   6. an event log with another name (a hard link) is refused; a
#      configuration nested 100,000 deep is said to be nested too deeply.
# Needs root (runuser); skips (77) without it, which the CI script counts
# as a failure.
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ] || ! command -v runuser >/dev/null || ! id nobody >/dev/null 2>&1; then
	echo "skip: needs root, runuser and the user nobody"
	exit 77
fi
: "${FAKEVENDOR_DIR:?FAKEVENDOR_DIR must name the fake vendor libraries}"
run() { timeout -k 5 60 "$VIGIL" run --mode single --precheck off "$@"; }
as_nobody() { runuser -u nobody -- "$@"; }
chmod 0755 "$SCRATCH"
SHARED="$SCRATCH/tmp"          # the node's /tmp, as far as this test goes
mkdir -m 1777 "$SHARED"
ROOTS="$SCRATCH/roots"         # a directory of root's that nobody may not write
mkdir -m 0755 "$ROOTS"
echo precious > "$ROOTS/victim"
# everything nobody makes is under $SCRATCH: lib.sh's trap removes it

# 1. --run-dir through nobody's link: the issue's /tmp/L -> root's directory.
as_nobody ln -s "$ROOTS" "$SHARED/L"
out=$(run --mode deepspeed --run-dir "$SHARED/L/rd" -- sh -c 'cat "$VIGIL_HOSTFILE"' 2>&1); rc=$?
expect_eq "run dir through nobody's link: refused" 64 "$rc"
expect_match "run dir through nobody's link: the link named, and why" \
	"$SHARED/L is a symbolic link of another user \\(uid [0-9]+\\)" "$out"
expect_eq "run dir through nobody's link: nothing made behind it" no \
	"$(test -e "$ROOTS/rd" && echo yes || echo no)"
as_nobody mkdir -m 0777 "$SHARED/open"
out=$(run --mode deepspeed --run-dir "$SHARED/open/rd" --dry-run -- deepspeed t.py 2>&1); rc=$?
expect_eq "run dir in nobody's 0777 directory: refused" 64 "$rc"
expect_match "run dir in nobody's 0777 directory: why" "$SHARED/open is a directory of another user" "$out"
out=$(run --mode deepspeed --run-dir "$SHARED/mine" -- sh -c \
	'stat -c "%a %U" "${VIGIL_HOSTFILE%/*}"; cat "$VIGIL_HOSTFILE"' 2>/dev/null); rc=$?
expect_eq "private run dir: job exit" 0 "$rc"
expect_eq "private run dir: 0700, root's" "700 root" "$(printf '%s\n' "$out" | head -1)"
expect_match "private run dir: the hostfile in it" 'slots=' "$out"
expect_eq "private run dir: made by vigil, gone at the end" no \
	"$(test -e "$SHARED/mine" && echo yes || echo no)"

# 2. --output-dir of a batch sub-task.
cat > "$SCRATCH/sweep.json" <<'EOF'
{"name": "sweep", "tasks": [{"command": ["sh", "-c", "echo pwned > \"$VIGIL_OUTPUT_DIR/result.txt\""]}]}
EOF
as_nobody ln -s "$ROOTS" "$SHARED/outA"
out=$(run --batch "$SCRATCH/sweep.json" --batch-index 0 --output-dir "$SHARED/outA" 2>&1); rc=$?
expect_eq "output dir through nobody's link: refused" 64 "$rc"
expect_match "output dir through nobody's link: why" "$SHARED/outA is a symbolic link of another user" "$out"
expect_eq "output dir through nobody's link: no sweep-0 in root's directory" no \
	"$(test -e "$ROOTS/sweep-0" && echo yes || echo no)"
as_nobody mkdir -m 0777 "$SHARED/outB" "$SHARED/outB/sweep-0"
as_nobody ln -s "$ROOTS/victim" "$SHARED/outB/sweep-0/result.txt"
out=$(run --batch "$SCRATCH/sweep.json" --batch-index 0 --output-dir "$SHARED/outB" 2>&1); rc=$?
expect_eq "nobody's 0777 output dir: refused" 64 "$rc"
expect_match "nobody's 0777 output dir: why" "$SHARED/outB is a directory of another user" "$out"
expect_eq "nobody's 0777 output dir: root's file untouched" precious "$(cat "$ROOTS/victim")"
mkdir -m 0755 "$SCRATCH/out"
run --batch "$SCRATCH/sweep.json" --batch-index 0 --output-dir "$SCRATCH/out" >/dev/null 2>&1; rc=$?
expect_eq "a safe output dir: the sub-task runs" "0 pwned" "$rc $(cat "$SCRATCH/out/sweep-0/result.txt" 2>&1)"

# 3. A vendor library through nobody's link, or in nobody's directory: the
# script would fail the check (exit 80) if the library were loaded.
R="$SCRATCH/root"
make_root "$R"
export VIGIL_FAKE_VENDOR="$SCRATCH/script"
printf 'nvidia 0 bus 0000:04:00.0\nnvidia 1 bus 0000:07:00.0\nnvidia 0 remap.pending 1\n' \
	> "$VIGIL_FAKE_VENDOR"
check_with() {
	printf '{"check": {"boards": {"nvml_library": "%s"}}}\n' "$1" > "$SCRATCH/lib.json"
	out=$(timeout -k 5 60 "$VIGIL" check -v --sysfs-root "$R" $(pascal_flags) \
		--config "$SCRATCH/lib.json" 2>&1)
}
check_with "$FAKEVENDOR_DIR/libnvidia-ml.so.1"; rc=$?
expect_eq "vendor library of root's: loaded (the script fails the check)" 80 "$rc"
as_nobody ln -s "$FAKEVENDOR_DIR/libnvidia-ml.so.1" "$SHARED/nvml.so"
check_with "$SHARED/nvml.so"; rc=$?
expect_eq "vendor library through nobody's link: not loaded" 0 "$rc"
expect_match "vendor library through nobody's link: why" \
	"refused: $SHARED/nvml.so is a symbolic link of another user" "$out"
as_nobody mkdir "$SHARED/libs"
cp "$FAKEVENDOR_DIR/libnvidia-ml.so.1" "$SHARED/libs/nvml.so"
check_with "$SHARED/libs/nvml.so"; rc=$?
expect_eq "root's library in nobody's directory: not loaded" 0 "$rc"
expect_match "root's library in nobody's directory: why" \
	"$SHARED/libs is a directory of another user" "$out"
unset VIGIL_FAKE_VENDOR

# 4. What root runs or reads, of nobody's or writable by others.
printf '#!/bin/sh\ntouch %s/ran\n' "$SCRATCH" > "$SHARED/hook.sh"
chmod 0755 "$SHARED/hook.sh"
chown nobody "$SHARED/hook.sh"
for spec in "end=$SHARED/hook.sh" "end=bash $SHARED/hook.sh" "end:warn=env X=1 $SHARED/hook.sh"; do
	out=$(run --hook "$spec" -- true 2>&1); rc=$?
	expect_eq "hook of nobody's ($spec): refused" 64 "$rc"
	expect_match "hook of nobody's ($spec): why" \
		"$SHARED/hook.sh belongs to another user \\(uid [0-9]+\\)" "$out"
done
chown root "$SHARED/hook.sh"
chmod 0777 "$SHARED/hook.sh"
out=$(run --hook "end=$SHARED/hook.sh" -- true 2>&1); rc=$?
expect_eq "hook writable by others: refused" 64 "$rc"
expect_match "hook writable by others: why" "$SHARED/hook.sh is writable by others \\(mode 0777\\)" "$out"
expect_eq "refused hooks: never run" no "$(test -e "$SCRATCH/ran" && echo yes || echo no)"
chmod 0755 "$SHARED/hook.sh"
run --hook "end=$SHARED/hook.sh" -- true >/dev/null 2>&1; rc=$?
expect_eq "hook of root's alone: runs" "0 yes" "$rc $(test -e "$SCRATCH/ran" && echo yes || echo no)"
chown nobody "$SHARED/hook.sh"
out=$(run --notify "$SHARED/hook.sh" -- true 2>&1); rc=$?
expect_eq "notifier of nobody's: refused" 64 "$rc"
expect_match "notifier of nobody's: why" "--notify refused: $SHARED/hook.sh belongs to another user" "$out"
printf '{"hooks": [{"phase": "end", "command": "sh %s/hook.sh"}]}\n' "$SHARED" > "$SCRATCH/hooks.json"
out=$(run --config "$SCRATCH/hooks.json" -- true 2>&1); rc=$?
expect_eq "configuration's hook of nobody's: refused" 78 "$rc"
expect_match "configuration's hook of nobody's: why" "hooks\\[0\\]\\.command: refused: $SHARED/hook.sh" "$out"
echo '{}' > "$SHARED/cfg.json"
chown nobody "$SHARED/cfg.json"
out=$(run --config "$SHARED/cfg.json" -- true 2>&1); rc=$?
expect_eq "configuration of nobody's: refused" 78 "$rc"
expect_match "configuration of nobody's: why" "$SHARED/cfg.json belongs to another user" "$out"
chown root "$SHARED/cfg.json"
chmod 0666 "$SHARED/cfg.json"
out=$(run --config "$SHARED/cfg.json" -- true 2>&1); rc=$?
expect_eq "configuration writable by others: refused" 78 "$rc"
expect_match "configuration writable by others: why" "is writable by others \\(mode 0666\\)" "$out"

# 5. A hidden node's log: the user's alone.
mkdir -m 0755 "$SCRATCH/work"
(cd "$SCRATCH/work" && umask 022 && timeout -k 5 120 "$MPIRUN" --oversubscribe -np 2 \
	"$VIGIL" run --precheck off --output coordinator \
	-- sh -c 'echo line') >/dev/null 2>&1; rc=$?
expect_eq "node logs: job exit" 0 "$rc"
logs=$(echo "$SCRATCH"/work/vigil-logs.*)
expect_eq "node logs: the directory 0700, the file 0600" "700 600" \
	"$(stat -c %a "$logs" 2>&1) $(stat -c %a "$logs"/*.out 2>&1 | sort -u | paste -sd' ')"

# 6. The event log with another name; a configuration nested too deeply.
ln "$ROOTS/victim" "$SHARED/events.jsonl"
out=$(run --events "$SHARED/events.jsonl" -- true 2>&1)
expect_match "event log with a hard link: refused" "a file with 2 hard links" "$out"
expect_eq "event log with a hard link: the other name untouched" precious "$(cat "$ROOTS/victim")"
python3 -c 'print("{\"check\": " + "[" * 100000 + "]" * 100000 + "}")' > "$SCRATCH/deep.json"
out=$(run --config "$SCRATCH/deep.json" -- true 2>&1); rc=$?
expect_eq "configuration nested too deeply: exit" 78 "$rc"
expect_match "configuration nested too deeply: said so, with the limit" \
	"nested too deeply \\(more than 1000 levels" "$out"

finish
