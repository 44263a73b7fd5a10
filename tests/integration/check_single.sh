#!/bin/bash
# vigil check on one node, without mpirun: the convention of LBNL NHC and
# Slurm's HealthCheckProgram (silent and 0 when healthy; one line
# `vigil: CHECK: REASON` and exit 80 when not), JSON, events, exit codes.
. "$(dirname "$0")/lib.sh"

R="$SCRATCH/root"
make_root "$R"
flags="--sysfs-root $R $(pascal_flags)"

# Healthy: silent, exit 0.
out=$("$VIGIL" check $flags 2>&1); rc=$?
expect_eq "healthy exit" 0 "$rc"
expect_eq "healthy is silent" "" "$out"

# The fabric NIC goes down: one line, exit 80.
echo down > "$R/sys/class/net/eth1/operstate"
echo 0 > "$R/sys/class/net/eth1/carrier"
out=$("$VIGIL" check $flags 2>/dev/null); rc=$?
expect_eq "nic down exit" 80 "$rc"
expect_eq "nic down gives one line" 1 "$(printf '%s\n' "$out" | wc -l)"
expect_match "nic down line names the check and the NIC" '^vigil: nics: .*eth1' "$out"

# A board falls off the bus as well: without --all the first failure only,
# with --all one line per failing check.
rm -rf "$R/sys/bus/pci/devices/0000:07:00.0"
out=$("$VIGIL" check $flags 2>/dev/null); rc=$?
expect_eq "two faults exit" 80 "$rc"
expect_eq "first failure only" 1 "$(printf '%s\n' "$out" | wc -l)"
expect_match "first failure is the slot" '^vigil: slots: .*0000:07:00.0' "$out"
out=$("$VIGIL" check --all $flags 2>/dev/null)
expect_eq "--all lists both" 2 "$(printf '%s\n' "$out" | grep -c '^vigil: ')"
expect_match "--all names the NIC too" '^vigil: nics: ' "$out"

# --json: the full report, every check.
out=$("$VIGIL" check --json $flags 2>/dev/null); rc=$?
expect_eq "json exit" 80 "$rc"
summary=$(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = d["nodes"][0]
print(d["verdict"], d["nodes_total"], d["nodes_failed"],
      ",".join(c["name"] + "=" + c["verdict"] for c in n["report"]["checks"]),
      n["report"]["facts"]["nslots"], n["report"]["facts"]["driver"])')
expect_eq "json report" "fail 1 1 slots=fail,boards=pass,memory=pass,storage=pass,limits=pass,nics=fail 2 535.104.05" "$summary"

# --events: one event per check plus the verdict, appended, each a JSON line.
ev="$SCRATCH/events.jsonl"
"$VIGIL" check --events "$ev" $flags >/dev/null 2>&1
"$VIGIL" check --events "$ev" $flags >/dev/null 2>&1
kinds=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
assert all(set(e) >= {"time", "node", "rank", "kind", "severity", "message", "details"} for e in ev)
print(len(ev), ev[-1]["kind"], ev[-1]["severity"],
      sum(1 for e in ev if e["kind"] == "check" and e["severity"] == "error"))' "$ev")
expect_eq "events appended with the schema" "14 verdict error 4" "$kinds"

# Node identity for the events and messages.
VIGIL_NODE_NAME=gpu-node-17 "$VIGIL" check --events "$SCRATCH/named.jsonl" $flags >/dev/null 2>&1
expect_match "VIGIL_NODE_NAME names the node" '"node":"gpu-node-17"' "$(head -n 1 "$SCRATCH/named.jsonl")"

# Bad input: exit codes and messages that say how to fix it.
out=$("$VIGIL" check --bogus 2>&1); rc=$?
expect_eq "unknown option exit" 64 "$rc"
expect_match "unknown option message" 'vigil check --help' "$out"
out=$("$VIGIL" check --slots many 2>&1); rc=$?
expect_eq "bad --slots exit" 64 "$rc"
expect_match "bad --slots message" "--slots needs a count.*'many'" "$out"
out=$("$VIGIL" check --sysfs-root "$SCRATCH/nowhere" 2>&1); rc=$?
expect_eq "missing sysfs root exit" 64 "$rc"
expect_match "missing sysfs root message" "sysfs-root.*nowhere" "$out"
printf '{"check": {"nics": {"requried": ["eth1"]}}}\n' > "$SCRATCH/typo.json"
out=$("$VIGIL" check --config "$SCRATCH/typo.json" $flags 2>&1); rc=$?
expect_eq "config typo exit" 78 "$rc"
expect_match "config typo names file and key" "typo.json: check.nics.requried: unknown key" "$out"
printf '{"check": {"slots": {"expected": "8"}}}\n' > "$SCRATCH/type.json"
out=$("$VIGIL" check --config "$SCRATCH/type.json" 2>&1); rc=$?
expect_eq "config type exit" 78 "$rc"
expect_match "config type names the key" "check.slots.expected" "$out"
printf '{"check": {"slots": {"expected": 8,}}}\n' > "$SCRATCH/broken.json"
out=$("$VIGIL" check --config "$SCRATCH/broken.json" 2>&1); rc=$?
expect_eq "malformed config exit" 78 "$rc"
expect_match "malformed config names line" "broken.json: line 1" "$out"
out=$("$VIGIL" check --config "$SCRATCH/absent.json" 2>&1); rc=$?
expect_eq "missing config exit" 78 "$rc"
out=$("$VIGIL" frobnicate 2>&1); rc=$?
expect_eq "unknown command exit" 64 "$rc"

# The configuration file sets what flags would; flags override it.
make_root "$SCRATCH/root2"
printf '{"check": {"slots": {"expected": 4}, "nics": {"required": ["eth1"]}}}\n' > "$SCRATCH/four.json"
out=$("$VIGIL" check --sysfs-root "$SCRATCH/root2" --topology "$PASCAL" --config "$SCRATCH/four.json" 2>&1); rc=$?
expect_eq "config expects 4 slots" 80 "$rc"
expect_match "slot shortfall reason" '^vigil: slots: .*2.*4' "$out"
out=$("$VIGIL" check --sysfs-root "$SCRATCH/root2" --topology "$PASCAL" --config "$SCRATCH/four.json" --slots 2 2>&1); rc=$?
expect_eq "--slots overrides the file" 0 "$rc"

# The example configuration the README points to is one vigil reads: this
# node fails its checks (80), but no key of it is refused (78).
example="${TESTS_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}/../contrib/vigil.json.example"
out=$("$VIGIL" check --sysfs-root "$SCRATCH/root2" --topology "$PASCAL" --config "$example" 2>&1); rc=$?
expect_eq "contrib/vigil.json.example is read: unhealthy here, not refused" 80 "$rc"
expect_match "its checks ran" 'slots: found [0-9]+ slots?, expected 8' "$out"

finish
