#!/bin/sh
# run.sh FUZZER SEEDS - run a libFuzzer binary for $FUZZ_SECONDS (default 30)
# on a scratch copy of the seed directory SEEDS.
#
# The corpus the fuzzer grows, and anything it finds, stay in a directory
# under $TMPDIR, never in the source tree.  Exit status: 0 when the run
# ended clean, non-zero on any crash, leak, sanitizer report or timeout;
# the scratch directory is then kept (its path is printed) with the input
# that failed, to replay with `FUZZER FILE`.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: $0 FUZZER SEEDS" >&2
	exit 2
fi
fuzzer=$1
seeds=$2
seconds=${FUZZ_SECONDS:-30}

case $seconds in
''|*[!0-9]*) echo "$0: FUZZ_SECONDS must be a whole number of seconds" >&2; exit 2;;
esac
[ -x "$fuzzer" ] || { echo "$0: $fuzzer: not an executable" >&2; exit 2; }
[ -d "$seeds" ] || { echo "$0: $seeds: no such directory" >&2; exit 2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/vigil-fuzz.XXXXXX")
keep=no
cleanup() {
	if [ "$keep" = no ]; then
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir "$work/corpus" "$work/artifacts"
cp "$seeds"/* "$work/corpus/"

# Words of the input's language, so that mutations keep producing inputs
# the parser walks far into: the configuration's keys, or the event log's.
case $(basename "$fuzzer") in
fuzz_linebuf)
	cat > "$work/fuzz.dict" <<'DICT'
"e2e time is "
"this iteration hardware time is 1 and e2e time is 2 ms."
"e2"
"aaa"
"\x0a"
"\x0d"
DICT
	;;
fuzz_msg)
	cat > "$work/fuzz.dict" <<'DICT'
"\"go\""
"\"bcast\""
"\"nodes\""
"\"members\""
"\"host\""
"\"addr\""
"\"slots\""
"\"node\""
"\"attempt\""
"\"exit_code\""
"\"signal\""
"\"agent_signal\""
"\"stderr_tail\""
"\"checkpoint\""
"\"confirmed\""
"\"command\""
"\"restart\""
"\"findings\""
"\"verdict\""
"\"coordinator\""
"\"silent\""
"\"finalize\""
"\"cycles\""
"true"
"false"
"1e308"
"-1"
DICT
	;;
fuzz_events)
	cat > "$work/fuzz.dict" <<'DICT'
"{\"time\":"
"\"2026-11-20T23:30:00.000Z\""
"\"node\""
"\"rank\""
"\"kind\""
"\"severity\""
"\"message\""
"\"details\""
"\"job\""
"\"perf\""
"\"alert\""
"\"exit\""
"\"node_lost\""
"\"fault\""
"\"check\""
"\"verdict\""
"\"checkpoint\""
"\"restart\""
"\"stop\""
"\"state\""
"\"exit_code\""
"\"signal\""
"\"iter\""
"\"node_e2e\""
"\"e2e_min\""
"\"e2e_mean\""
"\"e2e_max\""
"\"e2e_max_node\""
"\"hw_mean\""
"\"r_mean\""
"\"straggler\""
"\"value\""
"1e999"
"\x0a"
DICT
	;;
*)
	cat > "$work/fuzz.dict" <<'DICT'
"\"sysfs_root\""
"\"check\""
"\"timeout\""
"\"gather_timeout\""
"\"slots\""
"\"expected\""
"\"pcie_degraded\""
"\"aer_correctable_max\""
"\"driver_required\""
"\"memory\""
"\"min_free_mb\""
"\"storage\""
"\"paths\""
"\"path\""
"\"min_free_inodes\""
"\"writable\""
"\"shm_min_mb\""
"\"limits\""
"\"memlock_unlimited\""
"\"nofile_min\""
"\"nics\""
"\"required\""
"\"min_speed_mbps\""
"\"ib_devices\""
"\"ib_min_rate_gbps\""
"\"run\""
"\"grace\""
"\"heartbeat\""
"\"max_resumes\""
"\"restart\""
"\"hold_on_failure\""
"\"ckpt_signal\""
"\"mode\""
"\"events\""
"\"2m\""
"\"1-00:00:00\""
"\"%j\""
"\\u0000"
"\"pass\""
"\"warn\""
"\"fail\""
"true"
"false"
"null"
"1e308"
"-1"
DICT
	;;
esac

# Leaks and undefined behaviour are failures like crashes.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS UBSAN_OPTIONS

status=0
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
	-max_len=16384 -dict="$work/fuzz.dict" \
	-artifact_prefix="$work/artifacts/" -print_final_stats=1 \
	"$work/corpus" > "$work/fuzz.log" 2>&1 || status=$?

if [ "$status" -ne 0 ] || [ -n "$(ls -A "$work/artifacts")" ]; then
	keep=yes
	tail -n 60 "$work/fuzz.log" >&2
	echo "$0: FAILED (fuzzer status $status); inputs and log kept in $work" >&2
	# Not the fuzzer's own status: its 77 would read as "skipped" to a
	# test harness.
	exit 1
fi
grep -E '^(#[0-9]+.*DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$work/fuzz.log" || true
echo "$0: $(basename "$fuzzer"): ${seconds}s clean, corpus grew from $(ls "$seeds" | wc -l) to $(ls "$work/corpus" | wc -l) inputs"
