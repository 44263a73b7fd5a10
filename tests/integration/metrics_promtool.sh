#!/bin/bash
# The --metrics textfile, with the boards' use (from the fake NVML of
# tests/fakevendor, through vigil's gather and the coordinator's setters)
# and the training's CPU and memory, checked by Prometheus's own parser and
# linter: `promtool check metrics` (Debian package prometheus).
. "$(dirname "$0")/lib.sh"

: "${METRICS_PROG:?METRICS_PROG must name tests/integration/metrics_prog}"
: "${FAKEVENDOR_DIR:?FAKEVENDOR_DIR must name the fake vendor libraries}"
if ! command -v promtool >/dev/null 2>&1; then
	echo "promtool not found: apt-get install prometheus" >&2
	exit 77
fi
FAKE="$FAKEVENDOR_DIR/libnvidia-ml.so.1"
export VIGIL_FAKE_VENDOR="$SCRATCH/script"
cat > "$VIGIL_FAKE_VENDOR" <<'EOF'
nvidia 0 bus 0000:04:00.0
nvidia 0 utilization 93
nvidia 0 memory.used 42949672960
nvidia 0 memory.total 85899345920
nvidia 0 temperature 61
nvidia 0 power 612345
nvidia 1 bus 0000:07:00.0
nvidia 1 utilization 7
EOF
slots="--slot 0000:04:00.0 --slot 0000:07:00.0"

# Boards and usage only: the file passes promtool's parser and linter.
m="$SCRATCH/boards.prom"
"$METRICS_PROG" "$m" --nvml "$FAKE" $slots --node gpu-01 --node gpu-02; rc=$?
expect_eq "boards: written" 0 "$rc"
out=$(promtool check metrics < "$m" 2>&1); rc=$?
expect_eq "boards: promtool check metrics passes" 0 "$rc"
expect_eq "boards: no lint problem" "" "$out"
text=$(cat "$m")
expect_match "utilisation as a ratio, per node and board" \
	'^vigil_board_utilization_ratio\{node="gpu-02",board="0"\} 0\.93$' "$text"
expect_match "memory in bytes" \
	'^vigil_board_memory_total_bytes\{node="gpu-01",board="0"\} 85899345920$' "$text"
expect_match "temperature in celsius" \
	'^vigil_board_temperature_celsius\{node="gpu-01",board="1"\} 40$' "$text"
expect_match "power in watts, from milliwatts" \
	'^vigil_board_power_watts\{node="gpu-01",board="0"\} 612\.345$' "$text"
expect_match "training CPU is a counter" \
	'^# TYPE vigil_training_cpu_seconds_total counter$' "$text"
expect_match "training memory in bytes" \
	'^vigil_training_memory_bytes\{node="gpu-01"\} [1-9][0-9]*$' "$text"

# Hostile node names (quote, backslash, newline, UTF-8) still parse.
m="$SCRATCH/hostile.prom"
"$METRICS_PROG" "$m" --nvml "$FAKE" $slots --node 'a"b' --node 'c\d' --node "$(printf 'e\nf')" \
	--node 'nœud-7'; rc=$?
expect_eq "hostile: written" 0 "$rc"
out=$(promtool check metrics < "$m" 2>&1); rc=$?
expect_eq "hostile: promtool check metrics passes" 0 "$rc"
expect_match "hostile: newline escaped" 'node="e\\nf"' "$(cat "$m")"

# Everything, the timing families too: promtool finds nothing to say
# (base units: seconds, bytes, ratios).
m="$SCRATCH/full.prom"
"$METRICS_PROG" "$m" --nvml "$FAKE" $slots --timings; rc=$?
expect_eq "full: written" 0 "$rc"
out=$(promtool check metrics < "$m" 2>&1); rc=$?
expect_eq "full: promtool check metrics passes, lint included" "0 " "$rc $out"

# A missing library: no board families, the file still valid.
m="$SCRATCH/none.prom"
"$METRICS_PROG" "$m" --nvml "$SCRATCH/nowhere.so" $slots; rc=$?
expect_eq "no library: written" 0 "$rc"
expect_no_match "no library: no board family" '^vigil_board_' "$(cat "$m")"
out=$(promtool check metrics < "$m" 2>&1); rc=$?
expect_eq "no library: promtool passes" 0 "$rc"

finish
