/*
 * stall.c - the stall rule (stall.h).
 */
#include "autoconf.h"

#include "agent/stall.h"

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
