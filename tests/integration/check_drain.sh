#!/bin/bash
# vigil check --drain / --undrain against a stand-in scontrol that records
# what it is asked and answers like Slurm's.
. "$(dirname "$0")/lib.sh"

R="$SCRATCH/root"
make_root "$R"
flags="--sysfs-root $R $(pascal_flags)"
log="$SCRATCH/scontrol.log"
state="$SCRATCH/node-state"
cat > "$SCRATCH/scontrol" <<'SH'
#!/bin/sh
printf '%s\n' "$*" >> "$SCONTROL_LOG"
if [ "$1" = show ]; then
	printf 'NodeName=%s Arch=x86_64 CoresPerSocket=18\n   State=%s ThreadsPerCore=1\n   Reason=%s\n' \
		"$3" "$(sed -n 1p "$SCONTROL_STATE")" "$(sed -n 2p "$SCONTROL_STATE")"
fi
exit 0
SH
chmod +x "$SCRATCH/scontrol"
export VIGIL_SCONTROL="$SCRATCH/scontrol" SCONTROL_LOG="$log" SCONTROL_STATE="$state"
export SLURMD_NODENAME=gpu17

# Healthy and --drain: scontrol is not called.
"$VIGIL" check --drain $flags >/dev/null 2>&1; rc=$?
expect_eq "healthy --drain exit" 0 "$rc"
expect_eq "healthy node not drained" "" "$(cat "$log" 2>/dev/null)"

# Unhealthy and --drain: drained with vigil's reason.
echo down > "$R/sys/class/net/eth1/operstate"
"$VIGIL" check --drain $flags >/dev/null 2>&1; rc=$?
expect_eq "unhealthy --drain exit" 80 "$rc"
expect_match "drained with the failed check" '^update NodeName=gpu17 State=DRAIN Reason=vigil: nics: .*eth1' "$(cat "$log")"

# Healthy again and --undrain: resumed only if vigil drained it.
echo up > "$R/sys/class/net/eth1/operstate"
: > "$log"
printf 'IDLE+DRAIN\nvigil: nics: eth1 is down [root@2026-11-20T23:00:00]\n' > "$state"
"$VIGIL" check --undrain $flags >/dev/null 2>&1; rc=$?
expect_eq "undrain exit" 0 "$rc"
expect_match "vigil's drain resumed" '^update NodeName=gpu17 State=RESUME' "$(cat "$log")"
: > "$log"
printf 'IDLE+DRAIN\nreplacing DIMM B3 [admin@2026-11-20T20:00:00]\n' > "$state"
"$VIGIL" check --undrain $flags >/dev/null 2>&1
expect_no_match "an administrator's drain stays" 'RESUME' "$(cat "$log")"

# scontrol missing: the check result stands, the failure is said.
export VIGIL_SCONTROL="$SCRATCH/no-scontrol"
echo down > "$R/sys/class/net/eth1/operstate"
out=$("$VIGIL" check --drain $flags 2>&1); rc=$?
expect_eq "drain without scontrol keeps the verdict" 80 "$rc"
expect_match "drain failure said" 'could not drain gpu17' "$out"

# An administrator's drain stays through a failing check: vigil reads the
# node first and changes nothing.
export VIGIL_SCONTROL="$SCRATCH/scontrol"
: > "$log"
"$VIGIL" check --drain --undrain $flags >/dev/null 2>&1; rc=$?
expect_eq "--drain on an administrator's drain" 80 "$rc"
expect_eq "administrator's drain left as it is" "show node gpu17" "$(cat "$log")"

# Both flags, as a HealthCheckProgram runs it: drain when sick, resume when well.
printf 'IDLE\n\n' > "$state"
: > "$log"
"$VIGIL" check --drain --undrain $flags >/dev/null 2>&1; rc=$?
expect_eq "--drain --undrain on a sick node" 80 "$rc"
expect_match "sick node drained" '^update NodeName=gpu17 State=DRAIN' "$(cat "$log")"
echo up > "$R/sys/class/net/eth1/operstate"
: > "$log"
printf 'DRAINED\nvigil: nics: eth1 is down [root@2026-11-20T23:00:00]\n' > "$state"
"$VIGIL" check --drain --undrain $flags >/dev/null 2>&1; rc=$?
expect_eq "--drain --undrain on a well node" 0 "$rc"
expect_match "well node resumed" 'State=RESUME' "$(cat "$log")"

finish
