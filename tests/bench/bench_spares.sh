#!/bin/bash
# bench_spares.sh - what a hot spare saves against a requeue, on the real
# Slurm 22.05 cluster of the suite (tests/slurm/cluster.sh, three nodes):
# contrib/slurm/vigil.sbatch with the probe training of the suite
# (tests/integration/ettr_probe.py: its own clock for every iteration and
# its crash), rank 1 crashing at iteration 12, ROUNDS times (default 2)
# each way, alternating:
#
#   spare     --nodes=3 with --spares 1: every other training saves, and
#             the training starts again inside the same allocation, the
#             spare in rank 1's seat (the same world size)
#   requeue   --nodes=2, no spare: every other training saves, vigil ends
#             with 81, the script requeues the job without the failed
#             node, Slurm starts it again after its requeue delay
#
# The jobs are tests/slurm/spare_job.sh's.  For each: seconds from the
# crash (the probe's clock) to the end of the first iteration after it
# (the lost time) and to the first training's start after it; medians,
# with the training's own start (its process to its first iteration)
# that no recovery can beat.  The requeue's figure holds
# the cluster's requeue delay (SL_CRED_EXPIRE + 1 s, 11 s here); a site's
# default is 121 s (AuthInfo's cred_expire, 120 s): the figure with it is
# printed too.  The ratio requeue / spare is what a spare saves.
# Needs root (the cluster).  Usage: tests/bench/bench_spares.sh [VIGIL]
# Env: ROUNDS.
set -uo pipefail

vigil=$(realpath "${1:-./vigil}")
here=$(cd "$(dirname "$0")" && pwd)
export VIGIL="$vigil" TOPO_DIR="$here/../data/topo" TESTS_SRCDIR="$here/.."
. "$here/../integration/lib.sh"
. "$here/../slurm/cluster.sh"
sl_require
rounds=${ROUNDS:-2}
SITE_DELAY=121

sl_up 3 || { echo "bench_spares: the cluster did not start" >&2; exit 1; }
. "$here/../slurm/spare_job.sh"
echo "# hot spare vs requeue ($(nproc) cores, $(date -u +%Y-%m-%d)), Slurm" \
	"$(sl_cmd sinfo --version | awk '{print $2}'), cred_expire ${SL_CRED_EXPIRE:-10} s, $rounds rounds"
res=$SCRATCH/results
: >"$res"
for ((k = 1; k <= rounds; k++)); do
	for way in spare requeue; do
		sp_job "$way" "$k" || { echo "$way: job $sp_id did not end" >&2; exit 1; }
		echo "$way $(sp_lost "$way" "$sp_probe")" | tee -a "$res"
	done
done
sl_down || echo "bench_spares: the cluster left something behind" >&2
python3 - "$res" "$SITE_DELAY" "${SL_CRED_EXPIRE:-10}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
site, cred = float(sys.argv[2]), float(sys.argv[3])
med = lambda way, i: statistics.median(float(r[i]) for r in rows if r[0] == way)
s, q, own = med("spare", 1), med("requeue", 1), med("spare", 3)
at_site = q - (cred + 1) + site
print("| way | crash to the first iteration after it (s) | to the training's start (s) |")
print("|---|---|---|")
print("| spare (the same allocation) | %.2f | %.2f |" % (s, med("spare", 2)))
print("| requeue (Slurm, requeue delay %.0f s) | %.2f | %.2f |" % (cred + 1, q, med("requeue", 2)))
print("| requeue at the default delay (%.0f s) | %.2f | |" % (site, at_site))
print("the training's own start (process to first iteration): %.2f s; the spare adds %.2f s to it"
      % (own, s - own))
print("requeue / spare: %.1fx here, %.1fx at the default delay" % (q / s, at_site / s))
PY
