/*
 * stall.c - the stall and deafness rules (stall.h).
 */
#include "autoconf.h"

#include "agent/stall.h"

/* The deaf limit, in heartbeat intervals: each node beats once an
 * interval, so the coordinator hears somebody at least that often, and
 * half an interval more is room for a late timer or a loaded loop. */
#define DEAF_BEATS 1.5

double
stall_limit(double heartbeat_s, double heartbeat_timeout_s)
{
	double a = 2 * heartbeat_s, b = heartbeat_timeout_s / 2;

	return a < b ? a : b;
}

bool
stall_late(double last, double now, double heartbeat_s, double heartbeat_timeout_s)
{
	return last >= 0 && now - last > stall_limit(heartbeat_s, heartbeat_timeout_s);
}

double
stall_deaf_limit(double heartbeat_s)
{
	return DEAF_BEATS * heartbeat_s;
}

double
stall_deaf_until(double last, double now, double heartbeat_s)
{
	double gap = now - last;

	if (last < 0 || gap <= stall_deaf_limit(heartbeat_s))
		return -1;
	return now + gap;
}

enum stall_verdict
stall_judge(int live, int heard, int silent)
{
	if (silent <= 0)
		return STALL_WAIT;
	/* the coordinator's side against every other live rank: ties are its own */
	if (1 + heard >= live - heard)
		return STALL_NAME;
	/* the picture is whole, and the coordinator is in the smaller part */
	if (heard + silent >= live)
		return STALL_SELF;
	return STALL_WAIT;
}
