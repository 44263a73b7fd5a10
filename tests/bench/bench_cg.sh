#!/bin/bash
# bench_cg.sh - the timing-line parser and the agent's path for a
# training's stdout (bench_parse.c), as instruction counts under valgrind's
# callgrind: each pass against memchr() line splitting of the same bytes,
# in the same run.  Instruction counts do not depend on what else runs on
# the machine, so these ratios repeat where the timed ones of bench_parse
# wander; they weigh every instruction alike (memchr()'s wide ones
# included), so they are a floor for the timed ratio, not the same figure.
#
# Usage: tests/bench/bench_cg.sh [BENCH_PARSE]  (default tests/bench/bench_parse)
# Env: BENCH_MB (default 20)
set -euo pipefail

prog=${1:-tests/bench/bench_parse}
mb=${BENCH_MB:-20}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
command -v valgrind >/dev/null || { echo "bench_cg: valgrind is needed" >&2; exit 2; }

# ir PASS FUNCTION: instructions executed inside FUNCTION (and what it calls)
ir() {
	BENCH_MB=$mb BENCH_ONLY=$1 valgrind --tool=callgrind --toggle-collect="$2*" \
		--callgrind-out-file="$dir/$1.out" "$prog" >/dev/null 2>"$dir/$1.err"
	sed -n 's/^summary: *//p' "$dir/$1.out"
}

split=$(ir split split_only)
parse=$(ir parse split_parse)
reads=$(ir splitreads split_reads)
path=$(ir path agent_path)
awk -v s="$split" -v p="$parse" -v r="$reads" -v a="$path" -v mb="$mb" 'BEGIN {
	printf "# callgrind, %d MB of a training'"'"'s log (instructions)\n", mb
	printf "parse (callgrind): %.0f vs memchr split %.0f instructions: ratio %.2f\n", p, s, s / p
	printf "agent path (callgrind): %.0f vs memchr split %.0f instructions: ratio %.2f\n", a, r, r / a }'
