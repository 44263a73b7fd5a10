#!/bin/bash
# vigil slots: the table for people and the JSON for scripts.
. "$(dirname "$0")/lib.sh"

out=$("$VIGIL" slots --topology "$TOPO_DIR/mpibind-g4dnmetal.xml"); rc=$?
expect_eq "table exit" 0 "$rc"
expect_eq "table has a header and 8 rows" 9 "$(printf '%s\n' "$out" | grep -c .)"
expect_match "table shows a T4 with its bus id" 'nvidia +Tesla T4 +0000:' "$out"

out=$("$VIGIL" slots --json --topology "$TOPO_DIR/mpibind-g4dnmetal.xml")
summary=$(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
s = d["slots"]
print(len(s), d["SLOTS"], sorted({x["vendor"] for x in s}), [x["index"] for x in s],
      sorted({tuple(x["numa"]) for x in s}), all(x["pci_bus_id"].startswith("0000:") for x in s),
      all(set(x) >= {"index", "vendor", "model", "pci_bus_id", "numa", "cpuset", "nics"} for x in s))')
expect_eq "json slots" "8 8 ['nvidia'] [0, 1, 2, 3, 4, 5, 6, 7] [(0,), (1,)] True True" "$summary"

out=$("$VIGIL" slots --json --topology "$TOPO_DIR/mpibind-cts1-quartz-smt1.xml")
summary=$(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len(d["slots"]), d["SLOTS"])')
expect_eq "CPU node: no slots, SLOTS 1" "0 1" "$summary"
out=$("$VIGIL" slots --topology "$TOPO_DIR/mpibind-cts1-quartz-smt1.xml")
expect_match "CPU node table says so" 'SLOTS=1' "$out"

# This machine, live.
"$VIGIL" slots >/dev/null; rc=$?
expect_eq "live slots exit" 0 "$rc"

out=$("$VIGIL" slots --topology "$SCRATCH/absent.xml" 2>&1); rc=$?
expect_eq "missing topology exit" 84 "$rc"
expect_match "missing topology message" 'absent.xml' "$out"
out=$("$VIGIL" slots extra 2>&1); rc=$?
expect_eq "stray argument exit" 64 "$rc"

finish
