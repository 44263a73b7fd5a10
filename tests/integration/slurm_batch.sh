#!/bin/bash
# Batch tasks (the platform's 批量任务) as a Slurm job array, on a real
# Slurm 22.05 cluster of three nodes (tests/slurm/cluster.sh): one batch
# file of two sub-tasks, `sbatch --array=0-1 --nodes=2`, one agent per node
# under mpirun in each array task.  SLURM_ARRAY_TASK_ID picks the sub-task:
# its own command, run in its own algorithm directory on both nodes, its
# outputs in OUTPUT/NAME-INDEX without the training naming it.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
sl_up 3 || { fail "cluster"; finish; }

W=$SL_SPOOL
for t in a b; do
	mkdir -p "$W/alg-$t"
	# the same training for every sub-task: it writes where it is told
	cat >"$W/alg-$t/train.sh" <<'EOF2'
echo "$1 task $VIGIL_BATCH_INDEX of $VIGIL_BATCH_COUNT array $SLURM_ARRAY_TASK_ID rank $RANK of $WORLD_SIZE in $(pwd)" >"$VIGIL_OUTPUT_DIR/$(hostname)"
EOF2
done
cat >"$W/sweep.json" <<EOF2
{"name": "sweep", "output": "$W/out", "tasks": [
  {"command": ["sh", "train.sh", "lr=0.1"], "algorithm": "$W/alg-a"},
  {"command": ["sh", "train.sh", "lr=0.01"], "algorithm": "$W/alg-b"}]}
EOF2
cat >"$W/array.sbatch" <<EOF2
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --array=0-1
#SBATCH --output=$W/array-%A_%a.out
timeout -k 5 60 mpirun --map-by ppr:1:node --bind-to none \\
	--mca btl self,tcp --mca btl_tcp_if_include 10.213.0.0/24 \\
	--mca oob_tcp_if_include 10.213.0.0/24 \\
	"$VIGIL" run --batch "$W/sweep.json" --report "$W/report.\$SLURM_ARRAY_TASK_ID.json"
EOF2
id=$(sl_cmd sbatch --parsable --chdir="$W" "$W/array.sbatch")
expect_match "the array was submitted" '^[0-9]+$' "$id"
for ((i = 0; i < 120; i++)); do
	[ -s "$W/report.0.json" ] && [ -s "$W/report.1.json" ] && break
	sleep 1
done
sleep 1
for t in 0 1; do
	lr=$([ $t = 0 ] && echo 0.1 || echo 0.01)
	alg=$([ $t = 0 ] && echo a || echo b)
	expect_eq "array task $t: succeeded" "0 succeeded" "$(sl_json "$W/report.$t.json" 'r["exit_code"], r["state"]')"
	expect_eq "array task $t: its sub-task on both of its nodes, in its directory, into sweep-$t" \
		"lr=$lr task $t of 2 array $t rank 0 of 2 in $W/alg-$alg,lr=$lr task $t of 2 array $t rank 1 of 2 in $W/alg-$alg" \
		"$(cat "$W"/out/sweep-$t/n* 2>&1 | sort | paste -sd,)"
done
expect_eq "the two sub-tasks' outputs apart" "sweep-0,sweep-1" "$(ls "$W/out" | paste -sd,)"
[ "$failures" -eq 0 ] || cat "$W"/array-*.out >&2

sl_down || fail "the cluster left something behind"
finish
