#!/bin/sh
# webhook.sh - a vigil notifier that POSTs each performance alert to a URL.
#
#   vigil run --notify /usr/local/libexec/vigil/webhook.sh ...
#
# vigil runs it on the coordinator with the alert's JSON on stdin.
#
# Environment:
#   VIGIL_WEBHOOK_URL      where to POST (required)
#   VIGIL_WEBHOOK_FORMAT   "json" (default): the alert as it is;
#                          "text": {"text": "[vigil] MESSAGE"}, which Slack,
#                          Mattermost and Rocket.Chat incoming webhooks take
#   VIGIL_WEBHOOK_TIMEOUT  seconds for the whole request (default 10)
#   VIGIL_WEBHOOK_HEADER   one extra header, e.g. "Authorization: Bearer TOKEN"
#
# The URL and the header often hold secrets: they reach curl through a
# config on a descriptor, not its command line, which every user of the node
# can read in ps.  curl fails on an HTTP error; the exit status is curl's.

set -u

: "${VIGIL_WEBHOOK_URL:?VIGIL_WEBHOOK_URL must name the URL to post to}"
timeout=${VIGIL_WEBHOOK_TIMEOUT:-10}
case $timeout in
'' | *[!0-9]*) echo "vigil webhook.sh: VIGIL_WEBHOOK_TIMEOUT must be whole seconds" >&2; exit 2 ;;
esac

json=$(cat)

case ${VIGIL_WEBHOOK_FORMAT:-json} in
json)
	payload=$json
	;;
text)
	# The message stays as the alert's JSON escaped it, so it can be
	# put back into a JSON string as it is.
	message=$(printf '%s\n' "$json" |
		sed -n 's/.*"message":[[:space:]]*"\([^"\\]*\(\\.[^"\\]*\)*\)".*/\1/p' | head -n 1)
	payload=$(printf '{"text":"[vigil%s] %s"}' "${SLURM_JOB_ID:+ job $SLURM_JOB_ID}" "$message")
	;;
*)
	echo "vigil webhook.sh: VIGIL_WEBHOOK_FORMAT must be json or text" >&2
	exit 2
	;;
esac

# curl config syntax: a quoted value with \ and " escaped.
quote() {
	printf '"%s"' "$(printf '%s' "$1" | sed 's/[\\"]/\\&/g')"
}

config() {
	printf 'url = %s\n' "$(quote "$VIGIL_WEBHOOK_URL")"
	if [ -n "${VIGIL_WEBHOOK_HEADER:-}" ]; then
		printf 'header = %s\n' "$(quote "$VIGIL_WEBHOOK_HEADER")"
	fi
}

# The payload on stdin, the config on descriptor 3 (a here-document: the
# shell's builtins write it, no process shows it).
printf '%s\n' "$payload" | curl --silent --show-error --fail \
	--max-time "$timeout" --connect-timeout 5 \
	--request POST --header 'Content-Type: application/json' \
	--data-binary @- --config /dev/fd/3 3<<CONFIG
$(config)
CONFIG
