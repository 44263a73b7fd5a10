/*
 * vhealth_monitor.c - the boards of a running job, watched by one child
 * process that keeps the vendors' libraries open.
 *
 * Why a child: NVML can block for seconds in any call and for ever on a
 * wedged GPU, and nvmlEventSetWait is a blocking wait.  The agent has one
 * thread and one poll loop; the child blocks instead, and the agent reads
 * whole messages from a pipe when they come.  Keeping the libraries open
 * also saves a full nvmlInit (seconds on a node without persistence mode)
 * per inspection, and is what NVML's events need: they are recorded only
 * for an event set that stays registered.
 *
 * The child has two threads: the first reads the boards every interval,
 * the second waits in nvmlEventSetWait (NVML is thread-safe), so that an
 * XID is sent the moment it comes, not after a reading that takes seconds
 * on a busy or failing board.  Both write whole messages under one lock.
 *
 * Messages, child to agent: a header {kind, length} and a payload of that
 * length: MSG_FACTS (rc + struct vendor_facts), MSG_EVENT (struct
 * vendor_event), MSG_EVENTS (rc, a device and NVML's words: whether events
 * are watched).  Both ends are this program, so the structs go as they are.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check/vhealth.h"
#include "check/vhealth_priv.h"
#include "lib/util.h"
#include "proc/spawn.h"

enum { MSG_FACTS = 1, MSG_EVENT = 2, MSG_EVENTS = 3 };

/* Events kept per job: an XID storm repeats the same few numbers. */
#define MAX_EVENTS 256

struct msg_head {
	uint32_t kind;
	uint32_t len;
};

/* Sent up to the last board read: MSG_FACTS_LEN(nboards) bytes. */
struct msg_facts {
	int rc;
	struct vendor_facts facts;
};

#define MSG_FACTS_LEN(n) \
	(offsetof(struct msg_facts, facts.boards) + (n) * sizeof(struct vendor_board))

/* rc 0 with an error: some boards refused (DEVICE, the first); rc < 0:
 * none is watched (DEVICE "nvml"). */
struct msg_events {
	int rc;
	char device[24];
	char error[200];
};

struct vhealth_monitor {
	pid_t pid;
	int fd;
	struct config_boards rules;
	double timeout_s, interval_s;
	struct slot *slots;          /* vendor, index and bus id only */
	size_t nslots;
	bool asked[VENDOR_NKINDS];
	double started;
	struct vhealth_facts *now, *base;
	double seen[VENDOR_NKINDS];  /* when facts last came; 0 never */
	bool have_facts;
	struct vendor_event events[MAX_EVENTS];
	size_t nevents;
	bool events_known, events_on, events_news;
	char events_error[200];
	char events_device[24];
	char *buf;                   /* bytes read, not yet a whole message */
	size_t len, cap;
};

/* ---- the child --------------------------------------------------------- */

struct child {
	int fd;
	pid_t parent;
	const struct config_boards *rules;
	const bool *asked;
	const struct slot *slots;
	size_t nslots;
	double interval_s;
	pthread_mutex_t lock;                     /* one message at a time */
	struct vendor_lib *libs[VENDOR_NKINDS];
	struct msg_facts *facts[VENDOR_NKINDS];   /* each library's, kept between reads */
};

static void
send_msg(struct child *c, uint32_t kind, const void *payload, uint32_t len)
{
	struct msg_head h = { kind, len };
	bool ok;

	(void)pthread_mutex_lock(&c->lock);
	ok = util_write_all(c->fd, &h, sizeof(h)) == 0 && util_write_all(c->fd, payload, len) == 0;
	(void)pthread_mutex_unlock(&c->lock);
	/* The agent is gone (EPIPE) or our parent changed: nothing to do.
	 * _exit() ends the other thread too. */
	if (!ok || getppid() != c->parent)
		_exit(0);
}

static void
send_facts(struct child *c, unsigned k)
{
	struct msg_facts *f = c->facts[k];
	size_t n = f->facts.nboards <= VENDOR_MAX_BOARDS ? f->facts.nboards : VENDOR_MAX_BOARDS;

	send_msg(c, MSG_FACTS, f, (uint32_t)MSG_FACTS_LEN(n));
}

static void
snapshot(struct child *c)
{
	for (unsigned k = 0; k < VENDOR_NKINDS; k++) {
		if (!c->libs[k])
			continue;
		/* vendor_read() keeps the library, version and count that
		 * vendor_open() put there. */
		c->facts[k]->rc = vendor_read(c->libs[k], &c->facts[k]->facts);
		send_facts(c, k);
	}
}

static void
open_libraries(struct child *c)
{
	for (unsigned k = 0; k < VENDOR_NKINDS; k++) {
		if (!c->asked[k])
			continue;
		c->facts[k] = calloc(1, sizeof(*c->facts[k]));
		if (!c->facts[k])
			_exit(1);
		c->facts[k]->rc = vhealth_ask((enum vendor_kind)k,
		                              vhealth_library_path(c->rules, (enum vendor_kind)k),
		                              c->slots, c->nslots, &c->libs[k], &c->facts[k]->facts);
		send_facts(c, k);
	}
}

static void
nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	/* A signal cutting it short only makes the loop look again. */
	(void)nanosleep(&ts, NULL);
}

/* The second thread: every NVML event as it comes, until the wait fails. */
static void *
watch_events(void *arg)
{
	struct child *c = arg;
	struct msg_events ev;

	memset(&ev, 0, sizeof(ev));
	for (;;) {
		struct vendor_event e;
		int rc = vendor_events_wait(c->libs[VENDOR_NVML], 1000, &e, ev.error,
		                            sizeof(ev.error));

		if (getppid() != c->parent)
			_exit(0);
		if (rc == -ETIMEDOUT)
			continue;
		if (rc < 0)
			break;
		send_msg(c, MSG_EVENT, &e, sizeof(e));
		/* A lost GPU answers every wait at once: report it, then rely
		 * on the readings until the next wait says more. */
		if (e.kind == VENDOR_EVENT_LOST)
			nap_ms((long)(c->interval_s * 1000) + 1);
	}
	/* The watch is over: say why, the readings go on. */
	ev.rc = -EIO;
	snprintf(ev.device, sizeof(ev.device), "%s", vhealth_kind_key(VENDOR_NVML));
	send_msg(c, MSG_EVENTS, &ev, sizeof(ev));
	return NULL;
}

/* Register NVML's events, say how it went, and start the thread that waits. */
static void
start_events(struct child *c)
{
	struct msg_events ev;
	pthread_t t;
	int rc;

	memset(&ev, 0, sizeof(ev));
	ev.rc = vendor_events_open(c->libs[VENDOR_NVML], ev.error, sizeof(ev.error));
	snprintf(ev.device, sizeof(ev.device), "%s",
	         ev.rc == 0 ? vendor_events_refused(c->libs[VENDOR_NVML])
	                    : vhealth_kind_key(VENDOR_NVML));
	/* Sent before the thread starts: a wait that fails at once must
	 * not be overtaken by the news that events are watched. */
	send_msg(c, MSG_EVENTS, &ev, sizeof(ev));
	if (ev.rc < 0)
		return;
	rc = pthread_create(&t, NULL, watch_events, c);
	if (rc == 0) {
		(void)pthread_detach(t);
		return;
	}
	ev.rc = -rc;
	snprintf(ev.device, sizeof(ev.device), "%s", vhealth_kind_key(VENDOR_NVML));
	snprintf(ev.error, sizeof(ev.error), "no thread to wait for events: %s", strerror(rc));
	send_msg(c, MSG_EVENTS, &ev, sizeof(ev));
}

static void __attribute__((noreturn))
child_main(struct child *c)
{
	int64_t next;

	open_libraries(c);
	if (c->libs[VENDOR_NVML])
		start_events(c);
	next = util_now_ns() + (int64_t)(c->interval_s * 1e9);
	for (;;) {
		int64_t left = next - util_now_ns();

		if (left > 0) {
			nap_ms(left / 1000000 + 1);
			if (getppid() != c->parent)
				_exit(0);
			continue;
		}
		snapshot(c);
		next = util_now_ns() + (int64_t)(c->interval_s * 1e9);
	}
}

/* ---- the agent's side -------------------------------------------------- */

static int
copy_slots(struct vhealth_monitor *m, const struct slot *slots, size_t n)
{
	if (n == 0)
		return 0;
	m->slots = calloc(n, sizeof(*m->slots));
	if (!m->slots)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		m->slots[i].index = slots[i].index;
		m->slots[i].vendor = slots[i].vendor;
		memcpy(m->slots[i].pci_bus_id, slots[i].pci_bus_id, sizeof(slots[i].pci_bus_id));
	}
	m->nslots = n;
	return 0;
}

static pid_t
fork_child(struct vhealth_monitor *m, int fds[2])
{
	struct child c;
	pid_t parent = getpid();
	pid_t pid;

	pid = spawn_fork(NULL);
	if (pid != 0)
		return pid;
	spawn_close_others(fds[1]);
	spawn_child_ready(NULL);
	/* Die with the agent, even when it is killed; and if it died
	 * before the line above, the parent is already someone else. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	(void)signal(SIGPIPE, SIG_IGN);
	vhealth_quiet_stdio();
	memset(&c, 0, sizeof(c));
	c.fd = fds[1];
	c.parent = parent;
	c.rules = &m->rules;
	c.asked = m->asked;
	c.slots = m->slots;
	c.nslots = m->nslots;
	c.interval_s = m->interval_s;
	if (pthread_mutex_init(&c.lock, NULL) != 0)
		_exit(1);
	child_main(&c);
}

int
vhealth_monitor_start(const struct config_boards *rules, double timeout_s,
                      const struct slot *slots, size_t nslots, bool live, double interval_s,
                      struct vhealth_monitor **out)
{
	struct vhealth_monitor *m;
	bool any = false;
	int fds[2] = { -1, -1 }, rc;

	*out = NULL;
	if (!(interval_s > 0) || !(timeout_s > 0) || !isfinite(interval_s))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->pid = -1;
	m->fd = -1;
	m->timeout_s = timeout_s;
	m->interval_s = interval_s;
	vhealth_asked(rules, slots, nslots, live, m->asked);
	for (unsigned k = 0; k < VENDOR_NKINDS; k++)
		any |= m->asked[k];
	if (!any) {
		free(m);
		return -ENOENT;
	}
	rc = config_boards_copy(&m->rules, rules);
	if (rc == 0)
		rc = copy_slots(m, slots, nslots);
	m->now = vhealth_facts_new();
	m->base = vhealth_facts_new();
	if (rc == 0 && (!m->now || !m->base))
		rc = -ENOMEM;
	if (rc == 0 && pipe2(fds, O_CLOEXEC) < 0)
		rc = -errno;
	if (rc < 0)
		goto fail;
	m->pid = fork_child(m, fds);
	(void)close(fds[1]);
	if (m->pid < 0) {
		rc = (int)m->pid;
		(void)close(fds[0]);
		goto fail;
	}
	m->fd = fds[0];
	/* Room for a node's facts in the pipe, so the child seldom waits
	 * for the agent to read; the default 64 KiB also works. */
	(void)fcntl(m->fd, F_SETPIPE_SZ, 1 << 20);
	if (fcntl(m->fd, F_SETFL, O_NONBLOCK) < 0) {
		rc = -errno;
		goto fail;
	}
	m->started = util_now_s();
	*out = m;
	return 0;
fail:
	vhealth_monitor_free(m);
	return rc;
}

int
vhealth_monitor_fd(const struct vhealth_monitor *m)
{
	return m->fd;
}

pid_t
vhealth_monitor_pid(const struct vhealth_monitor *m)
{
	return m->pid;
}

const struct vhealth_facts *
vhealth_monitor_facts(const struct vhealth_monitor *m)
{
	return m->have_facts ? m->now : NULL;
}

bool
vhealth_monitor_events(const struct vhealth_monitor *m, const char **err)
{
	if (err)
		*err = m->events_known ? m->events_error : "not known yet";
	return m->events_on;
}

const char *
vhealth_monitor_events_news(struct vhealth_monitor *m)
{
	if (!m->events_news)
		return NULL;
	m->events_news = false;
	return m->events_error;
}

static void
take_facts(struct vhealth_monitor *m, const struct msg_facts *msg)
{
	unsigned k = (unsigned)msg->facts.kind;
	struct vendor_facts *f;

	if (k >= VENDOR_NKINDS || !m->asked[k])
		return;
	f = &m->now->lib[k];
	*f = msg->facts;
	f->library[sizeof(f->library) - 1] = '\0';
	f->version[sizeof(f->version) - 1] = '\0';
	f->error[sizeof(f->error) - 1] = '\0';
	m->now->asked[k] = true;
	m->now->rc[k] = msg->rc;
	m->seen[k] = util_now_s();
	m->have_facts = true;
	/* The first whole answer is what the job started with. */
	if (msg->rc == 0 && !m->base->asked[k]) {
		m->base->asked[k] = true;
		m->base->rc[k] = 0;
		m->base->lib[k] = *f;
	}
}

static void
take_event(struct vhealth_monitor *m, const struct vendor_event *e)
{
	struct vendor_event ev = *e;

	ev.bus_id[sizeof(ev.bus_id) - 1] = '\0';
	for (size_t i = 0; i < m->nevents; i++) {
		const struct vendor_event *x = &m->events[i];

		if (x->kind == ev.kind && x->xid == ev.xid && x->board == ev.board &&
		    strcmp(x->bus_id, ev.bus_id) == 0)
			return;
	}
	if (m->nevents < MAX_EVENTS)
		m->events[m->nevents++] = ev;
}

static void
take_message(struct vhealth_monitor *m, uint32_t kind, const char *p, uint32_t len)
{
	if (kind == MSG_FACTS && len >= MSG_FACTS_LEN(0) && len <= sizeof(struct msg_facts)) {
		struct msg_facts *f = calloc(1, sizeof(*f));

		/* Copied out: whole, aligned, and the boards not sent zeroed. */
		if (!f)
			return;
		memcpy(f, p, len);
		if (MSG_FACTS_LEN(f->facts.nboards) == len)
			take_facts(m, f);
		free(f);
	} else if (kind == MSG_EVENT && len == sizeof(struct vendor_event)) {
		struct vendor_event e;

		memcpy(&e, p, sizeof(e));
		take_event(m, &e);
	} else if (kind == MSG_EVENTS && len == sizeof(struct msg_events)) {
		struct msg_events e;

		memcpy(&e, p, sizeof(e));
		e.error[sizeof(e.error) - 1] = '\0';
		e.device[sizeof(e.device) - 1] = '\0';
		m->events_known = true;
		m->events_on = e.rc == 0;
		m->events_news = e.error[0] != '\0';
		snprintf(m->events_error, sizeof(m->events_error), "%s", e.error);
		snprintf(m->events_device, sizeof(m->events_device), "%s",
		         e.device[0] ? e.device : vhealth_kind_key(VENDOR_NVML));
	}
}

/* Read what is there (never waiting) and take every whole message. */
static int
drain(struct vhealth_monitor *m)
{
	size_t off = 0;

	for (;;) {
		ssize_t n;

		if (m->cap - m->len < 65536) {
			size_t cap = m->cap ? m->cap * 2 : 262144;
			char *b = realloc(m->buf, cap);

			if (!b)
				return -ENOMEM;
			m->buf = b;
			m->cap = cap;
		}
		n = m->fd >= 0 ? read(m->fd, m->buf + m->len, m->cap - m->len) : 0;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;  /* EAGAIN: all there is; 0: the child is gone */
		m->len += (size_t)n;
	}
	while (m->len - off >= sizeof(struct msg_head)) {
		struct msg_head h;

		memcpy(&h, m->buf + off, sizeof(h));
		/* A length no message has means the stream is broken:
		 * drop it all rather than read garbage as facts. */
		if (h.len > sizeof(struct msg_facts)) {
			off = m->len;
			break;
		}
		if (m->len - off - sizeof(h) < h.len)
			break;
		take_message(m, h.kind, m->buf + off + sizeof(h), h.len);
		off += sizeof(h) + h.len;
	}
	memmove(m->buf, m->buf + off, m->len - off);
	m->len -= off;
	return 0;
}

int
vhealth_monitor_take(struct vhealth_monitor *m, struct finding **out, size_t *n)
{
	struct finding *judged = NULL;
	struct finding_list l = { 0 };
	double now = util_now_s(), stale = 2 * m->interval_s + m->timeout_s;
	size_t nj = 0;
	int rc;

	*out = NULL;
	*n = 0;
	rc = drain(m);
	if (rc < 0)
		return rc;
	rc = vhealth_judge(&m->rules, m->slots, m->nslots, m->now, m->base, &judged, &nj);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < m->nevents; i++) {
		struct finding f;

		if (vhealth_judge_event(&m->rules, &m->events[i], &f))
			finding_add(&l, f.verdict, f.what, f.device, "%s", f.evidence);
	}
	for (size_t i = 0; i < nj; i++)
		finding_add(&l, judged[i].verdict, judged[i].what, judged[i].device, "%s",
		            judged[i].evidence);
	free(judged);
	/* XIDs leave no trace NVML can be asked for later: say that they
	 * are not watched, for as long as it holds. */
	if (m->events_known && m->events_error[0])
		finding_add(&l, VERDICT_WARN, "events", m->events_device,
		            "XID events are not watched%s: %s; each inspection reads the boards "
		            "instead", m->events_on ? " on every board" : "", m->events_error);
	for (unsigned k = 0; k < VENDOR_NKINDS; k++) {
		double since = m->seen[k] > 0 ? m->seen[k] : m->started;

		if (m->asked[k] && now - since > stale)
			finding_add(&l, m->rules.unresponsive, "board",
			            vhealth_kind_key((enum vendor_kind)k),
			            "%s has not answered for %.0f s", vendor_kind_name((enum vendor_kind)k),
			            now - since);
	}
	return finding_list_end(&l, out, n);
}

void
vhealth_monitor_free(struct vhealth_monitor *m)
{
	if (!m)
		return;
	if (m->fd >= 0)
		(void)close(m->fd);
	if (m->pid > 0) {
		int status;

		(void)kill(m->pid, SIGKILL);
		/* Reaped here when it goes at once; a child stuck in the
		 * kernel on a wedged board is left to the agent's SIGCHLD
		 * reaping, as timed.c does. */
		for (int i = 0; i < 20; i++) {
			pid_t r = waitpid(m->pid, &status, WNOHANG);

			if (r != 0)
				break;
			nap_ms(1);
		}
	}
	config_boards_free(&m->rules);
	free(m->slots);
	free(m->now);
	free(m->base);
	free(m->buf);
	free(m);
}
