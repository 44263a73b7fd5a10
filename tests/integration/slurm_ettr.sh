#!/bin/bash
# Where a job's time went across a requeue chain, on a real Slurm 22.05
# cluster of three nodes (tests/slurm/cluster.sh): contrib/slurm/vigil.sbatch
# on two of them with a probe training (ettr_probe.py) that writes down its
# own time (every iteration's start and end, its checkpoint signal, its
# crash, its exit), in three attempts of one job:
#   0: rank 1's training crashes at iteration 12: every other training
#      saves, vigil ends with 81, the script requeues without that node;
#   1: resumed, then the batch system's checkpoint signal (scancel
#      --signal=USR1 --batch, what Slurm's --signal sends before the time
#      limit): every training saves, 81, requeued;
#   2: resumed, runs to its last iteration: 0.
# `vigil report` of the job's event log must match the probe's clock:
# per attempt the iterations' span (productive + straggler + other) within
# 0.5 s, productive and straggler time within 3 % + 0.3 s of the probe's
# own e2e times (median across ranks per iteration; the slowest's excess),
# the detection from the last iteration to the crash's event within 0.3 s,
# the checkpoint from the signal to the last exit within 1 s; each
# attempt's start Slurm's start of its allocation (the last one's as
# scontrol says, within 1 s), the gaps at least Slurm's requeue delay and
# split at Slurm's eligible time (the last one's as scontrol says, within
# 1 s) into that delay and the queue wait; the chain's ETTR within 0.02 of the probe's
# productive time over the chain's elapsed time.  The plot's timeline is
# rendered with rsvg-convert and its bars, marks and colours checked in
# the image; --metrics passes promtool.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
for t in rsvg-convert promtool; do
	command -v "$t" >/dev/null 2>&1 || { echo "$t not found" >&2; exit 77; }
done
sl_up 3 || { fail "cluster"; finish; }

W=$SL_SPOOL
P=$W/probe
mkdir -p "$P" && chmod 0755 "$P"
PROBE="$(cd "$(dirname "$0")" && pwd)/ettr_probe.py"
sl_template "$W/train.sbatch" "$PROBE $P 70 200 1 12" "" \
	's/^#SBATCH --nodes=4$/#SBATCH --nodes=2/' 's/^#SBATCH --time=24:00:00$/#SBATCH --time=10/' ||
	fail "the template copy"
id=$(sl_cmd env GRACE=5 VIGIL="$VIGIL" RUN_DIR="$W/run" \
	sbatch --parsable --chdir="$W" "$W/train.sbatch")
out=$W/train-$id.out

# attempt 0 crashes by itself; attempt 1 gets the signal at iteration 35
sl_wait_lines "$out" '^vigil\.sbatch: run 1 of job' 1 120 || fail "run 1 did not start"
sl_wait_lines "$P/truth.1.0" '^iter 35 ' 1 90 || fail "run 1: no iteration 35"
sl_cmd scancel --signal=USR1 --batch "$id"
sl_wait_lines "$out" '^vigil\.sbatch: run 2 of job' 1 120 || fail "run 2 did not start"
sl_wait_job "$id" 'COMPLETED|FAILED|CANCELLED' 120 || fail "run 2 did not end"
expect_eq "the job: completed, requeued twice" "COMPLETED 2" \
	"$(sl_job_field "$id" JobState) $(sl_job_field "$id" Restarts)"
expect_eq "the crash, then the signal" "1 2" \
	"$(grep -c '^crash ' "$P"/truth.0.* | awk -F: '{s += $2} END {print s}') $(cat "$P"/truth.1.* | grep -c '^signal ')"

EV=$W/run/events.jsonl
"$VIGIL" report "$EV" --json --plot "$W/chain.svg" --metrics "$W/chain.prom" >"$W/report.json"
expect_eq "vigil report" 0 "$?"
"$VIGIL" report "$EV" | sed -n '/^time:/,/^  shares:/p'

# the split against the probe's clock; the last run's start against Slurm's
slurm_start=$(date -d "$(sl_job_field "$id" StartTime)" +%s)
slurm_eligible=$(date -d "$(sl_job_field "$id" EligibleTime)" +%s)
got=$(python3 - "$W/report.json" "$P" "$EV" "$id" "$slurm_start" "$slurm_eligible" <<'PY'
import json, statistics, sys
rep, pdir, ev, jid, slurm_start, slurm_eligible = sys.argv[1:]
chain = json.load(open(rep))["chain"]
events = [json.loads(l) for l in open(ev) if l.strip()]
def t(e):
    import calendar, time
    s = e["time"]
    return calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) + float(s[19:-1] or 0)
def truth(a, r):
    lines = [l.split() for l in open("%s/truth.%d.%d" % (pdir, a, r))]
    return {"iter": [(int(l[1]), float(l[2]), float(l[3])) for l in lines if l[0] == "iter"],
            "signal": [float(l[1]) for l in lines if l[0] == "signal"],
            "crash": [float(l[2]) for l in lines if l[0] == "crash"],
            "exit": [float(l[1]) for l in lines if l[0] == "exit"]}
bad = []
def near(what, got, want, tol):
    print("%-34s vigil %8.3f  truth %8.3f  (within %.3f)" % (what, got, want, tol), file=sys.stderr)
    if abs(got - want) > tol:
        bad.append("%s: %.3f, the probe says %.3f" % (what, got, want))
atts = chain["attempts"]
if len(atts) != 3 or chain["key"] != "slurm:" + jid:
    print("chain: %d attempts, key %s" % (len(atts), chain["key"])); sys.exit()
prod_truth = 0
for a in range(3):
    s, tr = atts[a]["split_s"], [truth(a, r) for r in (0, 1)]
    e2e = {}
    it0 = tr[0]["iter"]
    # the iterations' span is rank 0's (the coordinator's): what another
    # rank spent in its first iteration before rank 0 began one (it
    # started first, and waited in the collective) is the start's skew
    for x in tr:
        for n, b, e in x["iter"]:
            e2e.setdefault(n, []).append(min(e, it0[-1][2]) - max(b, it0[0][1]))
    both = [v for v in e2e.values() if len(v) == 2]
    med = sum(statistics.median(v) for v in both)
    strag = sum(max(v) - statistics.median(v) for v in both)
    prod_truth += med
    near("attempt %d: iterations' span" % a, s["productive"] + s["redone"] + s["straggler"] + s["other"],
         it0[-1][2] - it0[0][1], 0.5)
    near("attempt %d: productive" % a, s["productive"] + s["redone"], med, 0.03 * med + 0.3)
    near("attempt %d: straggler" % a, s["straggler"], strag, 0.03 * med + 0.3)
    if a == 0:
        crash = [e for e in events if e["kind"] == "exit" and e["details"].get("exit_code") == 1]
        near("attempt 0: detection", s["detection"], t(crash[0]) - it0[-1][2], 0.3)
        if not (tr[1]["crash"][0] - 0.05 <= it0[-1][2] + s["detection"]):
            bad.append("attempt 0: detected before the crash")
    if a == 1:
        sig = min(x["signal"][0] for x in tr)
        end = max(x["exit"][-1] for x in tr)
        near("attempt 1: checkpoint", s["checkpoint"], end - sig, 1.0)
    if a > 0 and atts[a]["gap_before_s"] < 10:
        bad.append("attempt %d: a gap of %.3f s, under Slurm's requeue delay" % (a, atts[a]["gap_before_s"]))
    # the gap split at Slurm's eligible time: the requeue delay (the
    # cluster's cred_expire, 10 s, + 1) before it, the queue after
    rq, qw = atts[a]["requeue_delay_s"], atts[a]["queue_wait_s"]
    if a > 0 and (rq is None or qw is None or not 10 <= rq <= 20 or qw < 0 or
                  abs(rq + qw - atts[a]["gap_before_s"]) > 0.01):
        bad.append("attempt %d: the gap of %.3f s split as %s + %s" % (a, atts[a]["gap_before_s"], rq, qw))
near("attempt 2: the requeue delay", atts[2]["requeue_delay_s"],
     int(slurm_eligible) - atts[1]["ended"], 1.0)
if chain["requeue_delay_s"] is None or abs(chain["requeue_delay_s"] + chain["queue_wait_s"] -
                                          atts[1]["gap_before_s"] - atts[2]["gap_before_s"]) > 0.01:
    bad.append("chain: the gaps split as %s + %s" % (chain["requeue_delay_s"], chain["queue_wait_s"]))
    if not (atts[a]["allocation_started"] or 0) <= atts[a]["agent_started"] or s["launch"] <= 0:
        bad.append("attempt %d: no launch from the allocation's start" % a)
near("attempt 2: the allocation's start", atts[2]["allocation_started"], int(slurm_start), 1.0)
near("chain: ETTR", chain["ettr"], prod_truth / chain["elapsed_s"], 0.02)
states = " ".join(x["state"] for x in atts)
print("; ".join(bad) if bad else "ok " + states)
PY
)
expect_eq "vigil's split matches the probe's clock" "ok error stopped succeeded" "$got"

# the plot: the timeline's elements, then the image
got=$(python3 - "$W/chain.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
S = "{http://www.w3.org/2000/svg}"
cls = lambda tag, c: [e for e in root.iter(S + tag) if (e.get("class") or "").split()[:2] == c.split()]
labels = [e.text for e in cls("text", "tl-label")]
title = [e.text for e in cls("text", "tl-title")]
keys = sorted(e.text for e in cls("text", "tl-key"))
print(root.get("height"), labels, len(cls("line", "requeue")), len(cls("path", "fault")) >= 1,
      len(cls("rect", "seg productive")), len(cls("rect", "seg between_attempts")),
      "ETTR" in title[0], "productive" in keys and "fault" in keys and "requeue" in keys)
PY
)
expect_eq "svg: a bar per attempt, the requeues, the fault, the legend" \
	"740 ['attempt 1', 'attempt 2', 'attempt 3'] 2 True 3 2 True True" "$got"
rsvg-convert -o "$W/chain.png" "$W/chain.svg"
expect_eq "rsvg-convert renders it" 0 "$?"
got=$(PYTHONPATH="$(cd "$(dirname "$0")" && pwd)" python3 - "$W/chain.png" <<'PY'
import sys
from png_rows import read
w, h, bpp, rows = read(sys.argv[1])
def has(colour, y0, y1, x0=80, x1=720):
    return any(tuple(rows[y][x * bpp:x * bpp + 3]) == colour for y in range(y0, y1) for x in range(x0, x1))
# the bars (576..686): productive green, the gaps' grey; the faults' red triangle
print(w, h, has((0x59, 0xa1, 0x4f), 576, 686), has((0xe6, 0xe6, 0xe6), 576, 686),
      has((0xd6, 0x27, 0x28), 560, 686))
PY
)
expect_eq "png: the timeline drawn: productive, gaps, the fault" "960 740 True True True" "$got"

out=$(promtool check metrics <"$W/chain.prom" 2>&1)
expect_eq "metrics: promtool passes, no lint" "0 " "$? $out"
expect_match "metrics: the chain's attempts and ETTR" \
	'vigil_chain_attempts 3.*vigil_chain_ettr_ratio 0\.[0-9]+' "$(tr '\n' ' ' <"$W/chain.prom")"
expect_match "metrics: the gaps split" \
	'between_attempts_seconds\{part="requeue_delay"\} [0-9.]+ vigil_chain_between_attempts_seconds\{part="queue_wait"\}' \
	"$(tr '\n' ' ' <"$W/chain.prom")"
expect_match "text: the gap split" 'gap: +[0-9.]+ s \(requeue delay [0-9.]+ s, queue wait [0-9.]+ s\)' \
	"$("$VIGIL" report "$EV")"

sl_down || fail "the cluster left something behind"
finish
