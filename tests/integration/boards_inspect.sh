#!/bin/bash
# The inspection of a running job watches the boards through the vendor
# library (the fake NVML of tests/fakevendor, named in the configuration):
# an XID 79 arriving through nvmlEventSetWait on one node, and a row remap
# that becomes pending on another, are faults: every training checkpoints,
# the job exits 81 for the requeue, the node is named for exclusion.
# When a node's driver refuses the event registration
# (NVML_ERROR_NO_PERMISSION), that node says so in its log and a warning
# event names it and NVML's reason; an XID 119 then goes unseen, but the
# recovery action the driver sets with it is read at the next inspection:
# a fault all the same, not a job that "succeeded".
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
REFUSE='nvidia - error nvmlDeviceRegisterEvents 4'

for fault in xid remap refused; do
	args=""
	for i in 0 1 2; do
		rm -rf "$SCRATCH/r$i"; make_root "$SCRATCH/r$i"; put $i ""
		[ $fault = refused ] && [ $i = 1 ] && put $i "$REFUSE"
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
	elif [ $fault = remap ]; then
		put 2 "nvidia 0 remap.pending 1"; bad=n2; what='row-remap 0000:04:00\.0: row remapping pending'
	else
		put 1 "$REFUSE
nvidia 1 event xid 119
nvidia 1 recovery reset"; bad=n1; what='recovery 0000:07:00\.0: the driver.s recommended recovery action: reset the GPU'
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
	[ $fault = refused ] || continue
	why='nvmlDeviceRegisterEvents failed on 0000:04:00\.0: Insufficient Permissions \(4\)'
	expect_match "refused: said in the node's log" \
		"XID events of the boards are not watched: $why, and on 1 more board; each inspection reads the boards instead" \
		"$(cat "$log")"
	expect_match "refused: a warning naming the node" \
		"n1 \(rank [0-9]\): warning: events nvml: XID events are not watched: $why" "$(cat "$log")"
	expect_match "refused: a warning event" \
		"\"node\":\"n1\",\"rank\":[0-9],\"kind\":\"fault\",\"severity\":\"warning\".*XID events are not watched: $why" \
		"$(cat "$SCRATCH/ev-$fault.jsonl")"
	expect_no_match "refused: the other nodes watch" 'n[02] \(rank [0-9]\): warning: events' "$(cat "$log")"
done
no_leftovers "inspection" "$ck."

finish
