#!/bin/bash
# What `vigil run --batch` refuses before anything starts, and how often it
# says so under a launcher:
#   - a broken batch file named by line and column (64);
#   - a misspelt key ("outptu", "algoritm") refused with the keys it knows,
#     the training never run (it wrote to an empty $VIGIL_OUTPUT_DIR, "/");
#   - no output directory in the file nor --output-dir: refused, named;
#   - a missing algorithm directory named, with the node (64, not 127);
#   - under mpirun -np 3 (and Hydra), an error of the file's text said once,
#     and so is a wrong option of vigil run or vigil check
#     for the job, every rank leaving with 64; a directory missing on one
#     node only, said by that node.
. "$(dirname "$0")/lib.sh"

run() { timeout -k 5 60 "$VIGIL" run --mode single --precheck off "$@"; }
# the training: leaves a mark where its outputs would go
# shellcheck disable=SC2016  # the training's shell expands its variables
train='["sh", "-c", "touch \"$VIGIL_OUTPUT_DIR/ran-$VIGIL_BATCH_INDEX\" '"$SCRATCH"'/ran"]'
mkdir -p "$SCRATCH/alg" "$SCRATCH/out"

# ---- alone
printf '{"output": "%s/out", "tasks": [\n  {"command": ["true"]},\n  {"command": ["true"] "algorithm": "/a"}]}\n' \
	"$SCRATCH" >"$SCRATCH/broken.json"
out=$(run --batch "$SCRATCH/broken.json" --batch-index 0 2>&1); rc=$?
expect_eq "a broken batch file: usage error" 64 "$rc"
expect_match "named by line and column" \
	"^vigil run: $SCRATCH/broken.json: line 3, column 24: malformed JSON near " "$out"

printf '{"outptu": "%s/out", "tasks": [{"command": %s}]}\n' "$SCRATCH" "$train" \
	>"$SCRATCH/outptu.json"
out=$(run --batch "$SCRATCH/outptu.json" --batch-index 0 2>&1); rc=$?
expect_eq "\"outptu\": usage error" 64 "$rc"
expect_match "the key refused, the known ones listed" \
	"outptu.json: outptu: unknown key \(valid: name, output, tasks\)$" "$out"
printf '{"output": "%s/out", "tasks": [{"command": ["true"]}, {"command": %s, "algoritm": "%s/alg"}]}\n' \
	"$SCRATCH" "$train" "$SCRATCH" >"$SCRATCH/algoritm.json"
out=$(run --batch "$SCRATCH/algoritm.json" --batch-index 1 2>&1); rc=$?
expect_eq "\"algoritm\": usage error" 64 "$rc"
expect_match "the task's key refused, the known ones listed" \
	"algoritm.json: tasks\[1\].algoritm: unknown key \(valid: command, algorithm\)$" "$out"
out=$(run --batch "$SCRATCH/algoritm.json" --batch-index 0 2>&1); rc=$?
expect_eq "another sub-task of the same file refuses it too" 64 "$rc"

printf '{"name": "sweep", "tasks": [{"command": %s}]}\n' "$train" >"$SCRATCH/noout.json"
out=$(run --batch "$SCRATCH/noout.json" --batch-index 0 2>&1); rc=$?
expect_eq "no output anywhere: usage error" 64 "$rc"
expect_match "said, with both ways to give it" \
	'no output directory for the sub-tasks: give "output" in the file or --output-dir DIR \(sub-task N writes to OUTPUT/sweep-N' "$out"
out=$(run --batch "$SCRATCH/noout.json" --batch-index 0 --output-dir "$SCRATCH/out" 2>&1); rc=$?
expect_eq "--output-dir gives it" 0 "$rc"
expect_eq "into OUTPUT/NAME-INDEX" yes "$(test -e "$SCRATCH/out/sweep-0/ran-0" && echo yes || echo no)"
rm -f "$SCRATCH/ran" "$SCRATCH/out/sweep-0/ran-0"

printf '{"output": "%s/out", "tasks": [{"command": %s, "algorithm": "%s/nowhere"}]}\n' \
	"$SCRATCH" "$train" "$SCRATCH" >"$SCRATCH/noalg.json"
out=$(VIGIL_NODE_NAME=n7 run --batch "$SCRATCH/noalg.json" --batch-index 0 2>&1); rc=$?
expect_eq "a missing algorithm directory: usage error, not 127" 64 "$rc"
expect_match "the directory and the node named" \
	"sub-task 0's algorithm directory $SCRATCH/nowhere on n7: No such file or directory" "$out"
expect_eq "no training ran" no "$(test -e "$SCRATCH/ran" && echo yes || echo no)"

# ---- under the launcher: once for the job, 64 from every rank
mpi() {
	if [ -n "$MPI_HYDRA" ]; then timeout -k 5 60 "$MPIRUN" "$@"
	else timeout -k 5 60 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none "$@"; fi
}
# count_msg TEXT REGEX: how many lines match
count_msg() { printf '%s\n' "$1" | grep -cE -- "$2"; }
# late.sh: the first rank starts a second late; the others, done first,
# must not make the launcher end it before it has said the error.
cat >"$SCRATCH/late.sh" <<EOF
#!/bin/bash
[ "\${OMPI_COMM_WORLD_RANK:-\$PMI_RANK}" = 0 ] && sleep 1
exec "$VIGIL" run --mode single --precheck off "\$@"
EOF
chmod +x "$SCRATCH/late.sh"
for f in broken outptu noalg; do
	out=$(mpi -np 3 "$SCRATCH/late.sh" --batch "$SCRATCH/$f.json" --batch-index 0 2>&1); rc=$?
	expect_eq "$f, 3 ranks: the launcher's status" 64 "$rc"
	[ "$f" = noalg ] && [ -n "$MPI_HYDRA" ] && continue  # Hydra ends no rank for another
	expect_eq "$f, 3 ranks: the message once" 1 \
		"$(count_msg "$out" "^vigil run: $SCRATCH/$f.json: ")"
done

# Options that are wrong are wrong on every rank: said once too, naming
# the option (getopt's own message, one per rank, is not printed).
out=$(mpi -np 3 "$SCRATCH/late.sh" --bogus-option -- true 2>&1); rc=$?
expect_eq "an unknown option, 3 ranks: the launcher's status" 64 "$rc"
expect_eq "an unknown option, 3 ranks: said once" 1 \
	"$(count_msg "$out" "^vigil run: unknown option '--bogus-option'$")"
expect_eq "an unknown option, 3 ranks: getopt says nothing" 0 "$(count_msg "$out" "unrecognized option")"
out=$(mpi -np 3 "$SCRATCH/late.sh" --heartbeat soon -- true 2>&1); rc=$?
expect_eq "a bad value, 3 ranks: said once" "64 1" \
	"$rc $(count_msg "$out" "^vigil run: --heartbeat needs a duration")"
out=$(mpi -np 3 "$VIGIL" check --events 2>&1); rc=$?
expect_eq "vigil check, a missing value, 3 ranks: said once" "64 1" \
	"$rc $(count_msg "$out" "^vigil check: option '--events' needs a value$")"

# The ranks' own statuses, with this script as the launcher: ranks 1 and
# 2 first, then rank 0; once it has left, SIGTERM to the others, as
# mpirun does.  Every one leaves with 64, only rank 0 speaks.
# ranks FILE [SIGNAL]: "OUT0|OUT1|OUT2 RC0 RC1 RC2"
ranks() {
	local r pids=() rcs=()
	for r in 1 2; do
		# timeout itself, not a shell, gets the signal: it passes it on
		OMPI_COMM_WORLD_RANK=$r timeout -k 5 60 "$VIGIL" run --mode single --precheck off \
			--batch "$SCRATCH/$1.json" --batch-index 0 >"$SCRATCH/o$r" 2>&1 &
		pids[r]=$!
	done
	sleep 0.5
	OMPI_COMM_WORLD_RANK=0 run --batch "$SCRATCH/$1.json" --batch-index 0 >"$SCRATCH/o0" 2>&1
	rcs[0]=$?
	for r in 1 2; do [ -n "${2:-}" ] && kill -s "$2" "${pids[r]}"; done
	for r in 1 2; do wait "${pids[r]}"; rcs[r]=$?; done
	echo "$(wc -l <"$SCRATCH/o0")|$(wc -l <"$SCRATCH/o1")|$(wc -l <"$SCRATCH/o2") ${rcs[*]}"
}
expect_eq "ended by the launcher: one message, 64 everywhere" "1|0|0 64 64 64" "$(ranks outptu TERM)"
start=$SECONDS
expect_eq "not ended (no launcher does): still one message" "1|0|0 64 64 64" "$(ranks outptu)"
if [ $((SECONDS - start)) -lt 10 ]; then pass "the others leave after their wait"
else fail "the others took $((SECONDS - start)) s"; fi
expect_eq "a node's own error, not ended: each node says it" "1|1|1 64 64 64" "$(ranks noalg)"

# A directory missing on the third node only: that node says it, and the
# job ends (Hydra keeps the other ranks waiting in their start: not run).
if [ -z "$MPI_HYDRA" ]; then
	printf '{"output": "%s/out", "tasks": [{"command": ["sleep", "30"], "algorithm": "%s/alg"}]}\n' \
		"$SCRATCH" "$SCRATCH" >"$SCRATCH/slow.json"
	start=$SECONDS
	out=$(mpi -np 2 "$VIGIL" run --mode single --precheck off \
		--batch "$SCRATCH/slow.json" --batch-index 0 : \
		-np 1 env VIGIL_NODE_NAME=n3 "$VIGIL" run --mode single --precheck off \
		--batch "$SCRATCH/noalg.json" --batch-index 0 2>&1); rc=$?
	expect_eq "one node's missing directory: the launcher's status" 64 "$rc"
	expect_eq "said once, by that node" 1 \
		"$(count_msg "$out" "algorithm directory $SCRATCH/nowhere on n3: No such file")"
	if [ $((SECONDS - start)) -lt 25 ]; then pass "the job did not wait for the training"
	else fail "the job took $((SECONDS - start)) s"; fi
fi

finish
