#!/bin/bash
# bench_stage.sh - data staging throughput: `vigil stage` (several files at
# once, copy_file_range) against `cp -r` and `rsync -a` of the same tree,
# in the same run, each into a fresh directory on the same file system,
# with the source in the page cache for all three (read once first).  Also
# the second staging of an unchanged tree (reuse: nothing copied) against
# rsync's second run (its quick check).  Medians of REPS runs (default 3);
# the machines here are shared and noisy, so only the ratios compare.
#
# Tree: SMALL files of 256 KiB and LARGE files of 16 MiB (defaults 400 and
# 6: 196 MiB).  Usage: tests/bench/bench_stage.sh [VIGIL]   (default ./vigil)
set -euo pipefail

vigil=$(realpath "${1:-./vigil}")
reps=${REPS:-3}
small=${SMALL:-400}
large=${LARGE:-6}
jobs=${JOBS:-4}
command -v rsync >/dev/null || { echo "bench_stage: rsync is needed (Debian package rsync)" >&2; exit 1; }
w=$(mktemp -d "${TMPDIR:-/tmp}/vigil-bench-stage.XXXXXX")
trap 'chmod -R u+w "$w"; rm -rf "$w"' EXIT

mkdir -p "$w/src/small" "$w/src/large/deep"
for ((i = 0; i < small; i++)); do head -c 262144 /dev/urandom >"$w/src/small/f$i"; done
for ((i = 0; i < large; i++)); do head -c 16777216 /dev/urandom >"$w/src/large/deep/g$i"; done
bytes=$(du -sb "$w/src" | cut -f1)
cat "$w"/src/small/* "$w"/src/large/deep/* >/dev/null

# median_ms SETUP CMD: median wall time of CMD over REPS runs, SETUP (a
# shell line) before each, untimed.
median_ms() {
	local i t0 t1 times=()
	for ((i = 0; i < reps; i++)); do
		eval "$1"
		sync
		t0=$(date +%s%N)
		eval "$2" >/dev/null
		t1=$(date +%s%N)
		times+=($(( (t1 - t0) / 1000 )))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.1f", a[int((NR+1)/2)]/1000}'
}
fresh='chmod -R u+w "$w/dst" 2>/dev/null; rm -rf "$w/dst"; mkdir "$w/dst"'
mbs() { awk -v b="$bytes" -v ms="$1" 'BEGIN {printf "%.0f", b / 1048576 / (ms / 1000)}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

v=$(median_ms "$fresh" '"$vigil" stage --dir "$w/dst/stage" --jobs $jobs --max-use 100 ds="$w/src"')
c=$(median_ms "$fresh" 'cp -r "$w/src" "$w/dst/cp"')
r=$(median_ms "$fresh" 'rsync -a "$w/src/" "$w/dst/rsync/"')
# the first copies, untimed; the runs measured find everything there
"$vigil" stage --dir "$w/dst/stage2" --jobs $jobs --max-use 100 ds="$w/src" >/dev/null
rsync -a "$w/src/" "$w/dst/rsync2/"
vr=$(median_ms 'true' '"$vigil" stage --dir "$w/dst/stage2" --jobs $jobs --max-use 100 ds="$w/src"')
rr=$(median_ms 'true' 'rsync -a "$w/src/" "$w/dst/rsync2/"')

echo "# staging $((bytes / 1048576)) MiB ($small x 256 KiB, $large x 16 MiB), median of $reps runs ($(nproc) cores, $(date -u +%Y-%m-%d))"
printf '%-34s %10s %8s %16s %16s\n' "case" "ms" "MiB/s" "vigil/cp (time)" "vigil/rsync"
printf '%-34s %10s %8s %16s %16s\n' "vigil stage --jobs $jobs" "$v" "$(mbs "$v")" "" ""
printf '%-34s %10s %8s %16s %16s\n' "cp -r" "$c" "$(mbs "$c")" "$(ratio "$v" "$c")" ""
printf '%-34s %10s %8s %16s %16s\n' "rsync -a" "$r" "$(mbs "$r")" "" "$(ratio "$v" "$r")"
printf '%-34s %10s %8s %16s %16s\n' "reuse: vigil stage, unchanged" "$vr" "" "" ""
printf '%-34s %10s %8s %16s %16s\n' "reuse: rsync -a, unchanged" "$rr" "" "" "$(ratio "$vr" "$rr")"
echo "(ratios are of times: below 1, vigil is faster)"
