# cases.sh - helpers for fault-injection cases on the test bed (sourced by
# tests/integration/testbed_*.sh after lib.sh and tb.sh, with a test bed of
# CASE_NODES nodes up (default 3) and $hb set to the heartbeat options).
#
#   train DIR [ARGS]   the training's command: contrib/examples/train_sim.py,
#                      its checkpoint under DIR/<hostname>
#   (report, wait_ready: lib.sh)
#   pid_in NODE COMM   a process named COMM in NODE's namespace
#   event_after_ms FILE KIND T0   ms from T0 (epoch ms) to the first KIND event
#   bed_empty          nothing of the job left on any node (10 s at most)
#   saved NODE         how often NODE's training got the checkpoint signal
#                      (the cases run with --tag-output)
#   start_case NAME OPTIONS...   vigil run --resume --grace CASE_GRACE
#                      (default 5) on CASE_NODES nodes in the background ($job
#                      is mpirun), with $ck, $log, $ev, $rep and $excl set for
#                      NAME, and waits until every training is ready;
#                      MPIRUN_OPTS (an array) goes to mpirun first
# the training on each node keeps its checkpoint under $ck/<hostname>
train() {
	echo "sh -c 'exec $SIM --iters 1000000 --iter-ms 20 --ckpt-dir $1/\$(hostname) ${2:-}'"
}
# pid_in NODE COMM: a process named COMM inside NODE's namespace
pid_in() {
	local p
	for p in $(tb_pids "$1"); do
		[ "$(ps -o comm= -p "$p" 2>/dev/null)" = "$2" ] && { echo "$p"; return; }
	done
}
# event_after_ms FILE KIND T0: ms from T0 (epoch ms) to the first KIND event
event_after_ms() {
	python3 - "$@" <<'PY'
import datetime, json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["kind"] == sys.argv[2]:
        t = datetime.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ")
        t = t.replace(tzinfo=datetime.timezone.utc)
        print(int(t.timestamp() * 1000) - int(sys.argv[3]))
        break
PY
}
saved() { grep -c "^\[$1:[0-9]*\] signal SIGUSR1$" "$log"; }
bed_empty() {  # nothing of the job left on any node
	local i n k
	for ((i = 0; i < 100; i++)); do
		n=0
		for ((k = 1; k <= ${CASE_NODES:-3}; k++)); do n=$((n + $(tb_pids n$k | wc -w))); done
		[ "$n" -eq 0 ] && return 0
		sleep 0.1
	done
	return 1
}
MPIRUN_OPTS=${MPIRUN_OPTS:-}
start_case() {
	local name=$1; shift
	ck="$SCRATCH/ck.$name"; mkdir -p "$ck"
	log="$SCRATCH/$name.out"; ev="$SCRATCH/$name.jsonl"; rep="$SCRATCH/$name.json"
	excl="$SCRATCH/$name.exclude"
	eval "tb_mpirun $MPIRUN_OPTS -np ${CASE_NODES:-3} \"\$VIGIL\" run --resume $hb \
		--grace ${CASE_GRACE:-5} --events \"\$ev\" --report \"\$rep\" \
		--exclude-file \"\$excl\" $* -- $(train "$ck")" >"$log" 2>&1 &
	job=$!
	wait_ready "$log" "${CASE_NODES:-3}" || fail "$name: trainings not ready"
}

