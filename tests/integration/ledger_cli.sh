#!/bin/bash
# The node ledger through the commands, on one machine: `vigil check
# --record` records a failing health check; two of them quarantine the
# node (a site rule of this test); the check then fails it as "ledger:
# quarantined", `vigil check --drain` drains it with the ledger's reason
# (a stand-in scontrol), `vigil run`'s pre-check refuses it, and `vigil
# nodes` lists it, for people, for scripts and for sbatch --exclude; after
# the backoff a passing check forgives it and resumes its drain.  An
# administrator quarantines and forgives by hand, and nobody else may.
# Bad configurations and unsafe directories are refused with a message.
. "$(dirname "$0")/lib.sh"

R=$SCRATCH/root
make_root "$R"
flags="--sysfs-root $R $(pascal_flags)"
D=$SCRATCH/ledger
mkdir -m 755 "$D"
chmod 755 "$SCRATCH"
cfg=$SCRATCH/vigil.json
# config BACKOFF: the configuration, with a first backoff of BACKOFF
config() {
	cat >"$cfg" <<EOF
{"ledger": {"dir": "$D",
            "rules": [{"count": 2, "within": "1h"}],
            "backoff": {"initial": "$1"}, "repeat": 0}}
EOF
}
config 1h
nodes() { "$VIGIL" nodes --config "$cfg" "$@"; }
# field NODE KEY: a member of NODE's object in `vigil nodes --json`
field() {
	nodes --json --node "$1" | python3 -c 'import json, sys
n = json.load(sys.stdin)["nodes"]
print(n[0].get(sys.argv[1], "") if n else "")' "$2"
}

# A stand-in scontrol, as in check_drain.sh.
log=$SCRATCH/scontrol.log
state=$SCRATCH/node-state
cat >"$SCRATCH/scontrol" <<'SH'
#!/bin/sh
printf '%s\n' "$*" >> "$SCONTROL_LOG"
if [ "$1" = show ]; then
	printf 'NodeName=%s Arch=x86_64\n   State=%s ThreadsPerCore=1\n   Reason=%s\n' \
		"$3" "$(sed -n 1p "$SCONTROL_STATE")" "$(sed -n 2p "$SCONTROL_STATE")"
fi
exit 0
SH
chmod +x "$SCRATCH/scontrol"
printf 'IDLE\n\n' >"$state"
export VIGIL_SCONTROL=$SCRATCH/scontrol SCONTROL_LOG=$log SCONTROL_STATE=$state
export VIGIL_NODE_NAME=gpu1 SLURMD_NODENAME=gpu1

# ---- the health check records, the rule quarantines ------------------------
out=$("$VIGIL" check --config "$cfg" $flags 2>&1); rc=$?
expect_eq "a healthy node, an empty ledger" "0 " "$rc $out"
echo down >"$R/sys/class/net/eth1/operstate"
"$VIGIL" check --config "$cfg" --record $flags >/dev/null 2>&1; rc=$?
expect_eq "failing check exit" 80 "$rc"
expect_eq "recorded: one incident, watched" "watched" "$(field gpu1 state)"
"$VIGIL" check --config "$cfg" $flags >/dev/null 2>&1
expect_eq "without --record nothing more is recorded" 1 "$(field gpu1 incidents_total)"
"$VIGIL" check --config "$cfg" --record $flags >/dev/null 2>&1
expect_eq "two incidents: quarantined" quarantined "$(field gpu1 state)"
out=$("$VIGIL" check --config "$cfg" $flags 2>&1); rc=$?
expect_eq "quarantined node fails the check" 80 "$rc"
expect_match "named by the ledger" '^vigil: ledger: quarantined: until 20[0-9-]+T[0-9:]+Z, 2 incidents in 1h, last healthcheck nics: eth1 is down' "$out"
expect_eq "sbatch --exclude list" gpu1 "$(nodes --quarantined --format slurm)"
"$VIGIL" check --config "$cfg" --drain --undrain $flags >/dev/null 2>&1
expect_match "drained with the ledger's reason" \
	'^update NodeName=gpu1 State=DRAIN Reason=vigil: quarantined: until .*, 2 incidents in 1h' \
	"$(grep '^update' "$log")"
expect_eq "no third incident while quarantined" 2 "$(field gpu1 incidents_total)"

# ---- the pre-check of a job refuses it -----------------------------------------
echo up >"$R/sys/class/net/eth1/operstate"
out=$(timeout -k 5 60 "$VIGIL" run --config "$cfg" $flags -- true 2>&1); rc=$?
expect_eq "vigil run on a quarantined node" 80 "$rc"
expect_match "the pre-check says why" 'gpu1 \(rank 0\): ledger: quarantined: until' "$out"

# ---- after the backoff, a passing check forgives and resumes -------------------
# Verdicts are judged from the records by the rules of the day: with a
# backoff of a second, the quarantine above is over (no test waits an hour).
config 1s
for _ in $(seq 1 50); do
	[ "$(field gpu1 state)" = probation ] && break
	sleep 0.1
done
expect_eq "the backoff passed: probation" probation "$(field gpu1 state)"
expect_eq "no longer excluded" "" "$(nodes --quarantined --format slurm)"
printf 'IDLE+DRAIN\nvigil: quarantined: until ... [root@2026-11-20T23:00:00]\n' >"$state"
: >"$log"
out=$("$VIGIL" check --config "$cfg" --drain --undrain $flags 2>&1); rc=$?
expect_eq "the passing check" "0 " "$rc $out"
expect_match "vigil's drain resumed" 'State=RESUME' "$(grep '^update' "$log")"
expect_eq "forgiven" watched "$(field gpu1 state)"
expect_match "after a quarantine" '^forgiven at .* after 1 quarantine$' "$(field gpu1 why)"
expect_match "the forgiveness is a record" '"kind":"forgive"' "$(nodes --json --node gpu1)"
# the check compacted the node's records
expect_eq "compacted by the check" 0 "$(find "$D/spool" -name 'gpu1~*' | wc -l)"

# ---- a job's pre-check failure is an incident of the job ------------------------
export VIGIL_NODE_NAME=gpu3
echo down >"$R/sys/class/net/eth1/operstate"
SLURM_JOB_ID=4242 timeout -k 5 60 "$VIGIL" run --config "$cfg" $flags -- true >/dev/null 2>&1
echo up >"$R/sys/class/net/eth1/operstate"
expect_match "recorded by the coordinator, with the job" \
	'"kind":"precheck","check":"nics","device":"","job":"4242"' "$(nodes --json --node gpu3)"
export VIGIL_NODE_NAME=gpu1

# ---- an administrator -----------------------------------------------------------------
out=$(nodes --quarantine gpu2 --why "replace DIMM B3"); rc=$?
expect_eq "quarantined by hand" "0 vigil: gpu2 quarantined until forgiven (vigil nodes --forgive gpu2): replace DIMM B3" "$rc $out"
out=$(nodes --quarantine gpu4 --why "fan noise" --for 2h); rc=$?
expect_match "for a time" '^vigil: gpu4 quarantined until 20[0-9-]+T[0-9:]+Z: fan noise$' "$out"
expect_eq "both excluded" "gpu2,gpu4" "$(nodes --quarantined --format slurm)"
expect_eq "one a line" "$(printf 'gpu2\ngpu4')" "$(nodes --quarantined --format lines)"
# the sbatch template's list, for its requeue's ExcNodeList
tmpl="${TESTS_SRCDIR:-$(dirname "$0")/..}/../contrib/slurm/vigil.sbatch"
sed -n '/^quarantined() {/,/^}/p' "$tmpl" >"$SCRATCH/quarantined.sh"
expect_eq "the sbatch template leaves them out" "gpu2 gpu4" \
	"$(VIGIL=$VIGIL VIGIL_CONFIG=$cfg bash -c ". $SCRATCH/quarantined.sh; quarantined" | paste -sd' ')"
expect_eq "the template without a ledger" "" \
	"$(VIGIL=$VIGIL VIGIL_CONFIG= bash -c ". $SCRATCH/quarantined.sh; quarantined")"
out=$(VIGIL_NODE_NAME=gpu2 timeout -k 5 60 "$VIGIL" run --config "$cfg" $flags -- true 2>&1); rc=$?
expect_eq "the pre-check refuses it" 80 "$rc"
expect_match "with the administrator's words" 'gpu2 \(rank 0\): ledger: quarantined: until forgiven, by root: replace DIMM B3' "$out"
out=$(nodes --forgive gpu2); rc=$?
expect_eq "forgiven by hand" "0 vigil: gpu2 forgiven" "$rc $out"
expect_eq "ok again" ok "$(field gpu2 state)"
if [ "$(id -u)" = 0 ] && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
	nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	out=$(nobody "$VIGIL" nodes --config "$cfg" --forgive gpu4 2>&1); rc=$?
	expect_eq "another user may not forgive" 64 "$rc"
	expect_match "and is told who may" "only root or the owner of $D may forgive a node" "$out"
	expect_eq "another user reads the ledger" "gpu4" \
		"$(nobody "$VIGIL" nodes --config "$cfg" --quarantined --format slurm)"
fi

# ---- the table and the filters ----------------------------------------------------------
out=$(nodes)
expect_match "the table's head" '^NODE +STATE +UNTIL +INCIDENTS +LAST +WHY$' "$(echo "$out" | head -n 1)"
expect_match "a row per node" '^gpu4 +quarantined +20[0-9-]+T[0-9:]+Z +0 +.* by root: fan noise$' "$out"
expect_match "and a summary" '^4 nodes: 1 quarantined, 0 on probation, 2 watched, 1 ok$' "$out"
expect_match "a pre-check's incident counts" '^gpu3 +watched +- +1 .* 1 incident counts in the last 1h$' \
	"$out"
out=$(nodes --node gpu1)
expect_match "--node lists the incidents" '^    20.*  healthcheck nics  eth1 is down .*  \(root\)$' "$out"
expect_match "and the forgiveness" '^    20.*  forgive       every check passed after the quarantine  \(root\)$' \
	"$out"
expect_eq "--kind" "gpu3" "$(nodes --kind precheck --format lines | paste -sd' ')"
expect_eq "--kind, an administrator's" "gpu2 gpu4" "$(nodes --kind quarantine --format lines | paste -sd' ')"
expect_eq "--state" "gpu1 gpu3" "$(nodes --state watched --format lines | paste -sd' ')"
expect_eq "--since a date to come" "" "$(nodes --since 2999-01-01 --format lines)"
expect_eq "--since 1h" "gpu1 gpu2 gpu3 gpu4" "$(nodes --since 1h --format lines | paste -sd' ')"
out=$(nodes --json)
expect_eq "JSON for scripts" "4 quarantined fan noise" "$(printf '%s' "$out" | python3 -c 'import json, sys
d = json.load(sys.stdin)
q = [n for n in d["nodes"] if n["state"] == "quarantined"]
print(len(d["nodes"]), q[0]["state"], q[0]["records"][0]["evidence"])')"

# ---- mistakes ------------------------------------------------------------------------------
out=$("$VIGIL" nodes 2>&1); rc=$?
expect_eq "no ledger named" 64 "$rc"
expect_match "says how to name it" 'name the ledger: --config FILE \(with ledger.dir\) or --dir DIR' "$out"
for bad in "--kind xid" "--since yesterday" "--state lemon" "--format csv" "--quarantine gpu9" \
	"--why x" "--forgive gpu9 --compact"; do
	# shellcheck disable=SC2086
	nodes $bad >/dev/null 2>&1
	expect_eq "refused: $bad" 64 "$?"
done
out=$(nodes --quarantine "bad node" --why x 2>&1); rc=$?
expect_eq "a node name that is none" 64 "$rc"
echo '{}' >"$SCRATCH/none.json"
out=$("$VIGIL" nodes --config "$SCRATCH/none.json" 2>&1); rc=$?
expect_eq "a configuration without a ledger" "78" "$rc"
expect_match "says so" 'has no ledger: set ledger.dir' "$out"
chmod 777 "$D"
out=$(nodes 2>&1); rc=$?
expect_eq "a ledger others may write" 78 "$rc"
expect_match "is refused, with the fix" "$D is writable by others: chmod go-w $D" "$out"
out=$("$VIGIL" check --config "$cfg" $flags 2>&1); rc=$?
expect_eq "the check only warns then" "0 " "$rc $out"
expect_match "and says so with -v" 'warning: ledger: cannot read the ledger: .* is writable by others' \
	"$("$VIGIL" check --config "$cfg" -v $flags 2>&1)"
chmod 755 "$D"
finish
