#!/bin/bash
# The inspection of a running job watches the boards through the vendor
# library (the fake NVML of tests/fakevendor, named in the configuration):
# an XID 79 arriving through nvmlEventSetWait on one node, and a row remap
# that becomes pending on another, are faults: every training checkpoints,
# the job exits 81 for the requeue, the node is named for exclusion.
. "$(dirname "$0")/lib.sh"

: "${FAKEVENDOR_DIR:?FAKEVENDOR_DIR must name the fake vendor libraries}"
ck="$SCRATCH/ck"
MPI="${MPIRUN:-mpirun} --oversubscribe --bind-to none"
printf '{"check": {"boards": {"nvml_library": "%s/libnvidia-ml.so.1"}}}\n' "$FAKEVENDOR_DIR" \
	> "$SCRATCH/cfg.json"
BOARDS='nvidia 0 bus 0000:04:00.0
nvidia 1 bus 0000:07:00.0'
# put NODE LINES: node NODE's script, replaced whole.
put() { printf '%s\n%s\n' "$BOARDS" "$2" > "$SCRATCH/s$1.new"; mv "$SCRATCH/s$1.new" "$SCRATCH/s$1"; }

for fault in xid remap; do
	args=""
	for i in 0 1 2; do
		rm -rf "$SCRATCH/r$i"; make_root "$SCRATCH/r$i"; put $i ""
		args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i VIGIL_FAKE_VENDOR=$SCRATCH/s$i $VIGIL run --config $SCRATCH/cfg.json --resume --inspect-interval 1 --grace 3 --sysfs-root $SCRATCH/r$i $(pascal_flags) --exclude-file $SCRATCH/excl-$fault --events $SCRATCH/ev-$fault.jsonl -- $SIM --iters 100000 --iter-ms 20 --ckpt-dir $ck.$fault$i"
	done
	log="$SCRATCH/$fault.out"
	timeout -k 5 120 $MPI $args >"$log" 2>&1 &
	pid=$!
	wait_ready "$log" 3 || fail "$fault: not ready"
	sleep 1.5   # the boards' first facts and the event registration
	t0=$(date +%s%N)
	if [ $fault = xid ]; then
		put 1 "nvidia 1 event xid 79"; bad=n1; what='xid 0000:07:00\.0: XID 79 \(GPU has fallen off the bus\)'
	else
		put 2 "nvidia 0 remap.pending 1"; bad=n2; what='row-remap 0000:04:00\.0: row remapping pending'
	fi
	wait "$pid"; rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	expect_eq "$fault: requeue" 81 "$rc"
	expect_eq "$fault: $bad excluded" "$bad" "$(cat "$SCRATCH/excl-$fault")"
	expect_eq "$fault: every training saved once" 3 "$(grep -c '^checkpoint saved at iteration' "$log")"
	expect_match "$fault: fault named on the coordinator" "$bad \(rank [0-9]\): fault: $what" "$(cat "$log")"
	expect_match "$fault: fault event" "\"node\":\"$bad\",\"rank\":[0-9],\"kind\":\"fault\",\"severity\":\"error\"" \
		"$(cat "$SCRATCH/ev-$fault.jsonl")"
	if [ "$ms" -lt 15000 ]; then pass "$fault: ended ${ms} ms after the fault"; else fail "$fault: ${ms} ms"; fi
done
no_leftovers "inspection" "$ck."

finish
