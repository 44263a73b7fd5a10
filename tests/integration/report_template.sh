#!/bin/bash
# The report and event log as contrib/slurm/vigil.sbatch reads them, when
# the training's standard error is not UTF-8 (binary, a cut sequence, a
# NUL): the template's json_get with jq, without jq through python3 (the
# fallback), and with neither through sed, each reads the exit code,
# state and reason; Python's json reads the files strictly as UTF-8.
#   - one training, the report of `vigil run --mode single`;
#   - under mpirun, the stderr tail of rank 1 crosses the agents' messages
#     to the coordinator's report and the event log.
. "$(dirname "$0")/lib.sh"

TMPL="${TESTS_SRCDIR:-$(dirname "$0")/..}/../contrib/slurm/vigil.sbatch"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3)

# The template's json_get by itself, sourced from the template.
sed -n '/^json_get() {/,/^}/p' "$TMPL" > "$SCRATCH/json_get.sh"
expect_match "the template's json_get found" 'python3 -c' "$(cat "$SCRATCH/json_get.sh")"

# A PATH of its own for each way of reading: with jq, python3 only, neither.
tools() {  # DIR TOOL...
	local d=$1 t
	shift
	mkdir -p "$d"
	for t in "$@"; do
		command -v "$t" >/dev/null || { fail "no $t here (.ci/run installs it)"; continue; }
		ln -s "$(command -v "$t")" "$d/$t"
	done
}
tools "$SCRATCH/bin-jq" jq sed head
tools "$SCRATCH/bin-python" sed head
ln -s "$PY" "$SCRATCH/bin-python/python3"
tools "$SCRATCH/bin-sed" sed head
# json_get in a clean environment: the C locale of a batch job, PATH as given
json_get() {  # BINDIR FILE KEY
	env -i PATH="$1" LC_ALL=C /bin/bash -c '. "$0"; json_get "$1" "$2"' \
		"$SCRATCH/json_get.sh" "$2" "$3" 2>&1
}
expect_eq "no jq on the fallback's PATH" "" \
	"$(env -i PATH="$SCRATCH/bin-python" /bin/bash -c 'command -v jq')"

# The training: bytes that are not UTF-8 on stderr, then status 3.
cat > "$SCRATCH/hostile.sh" <<'EOF'
printf 'bad \377\376 bytes \303( cut \342\202\n' >&2
printf 'nul \000 overlong \300\257 surrogate \355\240\200\n' >&2
printf 'lone \200 at the end \360\237' >&2
EOF

# utf8_json WHAT FILE...: each file (a report, or an event log, a JSON a
# line) decodes strictly as UTF-8 and parses as JSON.
utf8_json() {
	local what=$1
	shift
	expect_eq "$what: valid UTF-8 JSON" ok "$("$PY" -c '
import json, sys
for name in sys.argv[1:]:
    text = open(name, "rb").read().decode("utf-8")
    for doc in [text] if name.endswith(".json") else text.splitlines():
        json.loads(doc)
print("ok")' "$@" 2>&1 | tail -n 1)"
}

# expect_read WHAT REPORT STATE CODE: the template's three ways agree.
expect_read() {
	local what=$1 rep=$2 state=$3 code=$4 via
	for via in jq python sed; do
		expect_eq "$what: exit_code via $via" "$code" "$(json_get "$SCRATCH/bin-$via" "$rep" exit_code)"
		expect_eq "$what: state via $via" "$state" "$(json_get "$SCRATCH/bin-$via" "$rep" state)"
	done
	for via in jq python; do
		expect_match "$what: reason via $via" 'status 3' "$(json_get "$SCRATCH/bin-$via" "$rep" reason)"
	done
}

# 1. One training.
rep="$SCRATCH/single.json"
timeout -k 5 60 "$VIGIL" run --mode single --precheck off --report "$rep" \
	--events "$SCRATCH/single.jsonl" -- sh -c ". $SCRATCH/hostile.sh; exit 3" >/dev/null 2>&1
rc=$?
expect_eq "single: the training's status" 3 "$rc"
utf8_json "single" "$rep" "$SCRATCH/single.jsonl"
expect_read "single" "$rep" error 3
expect_eq "single: the tail kept, bytes replaced" "3 True True" "$("$PY" -c '
import json, sys
t = json.load(open(sys.argv[1], encoding="utf-8"))["first_failure"]["stderr_tail"]
print(len(t), t[0] == "bad \ufffd\ufffd bytes \ufffd( cut \ufffd\ufffd", "\x00" not in "".join(t))' "$rep" 2>&1)"

# 2. Under mpirun: rank 1 fails with the hostile tail, rank 0 is stopped.
rep="$SCRATCH/mpi.json"
run_mpi -np 2 "$VIGIL" run --mode pytorch --precheck off --grace 5 --report "$rep" \
	--events "$SCRATCH/mpi.jsonl" -- \
	sh -c "if [ \"\$RANK\" = 1 ]; then . $SCRATCH/hostile.sh; exit 3; fi; exec sleep 60" \
	>/dev/null 2>&1
rc=$?
expect_eq "mpirun: the job's status is rank 1's" 3 "$rc"
utf8_json "mpirun" "$rep" "$SCRATCH/mpi.jsonl"
expect_read "mpirun" "$rep" error 3
expect_eq "mpirun: the first failure's tail from rank 1, repaired" "1 3 True" "$("$PY" -c '
import json, sys
f = json.load(open(sys.argv[1], encoding="utf-8"))["first_failure"]
print(f["rank"], len(f["stderr_tail"]), f["stderr_tail"][0].startswith("bad \ufffd"))' "$rep" 2>&1)"

finish
