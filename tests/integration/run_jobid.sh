#!/bin/bash
# One job id on every node.  Outside Slurm each agent's own would be its
# process id; the job's is the coordinator's: the hooks of every phase on
# every node see it in VIGIL_JOB_ID (a node's pre-check hooks wait for the
# coordinator's word), and it is the %j of the coordinator's files and the
# JOB of vigil-logs.JOB.  Under Slurm it is SLURM_JOB_ID, as before.
. "$(dirname "$0")/lib.sh"

unset SLURM_JOB_ID
cd "$SCRATCH" || exit 1
hooks=(--hook 'pre-check=echo "id $VIGIL_HOOK $VIGIL_RANK $VIGIL_JOB_ID"'
       --hook 'pre-launch=echo "id $VIGIL_HOOK $VIGIL_RANK $VIGIL_JOB_ID"'
       --hook 'end=echo "id $VIGIL_HOOK $VIGIL_RANK $VIGIL_JOB_ID"')
# vjob NP ARGS...: NP agents, each named for its rank (a node each).
vjob() {
	local np=$1 args=() i
	shift
	for ((i = 0; i < np; i++)); do
		[ "$i" -eq 0 ] || args+=(:)
		args+=(-np 1 env VIGIL_NODE_NAME="n$i" "$VIGIL" run --precheck off "$@")
	done
	timeout -k 5 120 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none "${args[@]}"
}
# ids OUT: "PHASE RANK ID" of each hook line, sorted.
ids() { printf '%s\n' "$1" | sed -n 's/.*id \(pre-check\|pre-launch\|end\) \([0-9]*\) \([^ ]*\)$/\1 \2 \3/p' | sort; }

out=$(vjob 3 --mode pytorch --output coordinator --events "$SCRATCH/ev.%j.jsonl" "${hooks[@]}" -- \
	sh -c 'echo "trained $RANK"' 2>&1); rc=$?
expect_eq "job with hooks on 3 nodes: exit" 0 "$rc"
lines=$(ids "$out")
expect_eq "every hook of every node ran" \
	"end 0,end 1,end 2,pre-check 0,pre-check 1,pre-check 2,pre-launch 0,pre-launch 1,pre-launch 2" \
	"$(printf '%s\n' "$lines" | awk '{print $1, $2}' | paste -sd, -)"
job=$(printf '%s\n' "$lines" | awk '{print $3}' | sort -u)
expect_eq "one VIGIL_JOB_ID on every node, in every phase" 1 "$(printf '%s\n' "$job" | grep -c .)"
expect_match "it is a process id" '^[0-9]+$' "$job"
expect_eq "the coordinator's %j is the same id" "ev.$job.jsonl" "$(cd "$SCRATCH" && ls ev.*.jsonl 2>&1)"
expect_eq "vigil-logs.JOB is the same id" "vigil-logs.$job" "$(cd "$SCRATCH" && ls -d vigil-logs.* 2>&1)"

# Under Slurm: SLURM_JOB_ID, the same everywhere already.
out=$(SLURM_JOB_ID=4242 vjob 2 --mode pytorch "${hooks[@]}" -- true 2>&1); rc=$?
expect_eq "under Slurm: exit" 0 "$rc"
expect_eq "under Slurm: SLURM_JOB_ID in every hook" "4242" \
	"$(ids "$out" | awk '{print $3}' | sort -u | paste -sd, -)"
expect_eq "under Slurm: every hook ran" 6 "$(ids "$out" | grep -c .)"

finish
