#!/bin/bash
# vigil report: the summary, the JSON and the SVG plot of an event log.
. "$(dirname "$0")/lib.sh"

LOG="$SCRATCH/events.jsonl"

# has_line WHAT LINE TEXT: TEXT has LINE, whole.
has_line() {
	if printf '%s\n' "$3" | grep -Fxq -- "$2"; then pass "$1"
	else fail "$1: no line [$2] in:"$'\n'"$3"; fi
}

# A finished job: 4 nodes, 200 iterations with a summary each, n3 slow from
# iteration 91, a straggler alert on n3 and a ratio alert on n2, one
# malformed line, a checkpoint, the exits and the job's end.
python3 - "$LOG" <<'PY'
import json, sys

nodes = ["n1", "n2", "n3", "n4"]
lines = []

def ev(sec, node, rank, kind, sev, msg, details=None):
    lines.append(json.dumps({
        "time": "2026-11-20T23:%02d:%02d.000Z" % (30 + sec // 60, sec % 60),
        "node": node, "rank": rank, "kind": kind, "severity": sev,
        "message": msg, "details": details or {}}))

def e2e(rank, it):
    return (150 if rank == 2 and it > 90 else 100 + rank) + it % 5

for r, n in enumerate(nodes):
    ev(0, n, r, "check", "info", "slots: 8 slots", {"check": "slots", "verdict": "pass"})
ev(1, "n1", 0, "verdict", "info", "all 4 nodes healthy", {"verdict": "pass"})
ev(1, "n1", 0, "launch", "info", "starting the training")
for it in range(1, 201):
    v = {n: e2e(r, it) for r, n in enumerate(nodes)}
    ev(2 + it // 10, "n1", 0, "perf", "info", "iteration summary", {
        "iter": it, "e2e_min": min(v.values()), "e2e_mean": sum(v.values()) / 4,
        "e2e_max": max(v.values()), "e2e_min_node": min(v, key=v.get),
        "e2e_max_node": max(v, key=v.get), "hw_mean": 80, "r_min": 0.5,
        "r_mean": 0.75, "r_max": 0.8, "r_min_node": "n3", "r_max_node": "n1",
        "node_e2e": v})
    if it == 60:
        lines.append('{"kind": "perf", truncated')
    if it == 110:
        m = "n3 (rank 2): e2e 48.5% above the median of nodes for 5 iterations"
        ev(13, "n3", 2, "alert", "warning", m,
           {"kind": "straggler", "iter": 110, "node": "n3", "rank": 2, "value": 48.5, "message": m})
    if it == 150:
        m = "n2 (rank 1): hw/e2e 0.50 above 0.45 for 5 iterations"
        ev(17, "n2", 1, "alert", "warning", m,
           {"kind": "ratio", "iter": 150, "node": "n2", "rank": 1, "value": 0.5, "message": m})
ev(25, "n1", 0, "checkpoint", "warning", "the time limit is near")
for r, n in enumerate(nodes):
    ev(27, n, r, "exit", "info", "training ended with status 0", {"exit_code": 0, "attempt": 0})
ev(28, "n1", 0, "job", "error", "job expired (exit 83): the time limit is near",
   {"state": "expired", "exit_code": 83})
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY

# ---- the summary
out=$("$VIGIL" report "$LOG"); rc=$?
expect_eq "summary exit" 0 "$rc"
has_line "file and events" "events:        $LOG (214 events)" "$out"
has_line "state and status" "job:           expired, exit status 83" "$out"
has_line "reason" "reason:        job expired (exit 83): the time limit is near" "$out"
has_line "time span" "time:          2026-11-20T23:30:00.000Z to 2026-11-20T23:30:28.000Z (28.0 s)" "$out"
has_line "nodes" "nodes:         4 (4 exited, 0 lost)" "$out"
has_line "the slow node" "  n3    rank 2    exit 0; slow (1 straggler alert)" "$out"
has_line "checkpoints" "checkpoints:   1" "$out"
has_line "iterations" "iterations:    200 (200 summaries)" "$out"
has_line "e2e time" "e2e time:      min 100.000 ms, median 104.000 ms, max 154.000 ms" "$out"
has_line "slowest node" "slowest node:  n3, median e2e 150.000 ms (44.2% above the median node, 104.000 ms)" "$out"
has_line "alerts" "alerts:        2" "$out"
has_line "straggler alert" "  iteration 110  straggler  n3 (rank 2): e2e 48.5% above the median of nodes for 5 iterations" "$out"
has_line "ratio alert" "  iteration 150  ratio      n2 (rank 1): hw/e2e 0.50 above 0.45 for 5 iterations" "$out"
has_line "malformed line counted" "malformed:     1 line skipped (line 67)" "$out"

out=$("$VIGIL" report - < "$LOG"); rc=$?
expect_eq "stdin exit" 0 "$rc"
has_line "stdin read" "job:           expired, exit status 83" "$out"

# ---- the JSON
out=$("$VIGIL" report "$LOG" --json); rc=$?
expect_eq "json exit" 0 "$rc"
summary=$(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
p = d["performance"]
print(d["job"]["state"], d["job"]["exit_code"], d["events"], d["malformed_lines"],
      [n["node"] for n in d["nodes"]], [n["node"] for n in d["nodes"] if n["slow"]],
      len(d["checkpoints"]), p["iterations"], p["e2e_ms"]["median"], p["slowest_node"]["node"],
      [(a["kind"], a["iter"], a["node"]) for a in d["alerts"]])')
expect_eq "json fields" \
	"expired 83 214 1 ['n1', 'n2', 'n3', 'n4'] ['n3'] 1 200 104 n3 [('straggler', 110, 'n3'), ('ratio', 150, 'n2')]" \
	"$summary"

# ---- the plot
SVG="$SCRATCH/plot.svg"
"$VIGIL" report "$LOG" --plot "$SVG" >/dev/null; rc=$?
expect_eq "plot exit" 0 "$rc"
summary=$(python3 -c '
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
svg = doc.documentElement
lines = [l for l in doc.getElementsByTagName("line") if l.getAttribute("class") == "alert"]
texts = [t.firstChild.data for t in doc.getElementsByTagName("text") if t.firstChild]
slow = [t.firstChild.data for t in doc.getElementsByTagName("text") if t.getAttribute("class") == "slow"]
print(svg.tagName, svg.getAttribute("xmlns"), len(doc.getElementsByTagName("polyline")), len(lines),
      "iteration" in texts, "e2e time (ms)" in texts, "n3 (150.000 ms)" in texts, len(slow),
      sorted(t for t in texts if "@" in t))' "$SVG" 2>&1)
expect_eq "plot: well-formed, 4 node lines, 2 alert markers, axes, slow node flagged" \
	"svg http://www.w3.org/2000/svg 4 2 True True True 1 ['ratio n2 @150', 'straggler n3 @110']" \
	"$summary"
if command -v rsvg-convert >/dev/null 2>&1; then
	rsvg-convert -o "$SCRATCH/plot.png" "$SVG"; rc=$?
	expect_eq "plot renders" 0 "$rc"
fi

# ---- a torn line (a full disk): the job's end cut short, the next job's
# first event glued to it; the run boundary is kept, with a warning
TORN="$SCRATCH/torn.jsonl"
head -n 5 "$LOG" > "$TORN"
printf '{"time":"2026-11-20T23:31:00.000Z","node":"n1","rank":0,"kind":"job","sev' >> "$TORN"
printf '{"time":"2026-11-20T23:40:00.000Z","node":"n1","rank":0,"kind":"launch","severity":"info","message":"again","details":{}}\n' >> "$TORN"
out=$("$VIGIL" report "$TORN" 2>"$SCRATCH/torn.err"); rc=$?
expect_eq "torn log exit" 0 "$rc"
has_line "the torn job still ends its run" "earlier runs:  ?" "$out"
has_line "the glued event starts the next" "time:          2026-11-20T23:40:00.000Z to 2026-11-20T23:40:00.000Z (0.0 s)" "$out"
expect_match "warning names the line" "warning: $TORN, line 6: a torn event" "$(cat "$SCRATCH/torn.err")"

# ---- errors
out=$("$VIGIL" report "$SCRATCH/absent.jsonl" 2>&1); rc=$?
expect_eq "missing log exit" 84 "$rc"
expect_match "missing log named" 'absent\.jsonl' "$out"
out=$("$VIGIL" report "$LOG" --plot "$SCRATCH/no/dir/plot.svg" 2>&1 >/dev/null); rc=$?
expect_eq "unwritable plot exit" 84 "$rc"
expect_match "unwritable plot named" 'no/dir/plot\.svg' "$out"
"$VIGIL" report >/dev/null 2>&1; rc=$?
expect_eq "no log: usage" 64 "$rc"
"$VIGIL" report "$LOG" "$LOG" >/dev/null 2>&1; rc=$?
expect_eq "two logs: usage" 64 "$rc"
"$VIGIL" report "$LOG" --bogus >/dev/null 2>&1; rc=$?
expect_eq "unknown option: usage" 64 "$rc"
"$VIGIL" report --help >/dev/null; rc=$?
expect_eq "help" 0 "$rc"

finish
