/*
 * pace.c - when to read a fast writer's pipe again (pace.h).
 */
#include "autoconf.h"

#include "launch/pace.h"

void
pace_init(struct pace *p, size_t capacity, size_t target)
{
	*p = (struct pace){ .capacity = capacity, .target = target };
}

long
pace_empty(struct pace *p, uint64_t now_us)
{
	uint64_t gap = p->empty_us && now_us > p->empty_us ? now_us - p->empty_us : 0;
	size_t got = p->since;
	double rate, wait;

	p->empty_us = now_us;
	p->since = 0;
	/* A pty, the first read, a stream that writes now and then. */
	if (p->capacity == 0 || gap == 0 || gap > PACE_SPARSE_US || got == 0)
		return 0;
	rate = (double)got / (double)gap;  /* bytes per us over the last round */
	wait = (double)p->target / rate;
	if (wait > (double)(p->capacity / 2) / rate)
		wait = (double)(p->capacity / 2) / rate;
	if (wait > PACE_MAX_US)
		wait = PACE_MAX_US;
	/* Not worth a timer, or too little would come to make it pay. */
	if (wait < PACE_MIN_US || rate * wait < PACE_MIN_BYTES)
		return 0;
	return (long)wait;
}
