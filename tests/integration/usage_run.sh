#!/bin/bash
# What the trainings and their boards use, end to end: two agents under
# mpirun, each node's boards answered by the fake NVML of tests/fakevendor
# (named in the configuration, as a site names a library), a training that
# spins one CPU core.  The nodes' notes reach the coordinator, which puts
# the values in the --metrics file (checked with promtool, Debian's
# prometheus package), keeps their ranges over the job in "usage" events
# and the --report, and `vigil report` shows those ranges.
. "$(dirname "$0")/lib.sh"

: "${FAKEVENDOR_DIR:?FAKEVENDOR_DIR must name the fake vendor libraries}"
if ! command -v promtool >/dev/null 2>&1; then
	echo "promtool not found: apt-get install prometheus" >&2
	exit 77
fi
printf '{"check": {"boards": {"nvml_library": "%s/libnvidia-ml.so.1"}}}\n' "$FAKEVENDOR_DIR" \
	> "$SCRATCH/cfg.json"
# n0's boards: busy and warm; n1's: nearly idle, one of them the hottest.
cat > "$SCRATCH/s0" <<'EOF'
nvidia 0 bus 0000:04:00.0
nvidia 0 utilization 93
nvidia 0 memory.used 42949672960
nvidia 0 memory.total 85899345920
nvidia 0 temperature 61
nvidia 0 power 612345
nvidia 1 bus 0000:07:00.0
nvidia 1 utilization 88
nvidia 1 temperature 58
EOF
cat > "$SCRATCH/s1" <<'EOF'
nvidia 0 bus 0000:04:00.0
nvidia 0 utilization 7
nvidia 0 temperature 44
nvidia 1 bus 0000:07:00.0
nvidia 1 utilization 9
nvidia 1 temperature 77
EOF
# The training: one core busy for 4 s.
printf '#!/bin/bash\nend=$((SECONDS + 4)); while [ $SECONDS -lt $end ]; do :; done\n' \
	> "$SCRATCH/spin"
chmod +x "$SCRATCH/spin"
m="$SCRATCH/vigil.prom" ev="$SCRATCH/ev.jsonl" rep="$SCRATCH/report.json"
args=""
for i in 0 1; do
	make_root "$SCRATCH/r$i"
	args="$args${args:+ :} -np 1 env VIGIL_NODE_NAME=n$i VIGIL_FAKE_VENDOR=$SCRATCH/s$i $VIGIL run --config $SCRATCH/cfg.json --inspect-interval 1 --sysfs-root $SCRATCH/r$i $(pascal_flags) --metrics $m --events $ev --report $rep -- $SCRATCH/spin"
done
timeout -k 5 120 "${MPIRUN:-mpirun}" --oversubscribe --bind-to none $args >"$SCRATCH/out" 2>&1
rc=$?
expect_eq "the job succeeded" 0 "$rc" || cat "$SCRATCH/out" >&2

# The metrics file: per node and board, per node's training; valid, lint-clean.
text=$(cat "$m" 2>/dev/null)
out=$(promtool check metrics < "$m" 2>&1); prc=$?
expect_eq "promtool check metrics passes, lint included" "0 " "$prc $out"
expect_match "n0 board 0 utilisation" '^vigil_board_utilization_ratio\{node="n0",board="0"\} 0\.93$' "$text"
expect_match "n1 board 1 temperature" '^vigil_board_temperature_celsius\{node="n1",board="1"\} 77$' "$text"
expect_match "n0 board 0 power in watts" '^vigil_board_power_watts\{node="n0",board="0"\} 612\.345$' "$text"
expect_match "n0 board 0 memory in bytes" '^vigil_board_memory_total_bytes\{node="n0",board="0"\} 85899345920$' "$text"
for n in n0 n1; do
	cpu=$(sed -n "s/^vigil_training_cpu_seconds_total{node=\"$n\"} //p" "$m")
	mem=$(sed -n "s/^vigil_training_memory_bytes{node=\"$n\"} //p" "$m")
	if awk -v c="${cpu:-0}" 'BEGIN { exit !(c >= 0.5) }'; then
		pass "$n: the training's CPU seconds counted ($cpu)"
	else
		fail "$n: the training's CPU seconds: '$cpu'"
	fi
	if awk -v b="${mem:-0}" 'BEGIN { exit !(b > 100000) }'; then
		pass "$n: the training's memory ($mem bytes)"
	else
		fail "$n: the training's memory: '$mem'"
	fi
done

# The ranges: in the event log, the --report and `vigil report`.
expect_match "a usage event" '"kind":"usage"' "$(cat "$ev")"
last=$(grep '"kind":"usage"' "$ev" | tail -n 1)
expect_eq "usage before the job's end" usage \
	"$(grep -o '"kind":"[a-z_]*"' "$ev" | tail -n 2 | head -n 1 | cut -d'"' -f4)"
json=$("$VIGIL" report --json "$ev")
field() { /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); exec(sys.argv[1])' "$1" <<<"$json"; }
expect_eq "hottest board: n1 board 1 at 77 C" "77 n1 1" \
	"$(field 'u=d["usage"]["board_temperature_celsius"]; print("%g %s %d" % (u["max"], u["max_node"], u["max_board"]))')"
expect_eq "busiest board: n0 board 0 at 0.93" "0.93 n0 0" \
	"$(field 'u=d["usage"]["board_utilization"]; print("%g %s %d" % (u["max"], u["max_node"], u["max_board"]))')"
expect_eq "idlest board: n1 board 0 at 0.07" "0.07 n1" \
	"$(field 'u=d["usage"]["board_utilization"]; print("%g %s" % (u["min"], u["min_node"]))')"
cores=$(field 'print(d["usage"]["training_cpu_cores"]["max"])')
if awk -v c="$cores" 'BEGIN { exit !(c > 0.2 && c < 1.5) }'; then
	pass "a spinning training uses about a core at most ($cores)"
else
	fail "training CPU cores: '$cores'"
fi
expect_eq "both nodes heard" 2 "$(field 'print(d["usage"]["nodes"])')"
expect_match "vigil report shows the ranges" \
	'usage: +training [0-9.]+-[0-9.]+ CPU cores, [0-9.]+ [KMG]iB-[0-9.]+ [KMG]iB; boards 7-93% busy, 0 B-40 GiB, 44-77 C, [0-9.]+-612\.3 W \(hottest: n1 board 1\)' \
	"$("$VIGIL" report "$ev")"
expect_eq "the --report carries them too" "77" \
	"$(/usr/bin/python3 -c 'import json,sys; print("%g" % json.load(open(sys.argv[1]))["usage"]["board_temperature_celsius"]["max"])' "$rep")"
finish
