#!/bin/bash
# The job's end time as vigil gets it (slurm_end_time(), printed by
# tests/slurm/end_time), inside a batch job of a real Slurm 22.05 cluster
# (tests/slurm/cluster.sh), which sets no SLURM_JOB_END_TIME:
#   - asked of Slurm (squeue), it is the job's start plus its time limit;
#   - `scontrol update JobId=... TimeLimit=...` on the running job moves it,
#     and TimeLimit=UNLIMITED takes it away;
#   - SLURM_JOB_END_TIME=99999999999999999999 is refused with a reason
#     when Slurm does not answer, not taken as "expire now";
#   - the lookup is bounded by its timeout when squeue hangs.
# Needs root; skips (77) without it, which the CI script counts as a failure.
. "$(dirname "$0")/lib.sh"
. "${TESTS_SRCDIR:-$(dirname "$0")/..}/slurm/cluster.sh"

: "${SLURM_END_TIME_PROG:?SLURM_END_TIME_PROG must name tests/slurm/end_time}"
sl_require
sl_up 1 || { fail "cluster"; finish; }

W=$SL_SPOOL
log=$W/end.log
cat >"$SCRATCH/hang" <<'SH'
#!/bin/sh
exec sleep 60
SH
chmod 755 "$SCRATCH/hang"
# The job: the cases that need no change first, then the end time every
# 0.2 s until told to stop (60 s at most).
cat >"$W/job.sh" <<SH
#!/bin/bash
P=$SLURM_END_TIME_PROG
echo "env \${SLURM_JOB_END_TIME:-unset}" >>"$log"
echo "absurd \$(SLURM_JOB_END_TIME=99999999999999999999 VIGIL_SQUEUE=/nonexistent/squeue \$P)" >>"$log"
echo "absurd-but-asked \$(SLURM_JOB_END_TIME=99999999999999999999 \$P)" >>"$log"
echo "hang \$(VIGIL_SQUEUE=$SCRATCH/hang \$P 1)" >>"$log"
for ((i = 0; i < 300; i++)); do
	[ -e "$W/stop" ] && break
	echo "now \$(\$P)" >>"$log"
	sleep 0.2
done
SH
id=$(sl_cmd sbatch --parsable --time=10 --chdir="$W" -o "$W/job.out" "$W/job.sh")
sl_wait_job "$id" RUNNING 30 || fail "the job does not run"
start=$(SLURM_TIME_FORMAT=%s sl_job_field "$id" StartTime)
sl_wait_lines "$log" '^now ' 1 30 || fail "no end time printed"
# last_now: the latest "now" line
last_now() { grep '^now ' "$log" | tail -n 1 | cut -d' ' -f2-; }

expect_eq "Slurm 22.05 sets no SLURM_JOB_END_TIME" "env unset" "$(grep '^env ' "$log")"
expect_match "start + 10 min, from squeue" "^end $((start + 600)) squeue [0-9]+\$" "$(last_now)"
expect_match "99999999999999999999 refused, with both reasons" \
	'^absurd error -[0-9]+ [0-9]+ squeue -j [0-9]+: .*/nonexistent/squeue.*; SLURM_JOB_END_TIME: end time 99999999999999999999 is out of range: not believed$' \
	"$(grep '^absurd ' "$log")"
expect_match "99999999999999999999 ignored when Slurm answers" \
	"^absurd-but-asked end $((start + 600)) squeue " "$(grep '^absurd-but-asked ' "$log")"
hang=$(grep '^hang ' "$log")
expect_match "a hung squeue costs the timeout" '^hang error -110 1[0-9][0-9][0-9] squeue -j [0-9]+: no answer within 1 s$' "$hang"
ms=$(last_now | awk '{ print $4 }')
echo "one lookup (squeue, this cluster): ${ms} ms"

# A shorter limit on the running job: the end time moves.
sl_cmd scontrol update JobId="$id" TimeLimit=5
sl_wait_lines "$log" "^now end $((start + 300)) squeue " 1 20 && pass "TimeLimit=5: start + 5 min" ||
	fail "TimeLimit=5: $(last_now)"
# a longer one again (Slurm counts whole minutes)
sl_cmd scontrol update JobId="$id" TimeLimit=7
sl_wait_lines "$log" "^now end $((start + 420)) squeue " 1 20 && pass "TimeLimit=7: start + 7 min" ||
	fail "TimeLimit=7: $(last_now)"
sl_cmd scontrol update JobId="$id" TimeLimit=UNLIMITED
sl_wait_lines "$log" '^now none squeue ' 1 20 && pass "TimeLimit=UNLIMITED: no end time" ||
	fail "TimeLimit=UNLIMITED: $(last_now)"
touch "$W/stop"
sl_wait_job "$id" COMPLETED 30 || fail "the job did not end"

sl_down || fail "the cluster left something behind"
finish
