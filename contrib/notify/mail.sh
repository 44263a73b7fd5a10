#!/bin/sh
# mail.sh - a vigil notifier that mails each performance alert.
#
#   vigil run --notify /usr/local/libexec/vigil/mail.sh ...
#
# vigil runs it on the coordinator with the alert's JSON on stdin, e.g.
#   {"kind":"straggler","iter":120,"node":"n3","rank":2,"value":48.5,
#    "message":"n3 (rank 2): e2e 48.5% above the median for 5 iterations"}
#
# Environment:
#   VIGIL_MAIL_TO       recipients, separated by commas (required)
#   VIGIL_MAIL_FROM     sender (default: the mailer's)
#   VIGIL_MAIL_PREFIX   subject prefix (default "[vigil]", then the Slurm job
#                       id when there is one)
#   VIGIL_MAILER        "mail" (mail -s) or "sendmail" (sendmail -t); by
#                       default mail when it is in PATH, else sendmail from
#                       PATH, /usr/sbin or /usr/lib
#
# The subject is the alert's message; the body lists its fields and the
# JSON.  Standard shell and sed only: the message is taken from the JSON as
# it is, with \" and \\ undone (other escapes are left as written).  The
# exit status is the mailer's; vigil does not wait for it.

set -u

: "${VIGIL_MAIL_TO:?VIGIL_MAIL_TO must name the recipients}"

json=$(cat)

# field NAME: a string member of the alert; num NAME: a number member.
field() {
	printf '%s\n' "$json" |
		sed -n 's/.*"'"$1"'":[[:space:]]*"\([^"\\]*\(\\.[^"\\]*\)*\)".*/\1/p' |
		sed 's/\\"/"/g; s/\\\\/\\/g' | head -n 1
}
num() {
	printf '%s\n' "$json" |
		sed -n 's/.*"'"$1"'":[[:space:]]*\(-\{0,1\}[0-9][0-9.eE+-]*\).*/\1/p' | head -n 1
}

kind=$(field kind)
node=$(field node)
message=$(field message)
iter=$(num iter)
value=$(num value)
job=${SLURM_JOB_ID:-}

prefix=${VIGIL_MAIL_PREFIX:-[vigil${job:+ job $job}]}
# One line, bounded: a subject never carries a header of its own.
subject=$(printf '%s %s alert: %s' "$prefix" "${kind:-performance}" "${message:-(no message)}" |
	tr -d '\r\n' | cut -c 1-200)

body() {
	printf 'vigil raised a performance alert.\n\n'
	printf '  kind:       %s\n' "${kind:-?}"
	printf '  node:       %s\n' "${node:-?}"
	printf '  iteration:  %s\n' "${iter:-?}"
	printf '  value:      %s\n' "${value:-?}"
	printf '  message:    %s\n' "${message:-}"
	[ -n "$job" ] && printf '  Slurm job:  %s\n' "$job"
	printf '  reported:   %s by %s\n' "$(date -u '+%Y-%m-%dT%H:%M:%SZ')" "$(uname -n)"
	printf '\nThe alert as JSON:\n%s\n' "$json"
}

mailer=${VIGIL_MAILER:-}
if [ -z "$mailer" ]; then
	if command -v mail >/dev/null 2>&1; then
		mailer=mail
	else
		mailer=sendmail
	fi
fi

case $mailer in
mail)
	# mail takes the recipients as arguments
	old_ifs=$IFS
	IFS=,
	# shellcheck disable=SC2086
	set -- $VIGIL_MAIL_TO
	IFS=$old_ifs
	if [ -n "${VIGIL_MAIL_FROM:-}" ]; then
		body | mail -s "$subject" -r "$VIGIL_MAIL_FROM" "$@"
	else
		body | mail -s "$subject" "$@"
	fi
	;;
sendmail)
	sendmail=$(command -v sendmail 2>/dev/null) ||
		for s in /usr/sbin/sendmail /usr/lib/sendmail; do
			[ -x "$s" ] && sendmail=$s && break
		done
	if [ -z "${sendmail:-}" ]; then
		echo "vigil mail.sh: neither mail nor sendmail found" >&2
		exit 127
	fi
	{
		printf 'To: %s\n' "$VIGIL_MAIL_TO"
		[ -n "${VIGIL_MAIL_FROM:-}" ] && printf 'From: %s\n' "$VIGIL_MAIL_FROM"
		printf 'Subject: %s\n' "$subject"
		printf 'MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n\n'
		body
	} | "$sendmail" -t
	;;
*)
	echo "vigil mail.sh: VIGIL_MAILER must be mail or sendmail, not '$mailer'" >&2
	exit 2
	;;
esac
