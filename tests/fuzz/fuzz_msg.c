/*
 * fuzz_msg.c - libFuzzer target for the decoder of the agents' messages.
 *
 * Built and run by `make fuzz` (tests/fuzz/run.sh).  The first byte picks
 * the kind and the number of ranks, the rest is the text (NUL-terminated
 * here, as peer.c delivers it).  Besides the sanitizers' findings, it
 * aborts when a message that decodes breaks the contract of msg.h: a rank
 * outside the job, a status outside 0..255, an encoding that does not
 * decode again to the same encoding, or text that is not valid UTF-8.
 */
#include "autoconf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "comm/msg.h"
#include "lib/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_ranks(const int *v, int n, int nranks)
{
	for (int i = 0; i < n; i++)
		if (v[i] < 0 || v[i] >= nranks)
			abort();
}

static void
check(const struct msg *m, int nranks)
{
	switch (m->kind) {
	case MSG_PLAN:
		if (m->u.plan.nnodes > nranks)
			abort();
		check_ranks(m->u.plan.members, m->u.plan.nmembers, m->u.plan.nnodes);
		break;
	case MSG_RESULT:
		if (m->u.result.exit_code < 0 || m->u.result.exit_code > 255 || !m->u.result.node)
			abort();
		break;
	case MSG_COMMAND:
		check_ranks(m->u.command.members, m->u.command.nmembers, nranks);
		break;
	case MSG_FINAL:
		if (m->u.final.exit_code < 0 || m->u.final.exit_code > 255 || !m->u.final.state)
			abort();
		break;
	default:
		break;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum msg_kind kind;
	struct msg m, again;
	char *text, *first, *second;
	int nranks;

	if (size < 1)
		return 0;
	kind = (enum msg_kind)(MSG_KIND_MIN + data[0] % (MSG_KIND_MAX - MSG_KIND_MIN + 1));
	nranks = 1 + (data[0] >> 3);
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (msg_decode(kind, text, nranks, &m) == 0) {
		check(&m, nranks);
		first = msg_encode(&m);
		if (!first || !util_utf8_valid(first, strlen(first)))
			abort();
		if (msg_decode(kind, first, nranks, &again) != 0)
			abort();
		second = msg_encode(&again);
		if (!second || strcmp(first, second) != 0)
			abort();
		free(first);
		free(second);
		msg_clear(&again);
		msg_clear(&m);
	}
	free(text);
	return 0;
}
