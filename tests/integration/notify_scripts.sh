#!/bin/bash
# The notifiers in contrib/notify, with stand-in mail, sendmail and curl
# programs that record their arguments, stdin and (curl) config: nothing
# reaches a network.
. "$(dirname "$0")/lib.sh"

NOTIFY="$TESTS_SRCDIR/../contrib/notify"
BIN="$SCRATCH/bin"
REC="$SCRATCH/rec"
mkdir -p "$BIN" "$REC"

for prog in mail sendmail; do
	cat > "$BIN/$prog" <<STUB
#!/bin/sh
printf '%s\n' "\$@" > "$REC/$prog.args"
cat > "$REC/$prog.stdin"
STUB
done
cat > "$BIN/curl" <<STUB
#!/bin/sh
printf '%s\n' "\$@" > "$REC/curl.args"
cat > "$REC/curl.stdin"
cat /dev/fd/3 > "$REC/curl.config"
exit \${CURL_STUB_EXIT:-0}
STUB
chmod +x "$BIN"/*

ALERT='{"kind":"straggler","iter":120,"node":"n3","rank":2,"value":48.5,"message":"n3 (rank 2): e2e 48.5% above the \"median\"\nfor 5 iterations"}'

# notify SCRIPT [VAR=VALUE...]: run a notifier as vigil does, the alert on stdin.
notify() {
	local script=$1
	shift
	printf '%s' "$ALERT" | env -u SLURM_JOB_ID PATH="$BIN:$PATH" "$@" sh "$NOTIFY/$script"
}

# ---- mail.sh with mail (found in PATH)
out=$(notify mail.sh VIGIL_MAIL_TO=a@example.org,b@example.org SLURM_JOB_ID=42 2>&1); rc=$?
expect_eq "mail: exit" 0 "$rc"
expect_eq "mail: arguments" "-s|[vigil job 42] straggler alert: n3 (rank 2): e2e 48.5% above the \"median\"\\nfor 5 iterations|a@example.org|b@example.org" \
	"$(paste -sd'|' "$REC/mail.args")"
body=$(cat "$REC/mail.stdin")
expect_match "mail: body names the node" '^  node: +n3$' "$body"
expect_match "mail: body has the iteration" '^  iteration: +120$' "$body"
expect_match "mail: body has the value" '^  value: +48\.5$' "$body"
expect_match "mail: body has the job" '^  Slurm job: +42$' "$body"
expect_eq "mail: body ends with the JSON" "$ALERT" "$(tail -n 1 "$REC/mail.stdin")"

# ---- mail.sh with sendmail -t
out=$(notify mail.sh VIGIL_MAILER=sendmail VIGIL_MAIL_TO=ops@example.org VIGIL_MAIL_FROM=vigil@n1 2>&1); rc=$?
expect_eq "sendmail: exit" 0 "$rc"
expect_eq "sendmail: arguments" "-t" "$(cat "$REC/sendmail.args")"
expect_eq "sendmail: headers" \
	"To: ops@example.org|From: vigil@n1|Subject: [vigil] straggler alert: n3 (rank 2): e2e 48.5% above the \"median\"\\nfor 5 iterations|MIME-Version: 1.0|Content-Type: text/plain; charset=UTF-8|" \
	"$(sed -n '1,6p' "$REC/sendmail.stdin" | paste -sd'|')"

out=$(notify mail.sh 2>&1); rc=$?
expect_eq "mail: no recipients fails" 1 "$(( rc != 0 ))"
expect_match "mail: says why" 'VIGIL_MAIL_TO' "$out"
out=$(notify mail.sh VIGIL_MAIL_TO=x VIGIL_MAILER=pigeon 2>&1); rc=$?
expect_eq "mail: unknown mailer" 2 "$rc"

# ---- webhook.sh, the alert as it is
rm -f "$REC"/curl.*
out=$(notify webhook.sh VIGIL_WEBHOOK_URL='https://hooks.example.org/T0/B0/s3cr"et' \
	VIGIL_WEBHOOK_HEADER='Authorization: Bearer t0ken' 2>&1); rc=$?
expect_eq "webhook: exit" 0 "$rc"
args=$(paste -sd' ' "$REC/curl.args")
expect_match "webhook: POST with a timeout, failing on HTTP errors" \
	'--fail .*--max-time 10 .*--request POST --header Content-Type: application/json --data-binary @- --config /dev/fd/3' "$args"
expect_no_match "webhook: no secret on the command line" 's3cr|t0ken|hooks' "$args"
expect_eq "webhook: config" 'url = "https://hooks.example.org/T0/B0/s3cr\"et"|header = "Authorization: Bearer t0ken"' \
	"$(paste -sd'|' "$REC/curl.config")"
expect_eq "webhook: body is the alert" "$ALERT" "$(cat "$REC/curl.stdin")"

# ---- webhook.sh, chat format
out=$(notify webhook.sh VIGIL_WEBHOOK_URL=https://chat.example.org/hook VIGIL_WEBHOOK_FORMAT=text \
	VIGIL_WEBHOOK_TIMEOUT=3 SLURM_JOB_ID=7 2>&1); rc=$?
expect_eq "webhook text: exit" 0 "$rc"
text=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["text"])' "$REC/curl.stdin" 2>&1)
expect_eq "webhook text: valid JSON with the message" \
	"[vigil job 7] n3 (rank 2): e2e 48.5% above the \"median\""$'\n'"for 5 iterations" "$text"
expect_match "webhook text: the timeout given" '^3$' "$(sed -n '/--max-time/{n;p}' "$REC/curl.args")"

# ---- webhook.sh failures
out=$(notify webhook.sh VIGIL_WEBHOOK_URL=https://x CURL_STUB_EXIT=22 2>&1); rc=$?
expect_eq "webhook: curl's status" 22 "$rc"
out=$(notify webhook.sh 2>&1); rc=$?
expect_eq "webhook: no URL fails" 1 "$(( rc != 0 ))"
expect_match "webhook: says why" 'VIGIL_WEBHOOK_URL' "$out"
out=$(notify webhook.sh VIGIL_WEBHOOK_URL=https://x VIGIL_WEBHOOK_TIMEOUT=soon 2>&1); rc=$?
expect_eq "webhook: bad timeout" 2 "$rc"
out=$(notify webhook.sh VIGIL_WEBHOOK_URL=https://x VIGIL_WEBHOOK_FORMAT=xml 2>&1); rc=$?
expect_eq "webhook: bad format" 2 "$rc"

finish
