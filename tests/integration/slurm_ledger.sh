#!/bin/bash
# The node ledger on a real Slurm 22.05 cluster of three nodes
# (tests/slurm/cluster.sh), with contrib/slurm/vigil-healthcheck as the
# HealthCheckProgram every 2 s and one configuration for jobs and health
# check: a ledger in the scratch directory, a rule of 3 incidents within
# an hour, a first backoff of 12 s.
#   - n2's fabric NIC (eth1) goes down during each of three jobs in a row
#     (`vigil run --resume --nic eth1` on n2: the training saves, the job
#     ends with 81): three faults, each recorded by its job, make n2 a
#     lemon;
#   - the health check then drains n2 with the reason "vigil: quarantined:
#     ...", and a fourth job, submitted with the template's --exclude of
#     the quarantined nodes, runs on n1;
#   - after the backoff, a passing check forgives n2 and resumes it;
#   - n3, drained by an administrator, quarantined and forgiven by vigil
#     meanwhile, keeps the administrator's drain and reason throughout.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

sl_require
chmod 755 "$SCRATCH"
D=$SCRATCH/ledger
mkdir -m 755 "$D"
cfg=$SCRATCH/vigil.json
cat >"$cfg" <<EOF
{"ledger": {"dir": "$D", "rules": [{"count": 3, "within": "1h"}],
            "backoff": {"initial": "12s"}}}
EOF
hc=$SCRATCH/vigil-healthcheck
cp "$TESTS_SRCDIR/../contrib/slurm/vigil-healthcheck" "$hc" && chmod 755 "$hc"
mkdir "$SCRATCH/default"
cat >"$SCRATCH/default/vigil-healthcheck" <<SH
VIGIL=$VIGIL
VIGIL_CONFIG=$cfg
SH
chmod 644 "$SCRATCH/default/vigil-healthcheck"
export SL_ETC_DEFAULT=$SCRATCH/default
t_start=$(date +%s)
sl_up 3 "HealthCheckProgram=$hc" "HealthCheckInterval=2" || { fail "cluster"; finish; }

nodes() { "$VIGIL" nodes --config "$cfg" "$@"; }
state_of() {
	nodes --json --node "$1" | python3 -c 'import json, sys
n = json.load(sys.stdin)["nodes"]
print(n[0]["state"] if n else "none")'
}
admin='admin: replace DIMM B3'
admin_kept() {
	expect_match "$1: n3 keeps the administrator's drain" '^(IDLE\+DRAIN|DRAINED)$' \
		"$(sl_node_field n3 State)"
	expect_match "$1: and reason" "^$admin " "$(sl_node_field n3 Reason)"
}

# n3: an administrator's drain, then vigil's quarantine by hand on top
sl_cmd scontrol update NodeName=n3 State=DRAIN Reason="$admin"
nodes --quarantine n3 --why "burn-in" --for 8s >/dev/null || fail "n3 quarantined by hand"

W=$SL_SPOOL
cat >"$W/job.sh" <<SH
#!/bin/bash
exec "$VIGIL" run --config "$cfg" --mode single --nic eth1 --inspect-interval 1 \\
	--resume --grace 5 -- python3 "$SIM" --iters 1000000 --iter-ms 50 --ckpt-dir "$W/ckpt.\$SLURM_JOB_ID"
SH
chmod 755 "$W/job.sh"

# 1. Three jobs on n2 in a row, its eth1 down during each.
for k in 1 2 3; do
	id=$(sl_cmd sbatch --parsable -N 1 -w n2 --chdir="$W" --output="$W/job-%j.out" "$W/job.sh")
	sl_wait_lines "$W/job-$id.out" '^ready ' 1 60 || fail "job $k: no training"
	tb_exec n2 ip link set eth1 down
	sl_wait_job "$id" 'COMPLETED|FAILED' 60 || fail "job $k did not end"
	tb_exec n2 ip link set eth1 up
	expect_match "job $k: the fault named" 'fault: nic eth1: eth1 is down' "$(cat "$W/job-$id.out")"
	echo "job $k: $(($(date +%s) - t_start)) s"
	[ "$k" = 3 ] || expect_eq "job $k: n2 watched" watched "$(state_of n2)"
done
expect_eq "three faults: n2 quarantined" quarantined "$(state_of n2)"
expect_match "each recorded by its job" "\"kind\":\"fault\",\"check\":\"nic\",\"device\":\"eth1\",\"job\":\"$id\"" \
	"$(nodes --json --node n2)"
t_q=$(date +%s)
echo "quarantined: $((t_q - t_start)) s"

# 2. The health check drains it, with the ledger's reason.
if sl_wait_node n2 'IDLE\+DRAIN|DRAINED' 20; then pass "n2 drained"; else fail "n2 not drained"; fi
expect_match "n2's reason is the ledger's" '^vigil: quarantined: until [0-9T:-]+Z, 3 incidents in 1h, last fault nic eth1' \
	"$(sl_node_field n2 Reason)"
admin_kept "n2 quarantined"

# 3. The fourth job, with the quarantined nodes excluded as the template does.
sed -n '/^quarantined() {/,/^}/p' "$TESTS_SRCDIR/../contrib/slurm/vigil.sbatch" >"$SCRATCH/q.sh"
q=$(VIGIL=$VIGIL VIGIL_CONFIG=$cfg bash -c ". $SCRATCH/q.sh; quarantined" | paste -sd,)
expect_eq "the template's list" n2 "$q"
id=$(sl_cmd sbatch --parsable -N 1 --exclude="$q" --chdir="$W" --output="$W/job-%j.out" --wrap "hostname")
sl_wait_job "$id" COMPLETED 60 || fail "job 4 did not run"
expect_eq "job 4 not on n2" n1 "$(sl_job_field "$id" NodeList)"

# 4. After the backoff, a passing check forgives n2 and resumes it.
if sl_wait_node n2 IDLE 60; then pass "n2 resumed"; else fail "n2 not resumed"; fi
t_r=$(date +%s)
echo "n2 resumed $((t_r - t_q)) s after its quarantine (backoff 12 s, checks every 2 s)"
if [ $((t_r - t_q)) -ge 9 ]; then pass "not before the backoff"
else fail "resumed after $((t_r - t_q)) s, before the backoff"; fi
expect_eq "forgiven: watched" watched "$(state_of n2)"
expect_match "by a passing check" '"kind":"forgive".*"evidence":"every check passed after the quarantine"' \
	"$(nodes --json --node n2)"

# 5. n3: its quarantine by hand ended and a check forgave it, but the
#    administrator's drain stays.
forgiven_n3() {
	nodes --json --node n3 | grep -c '"kind":"forgive","check":"","device":"","job":"","user":"root","evidence":"every check passed'
}
for _ in $(seq 1 60); do
	[ "$(forgiven_n3)" = 1 ] && break
	sleep 0.5
done
expect_eq "n3 forgiven by its check" "1 ok" "$(forgiven_n3) $(state_of n3)"
admin_kept "n3 forgiven"
expect_eq "n1 untouched" IDLE "$(sl_node_field n1 State)"

sl_down || fail "the cluster left something behind"
echo "slurm_ledger: $(($(date +%s) - t_start)) s"
finish
