/*
 * vhealth.c - board health from the vendors' libraries: gathering in
 * timed children, and the judges.
 *
 * The judges are small functions, one per kind of finding, that read a
 * board's facts (and its baseline) and append findings; vhealth_judge()
 * runs them over every board.  None does I/O.  The monitor of a running
 * job lives in vhealth_monitor.c.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check/vhealth.h"
#include "check/vhealth_priv.h"
#include "lib/util.h"
#include "proc/timed.h"
#include "sys/vendor_abi.h"

struct vhealth_facts *
vhealth_facts_new(void)
{
	return calloc(1, sizeof(struct vhealth_facts));
}

enum vendor_kind
vhealth_vendor_of(enum slot_vendor v)
{
	switch (v) {
	case SLOT_VENDOR_AMD:
		return VENDOR_RSMI;
	case SLOT_VENDOR_CAMBRICON:
		return VENDOR_CNDEV;
	case SLOT_VENDOR_NVIDIA:
		break;
	}
	return VENDOR_NVML;
}

const char *
vhealth_library_path(const struct config_boards *rules, enum vendor_kind k)
{
	switch (k) {
	case VENDOR_NVML:
		return rules->nvml_library;
	case VENDOR_RSMI:
		return rules->rocm_smi_library;
	case VENDOR_CNDEV:
		return rules->cndev_library;
	}
	return NULL;
}

void
vhealth_asked(const struct config_boards *rules, const struct slot *slots, size_t n, bool live,
              bool asked[VENDOR_NKINDS])
{
	for (unsigned k = 0; k < VENDOR_NKINDS; k++)
		asked[k] = false;
	for (size_t i = 0; rules->enabled && i < n; i++) {
		enum vendor_kind k = vhealth_vendor_of(slots[i].vendor);

		asked[k] = live || vhealth_library_path(rules, k) != NULL;
	}
}

void
vhealth_quiet_stdio(void)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* The libraries print (ROCm SMI: "Failed to open drm root
	 * directory"); vigil check must stay silent when healthy. */
	if (null < 0)
		return;
	(void)dup2(null, STDOUT_FILENO);
	(void)dup2(null, STDERR_FILENO);
	if (null > STDERR_FILENO)
		(void)close(null);
}

/* ---- gathering -------------------------------------------------------- */

struct ask {
	enum vendor_kind kind;
	const char *path;
	const struct slot *slots;
	size_t nslots;
};

struct answer {
	int rc;
	struct vendor_facts facts;
};

/* The bus ids of KIND's boards among SLOTS, for vendor_expect(). */
static void
expect_slots(struct vendor_lib *l, enum vendor_kind kind, const struct slot *slots, size_t n)
{
	const char *ids[VENDOR_MAX_BOARDS];
	size_t k = 0;

	for (size_t i = 0; i < n && k < VENDOR_MAX_BOARDS; i++)
		if (vhealth_vendor_of(slots[i].vendor) == kind && slots[i].pci_bus_id[0])
			ids[k++] = slots[i].pci_bus_id;
	vendor_expect(l, ids, k);
}

int
vhealth_ask(enum vendor_kind kind, const char *path, const struct slot *slots, size_t nslots,
            struct vendor_lib **keep, struct vendor_facts *f)
{
	struct vendor_lib *l = NULL;
	int rc;

	rc = vendor_open(kind, path, &l, f);
	if (rc == 0) {
		expect_slots(l, kind, slots, nslots);
		rc = vendor_read(l, f);
	}
	if (keep && rc == 0)
		*keep = l;
	else
		vendor_close(l);
	return rc;
}

static int
ask_child(void *arg, int fd)
{
	const struct ask *a = arg;
	struct answer *ans = malloc(sizeof(*ans));
	int rc;

	if (!ans)
		return 1;
	vhealth_quiet_stdio();
	memset(ans, 0, sizeof(*ans));
	ans->rc = vhealth_ask(a->kind, a->path, a->slots, a->nslots, NULL, &ans->facts);
	rc = util_write_all(fd, ans, sizeof(*ans));
	free(ans);
	return rc < 0 ? 1 : 0;
}

int
vhealth_gather(const struct config *cfg, const struct slot *slots, size_t nslots, bool live,
               struct vhealth_facts *out)
{
	struct answer *ans;

	memset(out, 0, sizeof(*out));
	vhealth_asked(&cfg->boards, slots, nslots, live, out->asked);
	ans = malloc(sizeof(*ans));
	if (!ans)
		return -ENOMEM;
	for (unsigned k = 0; k < VENDOR_NKINDS; k++) {
		struct ask a = { (enum vendor_kind)k, vhealth_library_path(&cfg->boards, k), slots,
		                 nslots };
		struct vendor_facts *f = &out->lib[k];
		ssize_t n;

		if (!out->asked[k])
			continue;
		memset(ans, 0, sizeof(*ans));
		n = timed_run(ask_child, &a, cfg->check_timeout_s, (char *)ans, sizeof(*ans), NULL);
		if (n == (ssize_t)sizeof(*ans)) {
			*f = ans->facts;
			out->rc[k] = ans->rc;
			/* From another process: terminate what is printed. */
			f->library[sizeof(f->library) - 1] = '\0';
			f->version[sizeof(f->version) - 1] = '\0';
			f->error[sizeof(f->error) - 1] = '\0';
			if (f->nboards > VENDOR_MAX_BOARDS)
				f->nboards = VENDOR_MAX_BOARDS;
			continue;
		}
		f->kind = (enum vendor_kind)k;
		f->count = -1;
		snprintf(f->library, sizeof(f->library), "%s",
		         a.path ? a.path : vendor_default_library(a.kind));
		if (n == -ETIMEDOUT) {
			out->rc[k] = -ETIMEDOUT;
			snprintf(f->error, sizeof(f->error), "did not answer within %g s",
			         cfg->check_timeout_s);
		} else if (n < 0 && n != -EPROTO) {
			free(ans);
			return (int)n;
		} else {
			out->rc[k] = -EPROTO;
			snprintf(f->error, sizeof(f->error), "the query process ended without an answer");
		}
	}
	free(ans);
	return 0;
}

/* What a board is called in findings: its bus id, else "nvml:3". */
const char *
vhealth_kind_key(enum vendor_kind k)
{
	static const char *const keys[VENDOR_NKINDS] = { "nvml", "rocm_smi", "cndev" };

	return (unsigned)k < VENDOR_NKINDS ? keys[k] : "?";
}

static void
board_device(const struct vendor_board *b, enum vendor_kind k, char *buf, size_t len)
{
	if (b->bus_id[0])
		snprintf(buf, len, "%s", b->bus_id);
	else
		snprintf(buf, len, "%s:%d", vhealth_kind_key(k), b->index);
}

/* A counter's rise since BASE; 0 when either is unknown or it fell (a
 * driver reload clears the driver's counts). */
static long long
rise(long long base, long long now)
{
	return base >= 0 && now > base ? now - base : 0;
}

struct judging {
	const struct config_boards *r;
	enum vendor_kind kind;
	const struct vendor_board *b;
	const struct vendor_board *base;    /* NULL: no baseline */
	char dev[32];
	struct finding_list *out;
};

static void
judge_recovery(const struct judging *j)
{
	/* nvmlDeviceGpuRecoveryAction_t, NVML_GPU_RECOVERY_ACTION_*. */
	static const char *const actions[] = {
		NULL, "reset the GPU", "reboot the node", "drain peer-to-peer traffic",
		"drain peer-to-peer traffic and reset the GPU",
		"recover the IMEX domain (the multi-node NVLink domain's memory export service)",
	};
	const struct vendor_board *b = j->b;

	if (b->reset_required)
		finding_add(j->out, j->r->recovery_action, "recovery", j->dev,
		            "the GPU needs a reset (%s answered NVML_ERROR_RESET_REQUIRED)",
		            b->lost_call);
	if (b->recovery > VENDOR_RECOVERY_NONE &&
	    b->recovery <= VENDOR_RECOVERY_RECOVER_IMEX_DOMAIN)
		finding_add(j->out, j->r->recovery_action, "recovery", j->dev,
		            "the driver's recommended recovery action: %s", actions[b->recovery]);
	else if (b->recovery > VENDOR_RECOVERY_RECOVER_IMEX_DOMAIN)
		finding_add(j->out, j->r->recovery_action, "recovery", j->dev,
		            "the driver's recommended recovery action: %d", b->recovery);
}

static void
judge_correctable(const struct judging *j, const char *what, const char *dev,
                  const char *where, long long base, long long now)
{
	const struct config_boards *r = j->r;

	if (j->base) {
		if (r->ecc_correctable_rise >= 0 && rise(base, now) > r->ecc_correctable_rise)
			finding_add(j->out, VERDICT_WARN, what, dev,
			            "correctable ECC errors%s rose from %lld to %lld", where, base, now);
	} else if (r->ecc_correctable_max >= 0 && now > r->ecc_correctable_max) {
		finding_add(j->out, VERDICT_WARN, what, dev,
		            "%lld correctable ECC errors%s (limit %lld)", now, where,
		            r->ecc_correctable_max);
	}
}

static void
judge_ecc(const struct judging *j)
{
	const struct vendor_board *b = j->b;

	if (b->ecc_volatile[1] > 0) {
		if (b->ecc_aggregate[1] >= 0)
			finding_add(j->out, j->r->ecc_uncorrectable, "ecc", j->dev,
			            "%lld uncorrectable ECC errors since the driver loaded "
			            "(%lld in the board's life)", b->ecc_volatile[1], b->ecc_aggregate[1]);
		else
			finding_add(j->out, j->r->ecc_uncorrectable, "ecc", j->dev,
			            "%lld uncorrectable ECC errors", b->ecc_volatile[1]);
	}
	judge_correctable(j, "ecc", j->dev, "", j->base ? j->base->ecc_volatile[0] : -1,
	                  b->ecc_volatile[0]);
}

static void
judge_retired_and_remapped(const struct judging *j)
{
	const struct vendor_board *b = j->b;

	if (b->retired_pending == 1)
		finding_add(j->out, j->r->retired_pages_pending, "retired-pages", j->dev,
		            "pages wait for retirement at the next reboot (%lld retired for "
		            "double-bit, %lld for single-bit errors)", b->retired[1], b->retired[0]);
	if (b->remap_failure == 1)
		finding_add(j->out, j->r->row_remap_failure, "row-remap", j->dev,
		            "row remapping has failed (%lld rows remapped for uncorrectable, "
		            "%lld for correctable errors)", b->remapped[1], b->remapped[0]);
	if (b->remap_pending == 1)
		finding_add(j->out, j->r->row_remap_pending, "row-remap", j->dev,
		            "row remapping pending: the GPU needs a reset (%lld rows remapped for "
		            "uncorrectable, %lld for correctable errors)", b->remapped[1],
		            b->remapped[0]);
}

static void
judge_throttle(const struct judging *j)
{
	static const struct { unsigned long long bit; const char *name; } reasons[] = {
		{ NVML_CLOCKS_HW_SLOWDOWN, "HW slowdown" },
		{ NVML_CLOCKS_HW_THERMAL_SLOWDOWN, "HW thermal slowdown" },
		{ NVML_CLOCKS_HW_POWER_BRAKE, "HW power brake" },
		{ NVML_CLOCKS_SW_THERMAL_SLOWDOWN, "SW thermal slowdown" },
	};
	const struct vendor_board *b = j->b;
	char names[128] = "";
	size_t used = 0;

	if (b->throttle <= 0)
		return;
	if (j->kind == VENDOR_RSMI) {
		/* The firmware's bits differ by ASIC: reported whole. */
		finding_add(j->out, j->r->throttle, "throttle", j->dev,
		            "the firmware throttles the clocks (throttle_status 0x%llx)",
		            (unsigned long long)b->throttle);
		return;
	}
	/* The power cap, idle clocks and application clocks are how a
	 * healthy board runs: only the protective slowdowns count. */
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		if (!((unsigned long long)b->throttle & reasons[i].bit))
			continue;
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
		                         used ? ", " : "", reasons[i].name);
		if (used >= sizeof(names))
			break;
	}
	if (names[0])
		finding_add(j->out, j->r->throttle, "throttle", j->dev, "clocks slowed down: %s",
		            names);
}

static void
judge_temperature(const struct judging *j)
{
	const struct vendor_board *b = j->b;

	if (b->temperature < 0 || b->slowdown <= 0)
		return;
	if (b->temperature >= b->slowdown - j->r->temperature_margin_c)
		finding_add(j->out, j->r->temperature, "temperature", j->dev,
		            "%d C, the board slows down at %d C", b->temperature, b->slowdown);
}

static void
judge_links(const struct judging *j)
{
	const struct vendor_board *b = j->b;
	unsigned active = 0, known = 0;
	char dev[64];

	for (unsigned i = 0; i < VENDOR_MAX_LINKS; i++) {
		known += b->link[i] >= 0;
		active += b->link[i] == 1;
	}
	if (!j->base && known > 0 && j->r->nvlink_expected >= 0 &&
	    active < (unsigned long long)j->r->nvlink_expected)
		finding_add(j->out, j->r->nvlink_down, "nvlink", j->dev,
		            "%u of %u NVLinks active, %lld expected", active, known,
		            j->r->nvlink_expected);
	for (unsigned i = 0; j->base && i < VENDOR_MAX_LINKS; i++) {
		char what[160] = "";
		size_t used = 0;

		snprintf(dev, sizeof(dev), "%s/nvlink%u", j->dev, i);
		if (j->base->link[i] == 1 && b->link[i] == 0)
			finding_add(j->out, j->r->nvlink_down, "nvlink", dev,
			            "NVLink %u went down (active when the job started)", i);
		if (j->r->nvlink_errors_rise < 0)
			continue;
		for (unsigned c = 0; c < VENDOR_LINK_COUNTERS && used < sizeof(what); c++) {
			long long up = rise(j->base->link_errors[i][c], b->link_errors[i][c]);

			if (up > j->r->nvlink_errors_rise)
				used += (size_t)snprintf(what + used, sizeof(what) - used,
				                         "%s%s %lld -> %lld", used ? ", " : "",
				                         vendor_link_counter_name(c),
				                         j->base->link_errors[i][c], b->link_errors[i][c]);
		}
		if (what[0])
			finding_add(j->out, VERDICT_WARN, "nvlink", dev, "NVLink %u errors rose: %s",
			            i, what);
	}
}

static void
judge_ras(const struct judging *j)
{
	const struct vendor_board *b = j->b;
	char dev[64], where[32];

	for (unsigned i = 0; i < VENDOR_RAS_BLOCKS; i++) {
		const long long *now = b->ras[i];

		if (now[0] < 0 && now[1] < 0)
			continue;
		snprintf(dev, sizeof(dev), "%s/%s", j->dev, vendor_ras_block_name(i));
		if (now[1] > 0)
			finding_add(j->out, j->r->ecc_uncorrectable, "ras", dev,
			            "%lld uncorrectable errors in block %s", now[1],
			            vendor_ras_block_name(i));
		snprintf(where, sizeof(where), " in block %s", vendor_ras_block_name(i));
		judge_correctable(j, "ras", dev, where, j->base ? j->base->ras[i][0] : -1, now[0]);
	}
}

static void
judge_health(const struct judging *j)
{
	static const char *const drivers[] = {
		"early init", "bring-up", "booting", "late init", "running", "boot error",
		"resetting", "reset error", "unknown",
	};
	const struct vendor_board *b = j->b;
	const char *driver;

	if (b->health != 0 && b->device_state != CNDEV_DEVICE_IN_PROBLEM &&
	    (b->driver_state < 0 || b->driver_state == CNDEV_DRIVER_RUNNING))
		return;
	driver = b->driver_state >= 0 && b->driver_state <= CNDEV_DRIVER_UNKNOWN
	         ? drivers[b->driver_state] : "not reported";
	finding_add(j->out, j->r->health, "health", j->dev,
	            "CNDev health: %s, device %s, driver %s",
	            b->health == 0 ? "not healthy" : b->health == 1 ? "healthy" : "unknown",
	            b->device_state == CNDEV_DEVICE_IN_PROBLEM ? "in problem"
	            : b->device_state == CNDEV_DEVICE_GOOD ? "good" : "unknown", driver);
}

/* Calls that failed on the board: what they tell is unknown, which is
 * said rather than taken for health. */
static void
judge_failed(const struct judging *j)
{
	const struct vendor_board *b = j->b;

	if (!b->failed[0])
		return;
	if (strchr(b->failed, ','))
		finding_add(j->out, VERDICT_WARN, "board", j->dev,
		            "%s failed (the first: %s): what they tell is unknown", b->failed,
		            b->failed_why);
	else
		finding_add(j->out, VERDICT_WARN, "board", j->dev,
		            "%s failed: %s: what it tells is unknown", b->failed, b->failed_why);
}

/* Every judge, for one board. */
static void
judge_board(struct judging *j)
{
	const struct vendor_board *b = j->b;

	board_device(b, j->kind, j->dev, sizeof(j->dev));
	if (b->lost) {
		finding_add(j->out, j->r->lost, "board", j->dev,
		            "GPU is lost: fallen off the bus or unreachable (%s answered "
		            "NVML_ERROR_GPU_IS_LOST)", b->lost_call);
		return;
	}
	judge_failed(j);
	judge_recovery(j);
	judge_ecc(j);
	judge_retired_and_remapped(j);
	judge_throttle(j);
	judge_temperature(j);
	judge_links(j);
	judge_ras(j);
	if (j->kind == VENDOR_CNDEV)
		judge_health(j);
}

/* ---- matching slots and boards ---------------------------------------- */

/*
 * The board of F that is slot S, the Kth slot of its vendor: the one with
 * S's bus id, else (a board the library could not name) the Kth board,
 * since the libraries enumerate in PCI bus order.  -1 when none.
 */
static int
match_slot(const struct vendor_facts *f, const struct slot *s, size_t k)
{
	for (size_t i = 0; i < f->nboards; i++)
		if (f->boards[i].bus_id[0] && strcmp(f->boards[i].bus_id, s->pci_bus_id) == 0)
			return (int)i;
	if (k < f->nboards && !f->boards[k].bus_id[0])
		return (int)k;
	return -1;
}

/* BASE's record of board B: the same bus id, else the same index when
 * neither has one. */
static const struct vendor_board *
match_base(const struct vhealth_facts *base, enum vendor_kind kind, const struct vendor_board *b)
{
	const struct vendor_facts *f;

	if (!base || !base->asked[kind] || base->rc[kind] != 0)
		return NULL;
	f = &base->lib[kind];
	for (size_t i = 0; i < f->nboards; i++) {
		const struct vendor_board *x = &f->boards[i];

		if (b->bus_id[0] ? strcmp(x->bus_id, b->bus_id) == 0
		                 : !x->bus_id[0] && x->index == b->index)
			return x;
	}
	return NULL;
}

int
vhealth_slot_of(const struct vendor_facts *f, size_t board, const struct slot *slots,
                size_t nslots)
{
	size_t k = 0;

	for (size_t i = 0; i < nslots; i++) {
		if (vhealth_vendor_of(slots[i].vendor) != f->kind)
			continue;
		if (match_slot(f, &slots[i], k++) == (int)board)
			return slots[i].index;
	}
	return -1;
}

static void
judge_library(const struct config_boards *r, const struct slot *slots, size_t nslots,
              enum vendor_kind kind, const struct vhealth_facts *now,
              const struct vhealth_facts *base, struct finding_list *out)
{
	const struct vendor_facts *f = &now->lib[kind];
	bool used[VENDOR_MAX_BOARDS] = { false };
	struct judging j = { .r = r, .kind = kind, .out = out };
	size_t k = 0;

	for (size_t i = 0; i < nslots; i++) {
		const struct slot *s = &slots[i];
		int m;

		if (vhealth_vendor_of(s->vendor) != kind)
			continue;
		m = match_slot(f, s, k++);
		if (m < 0) {
			finding_add(out, r->lost, "board", s->pci_bus_id,
			            "slot %d is not among the %zu board%s %s sees (fallen off the bus?)",
			            s->index, f->nboards, util_plural((long long)f->nboards),
			            vendor_kind_name(kind));
			continue;
		}
		used[m] = true;
		j.b = &f->boards[m];
		j.base = match_base(base, kind, j.b);
		judge_board(&j);
	}
	/* Boards no slot names (hwloc missed one, or a topology file from
	 * elsewhere) are judged all the same. */
	for (size_t m = 0; m < f->nboards; m++) {
		if (used[m])
			continue;
		j.b = &f->boards[m];
		j.base = match_base(base, kind, j.b);
		judge_board(&j);
	}
}

int
vhealth_judge(const struct config_boards *rules, const struct slot *slots, size_t nslots,
              const struct vhealth_facts *now, const struct vhealth_facts *base,
              struct finding **out, size_t *n)
{
	struct finding_list l = { 0 };

	for (unsigned k = 0; k < VENDOR_NKINDS; k++)
		if (now->asked[k] && now->rc[k] == 0)
			judge_library(rules, slots, nslots, (enum vendor_kind)k, now, base, &l);
	for (unsigned k = 0; k < VENDOR_NKINDS; k++) {
		const char *name = vendor_kind_name((enum vendor_kind)k);

		/* Not installed: the driver's own files tell the version, the
		 * slot check the boards.  Not an event.  Answered, with a call
		 * that failed on the way (NVML's driver version): a warning. */
		if (!now->asked[k] || now->rc[k] == -ENOENT ||
		    (now->rc[k] == 0 && !now->lib[k].error[0]))
			continue;
		finding_add(&l, now->rc[k] == -ETIMEDOUT ? rules->unresponsive : VERDICT_WARN,
		            "board", vhealth_kind_key((enum vendor_kind)k), "%s: %s", name,
		            now->lib[k].error[0] ? now->lib[k].error : "no answer");
	}
	return finding_list_end(&l, out, n);
}

/* ---- events ----------------------------------------------------------- */

const char *
vhealth_xid_name(unsigned long long xid)
{
	/* NVIDIA's XID catalog (docs.nvidia.com/deploy/xid-errors). */
	static const struct { unsigned xid; const char *name; } names[] = {
		{ 13, "graphics engine exception" },
		{ 31, "GPU memory page fault" },
		{ 43, "GPU stopped processing" },
		{ 45, "preemptive cleanup" },
		{ 48, "double-bit ECC error" },
		{ 61, "internal micro-controller breakpoint" },
		{ 62, "internal micro-controller halt" },
		{ 63, "ECC page retirement or row remapping recorded" },
		{ 64, "ECC page retirement or row remapping failed" },
		{ 74, "NVLink error" },
		{ 79, "GPU has fallen off the bus" },
		{ 92, "high single-bit ECC error rate" },
		{ 94, "contained ECC error" },
		{ 95, "uncontained ECC error" },
		{ 119, "GSP RPC timeout" },
		{ 120, "GSP error" },
		{ 140, "unrecovered ECC error" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].xid == xid)
			return names[i].name;
	return NULL;
}

bool
vhealth_judge_event(const struct config_boards *rules, const struct vendor_event *ev,
                    struct finding *out)
{
	struct finding_list l = { .v = out, .cap = 1 };
	char dev[32];
	enum verdict v;

	if (ev->bus_id[0])
		snprintf(dev, sizeof(dev), "%s", ev->bus_id);
	else if (ev->board >= 0)
		snprintf(dev, sizeof(dev), "nvml:%d", ev->board);
	else
		snprintf(dev, sizeof(dev), "nvml");
	switch (ev->kind) {
	case VENDOR_EVENT_XID: {
		const char *name = vhealth_xid_name(ev->xid);

		v = rules->xid_other;
		for (size_t i = 0; i < rules->nxid_fail; i++)
			if ((unsigned long long)rules->xid_fail[i] == ev->xid)
				v = VERDICT_FAIL;
		if (name)
			finding_add(&l, v, "xid", dev, "XID %llu (%s)", ev->xid, name);
		else
			finding_add(&l, v, "xid", dev, "XID %llu", ev->xid);
		break;
	}
	case VENDOR_EVENT_DBE:
		finding_add(&l, rules->ecc_uncorrectable, "ecc", dev,
		            "double-bit ECC error (NVML event)");
		break;
	case VENDOR_EVENT_LOST:
		finding_add(&l, rules->lost, "board", dev,
		            "a GPU is lost: nvmlEventSetWait answered NVML_ERROR_GPU_IS_LOST");
		break;
	default:
		break;
	}
	return l.n == 1;
}
