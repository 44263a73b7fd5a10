# shellcheck shell=bash
# spare_job.sh - one job of the spare-against-requeue comparison on the
# cluster of cluster.sh (sourced after it, once sl_up has run; VIGIL names
# the binary): contrib/slurm/vigil.sbatch with the probe training of the
# suite (tests/integration/ettr_probe.py: its own clock for every
# iteration and its crash), 40 iterations of 100 ms, rank 1 crashing at
# iteration 12 of the first run:
#
#   sp_job spare K     --nodes=3 with --spares 1: every other training
#                      saves and the training starts again inside the
#                      same allocation, the spare in rank 1's seat
#   sp_job requeue K   --nodes=2, no spare: every other training saves,
#                      vigil ends with 81, the script requeues the job
#                      without the failed node
#
# Each waits for the job's end (240 s at most) and sets sp_id (the job
# id), sp_probe (the probe's directory) and sp_run (the template's
# RUN_DIR), returning 1 when the job did not end.
#   sp_lost WAY DIR    "LOST TO_START OWN": seconds from the crash (the
#                      probe's clock) to the end of the first iteration
#                      after it, to the first training's start after it,
#                      and the training's own start in the first run (its
#                      start to the end of its first iteration: what no
#                      recovery can beat); fails when the probe has none.

SP_PROBE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../integration" && pwd)/ettr_probe.py"

sp_job() {
	local way=$1 k=$2 nodes extra
	sp_probe="$SL_SPOOL/$way.$k" sp_run="$SL_SPOOL/run.$way.$k"
	mkdir -p "$sp_probe" && chmod 0755 "$sp_probe"
	if [ "$way" = spare ]; then nodes=3 extra="--spares 1"; else nodes=2 extra=""; fi
	sl_template "$SL_SPOOL/$way.$k.sbatch" "$SP_PROBE $sp_probe 40 100 1 12" "$extra" \
		"s/^#SBATCH --nodes=4\$/#SBATCH --nodes=$nodes/" \
		's/^#SBATCH --time=24:00:00$/#SBATCH --time=10/' || return 1
	sp_id=$(sl_cmd env GRACE=5 VIGIL="$VIGIL" RUN_DIR="$sp_run" \
		sbatch --parsable --chdir="$SL_SPOOL" "$SL_SPOOL/$way.$k.sbatch") || return 1
	sl_wait_job "$sp_id" 'COMPLETED|FAILED|CANCELLED' 240
}

sp_lost() {
	python3 - "$2" "$1" <<'PY'
import glob, sys
p, way = sys.argv[1:]
def lines(pattern):
    out = []
    for f in sorted(glob.glob("%s/%s" % (p, pattern))):
        out += [l.split() for l in open(f)]
    return out
first = lines("truth.0.[0-9]*")
crash = [float(l[2]) for l in first if l[0] == "crash"]
after = lines("truth.0.r1.*" if way == "spare" else "truth.1.*")
starts = [float(l[1]) for l in after if l[0] == "start"]
iters = sorted(float(l[3]) for l in after if l[0] == "iter")
own = [l for l in lines("truth.0.0") if l[0] in ("start", "iter")]
if len(crash) != 1 or not starts or not iters or len(own) < 2:
    sys.exit("%s: no crash, or nothing after it" % way)
print("%.3f %.3f %.3f" % (iters[0] - crash[0], min(starts) - crash[0],
                          float(own[1][3]) - float(own[0][1])))
PY
}
