#!/bin/bash
# A hung training on one node without mpirun (a world of one, whose loop
# has no peer to wake it): a training that prints timing lines and then
# sleeps is found hung after --hang-timeout, its process looked at (state,
# wait channel), --on-hang stop ends it with 84, and the report and the
# forensics file say so; --on-hang alert only tells (the event, --notify)
# and the training runs on, as by default for a training that can neither
# resume nor restart; a training that prints no timing lines is
# never judged by them, and --hang-silence judges its silence instead.
. "$(dirname "$0")/lib.sh"

run() { timeout -k 5 60 "$VIGIL" run --mode single --precheck off "$@"; }
cat > "$SCRATCH/t.sh" <<'SH'
#!/bin/sh
# N timing lines 0.1 s apart, then a long sleep, then done
i=0
while [ $i -lt "$1" ]; do
	echo "this iteration hardware time is 90 and e2e time is 100 ms."
	i=$((i + 1)); sleep 0.1
done
sleep "$2"
echo done
SH
chmod 755 "$SCRATCH/t.sh"

t0=$(date +%s%3N)
run --hang-timeout 2 --on-hang stop --report "$SCRATCH/r.json" -- "$SCRATCH/t.sh" 5 600 \
	>"$SCRATCH/out" 2>&1; rc=$?
ms=$(( $(date +%s%3N) - t0 ))
expect_eq "stopped as hung" 84 "$rc"
if [ "$ms" -lt 15000 ]; then pass "ended after ${ms} ms"; else fail "ended after ${ms} ms"; fi
expect_match "said" 'the training looks hung: no iteration on any node for 2\.[0-9] s' "$(cat "$SCRATCH/out")"
expect_eq "the report's section" "stop None" \
	"$(report "$SCRATCH/r.json" 'r["hang"]["policy"], r["hang"]["suspect"]' 2>/dev/null)"
expect_match "the sleep in the forensics file" 'hrtimer_nanosleep|S ' \
	"$(report "$SCRATCH/r.json.hang.json" '" ".join(p["state"] + " " + p["wchan"] for n in r["nodes"] for p in n["processes"])' 2>/dev/null)"

# alert: the event and the notifier; the training ends on its own
run --hang-timeout 1 --on-hang alert --events "$SCRATCH/ev" \
	--notify "cat > $SCRATCH/notified" -- "$SCRATCH/t.sh" 5 4 >"$SCRATCH/out2" 2>&1; rc=$?
expect_eq "alert: the training's own end" 0 "$rc"
expect_eq "alert: two hang events (detected, forensics)" 2 "$(grep -c '"kind":"hang"' "$SCRATCH/ev")"
expect_match "alert: notified" '"stage":"forensics"' "$(cat "$SCRATCH/notified" 2>/dev/null)"
expect_match "alert: done" '^done$' "$(cat "$SCRATCH/out2")"

# the default (auto) for a training that can neither resume nor restart:
# only alert, a false alarm must not cost it its work
run --hang-timeout 1 --events "$SCRATCH/ev5" -- "$SCRATCH/t.sh" 5 4 >"$SCRATCH/out5" 2>&1; rc=$?
expect_eq "auto without --resume or --restart: the training's own end" 0 "$rc"
expect_match "auto: alerted" '"policy":"alert"' "$(grep '"kind":"hang"' "$SCRATCH/ev5")"
expect_match "auto: done" '^done$' "$(cat "$SCRATCH/out5")"

# no timing lines: not judged by them; silence is
run --hang-timeout 1 --events "$SCRATCH/ev3" -- sh -c 'echo hello; sleep 3; echo bye' \
	>"$SCRATCH/out3" 2>&1; rc=$?
expect_eq "no timing lines: no hang" "0 0" "$rc $(grep -c '"kind":"hang"' "$SCRATCH/ev3")"
# (from a directory of its own: without --report or --events the forensics
# file goes to the working directory)
mkdir "$SCRATCH/cwd4"
(cd "$SCRATCH/cwd4" && run --hang-silence 1 --on-hang stop -- sh -c 'echo hello; sleep 30') \
	>"$SCRATCH/out4" 2>&1; rc=$?
expect_eq "silence: stopped" 84 "$rc"
expect_match "silence: said" 'no output from any node' "$(cat "$SCRATCH/out4")"
expect_match "silence: the forensics file in the working directory" '^vigil-hang\.[0-9]+\.json$' \
	"$(ls "$SCRATCH/cwd4")"

# A Python training stuck in its own function while a second thread waits
# in another: gdb reads both Python stacks from the interpreter (needs
# python3-dbg, which the README installs), the main thread's first, and
# the verdict says where the training waits.
cat > "$SCRATCH/t.py" <<'PY'
import threading, time
def prefetch():
    time.sleep(600)
def stuck_in_loader():
    time.sleep(600)
threading.Thread(target=prefetch, daemon=True).start()
for i in range(5):
    print("this iteration hardware time is 90 and e2e time is 100 ms.", flush=True)
    time.sleep(0.1)
stuck_in_loader()
PY
run --hang-timeout 2 --on-hang stop --report "$SCRATCH/r6.json" -- /usr/bin/python3 "$SCRATCH/t.py" \
	>"$SCRATCH/out6" 2>&1; rc=$?
expect_eq "python: stopped as hung" 84 "$rc"
py=$(report "$SCRATCH/r6.json.hang.json" '"|".join(" ".join(p.get("py_stack", [])) for n in r["nodes"] for p in n["processes"])' 2>/dev/null)
expect_match "python: the main thread's stack, innermost first" \
	'File "[^"]*/t\.py", line 5, in stuck_in_loader File "[^"]*/t\.py", line 10, in <module>' "$py"
expect_match "python: the other thread's stack after it" \
	'in <module> thread [0-9]+ File "[^"]*/t\.py", line 3, in prefetch' "$py"
expect_match "python: the verdict names the function" 'at stuck_in_loader \(t\.py:5\)' \
	"$(report "$SCRATCH/r6.json" 'r["hang"]["summary"]' 2>/dev/null)"

# Without a gdb that can read Python stacks (a gdb that fails, bound over
# /usr/bin/gdb in a mount namespace of the test's own), a training that
# a hang ends gets faulthandler armed (PYTHONFAULTHANDLER) and SIGABRT
# before the stop: every thread's stack in its stderr, no core file.
# Where the hang only alerts, nothing is armed.
printf '#!/bin/sh\nexit 1\n' >"$SCRATCH/nogdb"; chmod 755 "$SCRATCH/nogdb"
sed -i 's/^import threading, time$/import os, threading, time\nprint("faulthandler=" + os.environ.get("PYTHONFAULTHANDLER", ""), flush=True)/' "$SCRATCH/t.py"
nogdb_run() {
	(cd "$SCRATCH" && ulimit -c unlimited &&
		unshare -m sh -c 'mount --bind "$0" /usr/bin/gdb && exec "$@"' "$SCRATCH/nogdb" \
		timeout -k 5 60 "$VIGIL" run --mode single --precheck off "$@")
}
nogdb_run --hang-timeout 2 --on-hang stop --report "$SCRATCH/r7.json" -- /usr/bin/python3 "$SCRATCH/t.py" \
	>"$SCRATCH/out7" 2>&1; rc=$?
expect_eq "faulthandler: stopped as hung" 84 "$rc"
expect_match "faulthandler: armed" '^faulthandler=1$' "$(cat "$SCRATCH/out7")"
expect_eq "faulthandler: no stack from gdb" "" \
	"$(report "$SCRATCH/r7.json.hang.json" '" ".join(" ".join(p.get("py_stack", [])) for n in r["nodes"] for p in n["processes"])' 2>/dev/null)"
expect_match "faulthandler: the main thread's stack in the training's stderr" \
	'File "[^"]*/t\.py", line 6 in stuck_in_loader' "$(cat "$SCRATCH/out7")"
expect_match "faulthandler: the other thread's too" 'File "[^"]*/t\.py", line 4 in prefetch' "$(cat "$SCRATCH/out7")"
expect_eq "faulthandler: no core file" "" "$(find "$SCRATCH" -maxdepth 1 -name 'core*')"
nogdb_run --hang-timeout 1 --on-hang alert -- /usr/bin/python3 -c \
	'import os; print("faulthandler=" + os.environ.get("PYTHONFAULTHANDLER", ""))' >"$SCRATCH/out8" 2>&1
expect_match "alert: nothing armed" '^faulthandler=$' "$(cat "$SCRATCH/out8")"
finish
