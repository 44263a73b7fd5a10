#!/bin/bash
# vigil run's options: one duration syntax, floors on intervals, the time
# limit's traps, the configuration's "run" section under the command line
# and the site's limits over both; and what vigil refuses up front: a
# FIFO as a file, a closed stdout or stderr, a NUL in the configuration,
# a node name that is not a host name.
. "$(dirname "$0")/lib.sh"

run() { timeout -k 5 60 "$VIGIL" run --mode single --precheck off "$@"; }
ck="$SCRATCH/ckpt"

# ---- durations
out=$(run -v --grace 2m -- true 2>&1); rc=$?
expect_eq "--grace 2m accepted" 0 "$rc"
expect_match "--grace 2m is 120 s" '^vigil run: --grace 120 s \(command line\)$' "$out"
# -v names each change of phase: the agent's, the coordinator's, the node's
expect_match "-v: the agent's phases by name" 'agent: [a-z]+ -> run \(launch\)' "$out"
expect_match "-v: the coordinator's phases by name" 'coordinator: [a-z]+ -> running' "$out"
expect_match "-v: the node's phases by name" 'node: [a-z]+ -> running' "$out"
out=$(run -v --heartbeat 1:30 --heartbeat-timeout 0-00:05:00 -- true 2>&1); rc=$?
expect_eq "MM:SS and D-HH:MM:SS accepted" 0 "$rc"
expect_match "heartbeat-timeout 300 s" '^vigil run: --heartbeat-timeout 300 s' "$out"

# --time-limit 3 days, unquoted: not a 3-second limit running `days`.
out=$(run --time-limit 3 days -- touch "$SCRATCH/ran" 2>&1); rc=$?
expect_eq "--time-limit 3 days refused" 64 "$rc"
expect_match "and how to write it" "--time-limit 3 days: the unit belongs to the number, as in --time-limit 3d; as written, 'days' would be run as the command" "$out"
expect_no_match "no warning about 3 seconds first" 'is 3 seconds' "$out"
if [ -e "$SCRATCH/ran" ]; then fail "the command ran"; else pass "nothing ran"; fi
out=$(run --time-limit "3 days" -- true 2>&1); rc=$?
expect_eq "--time-limit '3 days' refused" 64 "$rc"
expect_match "with the hint" "got '3 days'; write 3d, without a space" "$out"
# a bare number is seconds: said when it looks like minutes were meant
out=$(run --time-limit 30 --ckpt-lead 5 -- true 2>&1); rc=$?
expect_eq "--time-limit 30 runs" 0 "$rc"
expect_match "bare number warned" "warning: --time-limit 30 is 30 seconds .*write 30m, 30h or 30d" "$out"
out=$(run --time-limit 2h --ckpt-lead 5 -- true 2>&1); rc=$?
expect_no_match "no warning with a unit" 'warning' "$out"
# a lead at or above the limit leaves no time
out=$(run --time-limit 1m --ckpt-lead 1m -- true 2>&1); rc=$?
expect_eq "lead = limit refused" 64 "$rc"
expect_match "lead leaves no time" "--ckpt-lead \(60 s\) leaves no time: it is not shorter than --time-limit \(60 s\)" "$out"
out=$(run --time-limit 20s -- true 2>&1); rc=$?
expect_eq "default lead above the limit refused" 64 "$rc"
expect_match "the default named" "--ckpt-lead \(60 s, the default\) leaves no time" "$out"

# ---- floors: an interval that would spin is refused, and says why
out=$(run --heartbeat 1e-300 -- true 2>&1); rc=$?
expect_eq "--heartbeat 1e-300 refused" 64 "$rc"
expect_match "not a duration" "--heartbeat needs a duration: .* got '1e-300'" "$out"
out=$(run --heartbeat 0.001 -- true 2>&1); rc=$?
expect_eq "--heartbeat 0.001 refused" 64 "$rc"
expect_match "below the floor, and why" "--heartbeat: 0.001 s is below the minimum of 0.1 s: a shorter heartbeat" "$out"
out=$(run --perf-interval 0 -- true 2>&1); rc=$?
expect_eq "--perf-interval 0 refused" 64 "$rc"
out=$(run --inspect-interval 0 -- true 2>&1); rc=$?
expect_eq "--inspect-interval 0 is off" 0 "$rc"

# ---- the configuration's run section, under the command line
cat > "$SCRATCH/site.json" <<'EOF'
{"run": {"tag_output": true, "heartbeat": "2s", "max_resumes": 3,
         "limits": {"grace": "1s", "max_resumes": 5}}}
EOF
out=$(VIGIL_NODE_NAME=nodeA run --config "$SCRATCH/site.json" -- echo hello 2>/dev/null); rc=$?
expect_eq "site config run" 0 "$rc"
expect_eq "tag_output from the file" "[nodeA:0] hello" "$out"
out=$(run -v --config "$SCRATCH/site.json" --heartbeat 3 --max-resumes 9 -- true 2>&1); rc=$?
expect_match "the file's value shown with its source" "^vigil run: --tag-output true \(run.tag_output in $SCRATCH/site.json\)$" "$out"
expect_match "a default above a limit lowered" "^vigil run: --grace 1 s \(default, lowered to the site's limit\)$" "$out"
expect_match "the command line over the file" '^vigil run: --heartbeat 3 s \(command line\)$' "$out"
expect_match "a flag above the limit: clamped, said" "warning: --max-resumes 9 is above the site's limit of 5 \(run.limits.max_resumes in $SCRATCH/site.json\): using 5" "$out"
# the limit holds: a training that ignores SIGTERM is killed after 1 s, not 30
log="$SCRATCH/grace.out"
start=$(date +%s%N)
"$VIGIL" run --mode single --precheck off --config "$SCRATCH/site.json" --grace 30 -- \
	"$SIM" --iters 100000 --iter-ms 10 --ignore-term --ckpt-dir "$ck" >"$log" 2>&1 &
agent=$!
wait_for "$log" '^\[.*\] ready ' 10
kill -TERM "$agent"
wait "$agent"; rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
expect_eq "killed after the site's grace" 137 "$rc"
expect_match "the clamp was said" "--grace 30 s is above the site's limit of 1 s" "$(cat "$log")"
if [ "$ms" -lt 8000 ]; then pass "site grace honoured (${ms} ms)"; else fail "took ${ms} ms"; fi
no_leftovers "after the site's grace" "$ck"
# a file that contradicts its own limit, a key that is not site-wide
printf '{"run": {"grace": "5m", "limits": {"grace": 60}}}\n' > "$SCRATCH/contra.json"
out=$(run --config "$SCRATCH/contra.json" -- true 2>&1); rc=$?
expect_eq "value above its own limit" 78 "$rc"
expect_match "named" "contra.json: run.grace: 300 s is above run.limits.grace \(60 s\)" "$out"
printf '{"run": {"time_limit": "2h"}}\n' > "$SCRATCH/job.json"
out=$(run --config "$SCRATCH/job.json" -- true 2>&1); rc=$?
expect_eq "a job's own option is not site-wide" 78 "$rc"
expect_match "unknown key, valid ones listed" "run.time_limit: unknown key \(valid: mode, precheck, grace" "$out"
# templates: the job and the user in the event log's name
printf '{"run": {"events": "%s/ev-%%u-%%j.jsonl"}}\n' "$SCRATCH" > "$SCRATCH/tmpl.json"
SLURM_JOB_ID=4242 run --config "$SCRATCH/tmpl.json" -- true >/dev/null 2>&1
expect_eq "events path from the template" 1 "$(ls "$SCRATCH"/ev-*-4242.jsonl 2>/dev/null | wc -l)"
out=$(SLURM_JOB_ID='../../x' run --config "$SCRATCH/tmpl.json" -- true 2>&1); rc=$?
expect_eq "an unsafe job id refused in a path" 64 "$rc"

# ---- files that are not files: refused, never waited on
mkfifo "$SCRATCH/fifo"
start=$(date +%s)
out=$(timeout -k 2 20 "$VIGIL" check --config "$SCRATCH/fifo" 2>&1); rc=$?
expect_eq "FIFO as --config refused" 78 "$rc"
expect_match "named" "fifo: not a regular file \(a FIFO or pipe\)" "$out"
out=$(timeout -k 2 20 "$VIGIL" check --events "$SCRATCH/fifo" --topology "$PASCAL" --sysfs-root "$SCRATCH" 2>&1); rc=$?
expect_match "FIFO as check --events: refused, not waited on" "cannot write events to .*fifo: a FIFO that nobody reads" "$out"
out=$(run --events "$SCRATCH/fifo" -- echo done 2>&1); rc=$?
expect_eq "FIFO as run --events: the job runs" 0 "$rc"
if [ $(( $(date +%s) - start )) -lt 15 ]; then pass "no FIFO blocked"; else fail "a FIFO blocked"; fi
# a reader present: a pipeline's /dev/stdout takes the events
out=$(run --events /dev/stdout -- true 2>/dev/null | grep -c '"kind":"job"')
expect_eq "events to /dev/stdout in a pipeline" 1 "$out"

# ---- a closed stdout or stderr is named, not "out of memory"
out=$(run -- echo hi 2>&1 >&-); rc=$?
expect_eq "closed stdout refused" 64 "$rc"
expect_match "closed stdout named" '^vigil: standard output is closed; .*redirect it' "$out"
out=$(run -- echo hi 2>&-); rc=$?
expect_eq "closed stderr refused" 64 "$rc"
expect_match "closed stderr named on stdout" '^vigil: standard error is closed' "$out"

# ---- a NUL character in the configuration
printf '{"check": {"nics": {"required": ["eth\\u0000x"]}}}\n' > "$SCRATCH/nul.json"
out=$("$VIGIL" check --config "$SCRATCH/nul.json" 2>&1); rc=$?
expect_eq "NUL in a config string refused" 78 "$rc"
expect_match "named with its place" 'nul.json: line 1, column 38: \\u0000 \(a NUL character\)' "$out"

# ---- node names that are not host names never reach a hostfile
out=$(VIGIL_NODE_NAME=$'evil\nhost slots=128' run --mode deepspeed --dry-run --run-dir "$SCRATCH/rd" -- deepspeed t.py 2>&1); rc=$?
expect_eq "a name with a newline refused" 64 "$rc"
expect_match "and why" "VIGIL_NODE_NAME 'evil\?host slots=128' is not a valid host name \(contains a line break\)" "$out"
if [ -e "$SCRATCH/rd/hostfile" ]; then fail "hostfile written"; else pass "no hostfile written"; fi
out=$(VIGIL_NODE_NAME='gpu 01' "$VIGIL" check 2>&1); rc=$?
expect_eq "check refuses it too" 64 "$rc"
expect_match "a blank named" "contains a blank" "$out"

finish
