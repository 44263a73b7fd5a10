/*
 * report_plot.c - `vigil report --plot`: e2e time per node over
 * iterations as SVG, with the alerts and the report's median.
 *
 * Drawn in parts that know nothing of each other but the axes: the
 * header, the axes, one series (a line with markers), the median line,
 * the alerts and the legend, each its own function, so that another
 * layer (a timeline of the job's attempts) can be added as one more.
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "report/report.h"
#include "report/report_int.h"

#define SVG_W 960
#define SVG_H 540
/* The timeline of the chain of attempts, below the plot when there is one. */
#define TL_H 200
#define TL_Y0 (SVG_H + 36.0)    /* the first bar's top */
#define TL_Y1 (SVG_H + 146.0)   /* the time axis */
#define TL_BAR_MAX 22.0
#define PLOT_X0 80.0   /* the plot area, in SVG units */
#define PLOT_X1 720.0
#define PLOT_Y0 70.0
#define PLOT_Y1 470.0
/* More nodes than this: only flagged nodes get colours and legend entries. */
#define LEGEND_MAX 12

/* Tableau 10: distinguishable, and readable for most colour blindness. */
static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2",
	"#edc948", "#9c755f", "#bab0ac", "#ff9da7", "#e15759",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))
#define ALERT_COLOUR "#d62728"
/* More alerts than this: lines without labels. */
#define ALERT_LABELS_MAX 12
#define MEDIAN_COLOUR "#333333"
/* Markers on a series of more points than this: every k-th point. */
#define MARKERS_MAX 120
/*
 * Series with markers are drawn this far apart (px, along both axes),
 * at most DODGE_SPAN from end to end, so that nodes with equal values
 * do not hide each other (a marker is 7 px wide); against the plot's
 * 400 px of height that is about 1% of the range either way.
 */
#define DODGE_STEP 3.0
#define DODGE_SPAN 9.0

/*
 * Hollow markers, one shape per node in turn, centred on 0,0; drawn
 * with <use>, filled white and stroked in the series' colour.
 */
static const char *const marker_path[] = {
	"M-3.5,0a3.5,3.5 0 1,0 7,0a3.5,3.5 0 1,0 -7,0z",  /* circle */
	"M-3,-3h6v6h-6z",                                  /* square */
	"M0,-4.2L3.8,2.6H-3.8z",                           /* triangle */
	"M0,-4.4L4.4,0L0,4.4L-4.4,0z",                     /* diamond */
	"M0,4.2L3.8,-2.6H-3.8z",                           /* triangle down */
	"M-3.2,-3.2L3.2,3.2M-3.2,3.2L3.2,-3.2",            /* cross */
	"M-4.2,0H4.2M0,-4.2V4.2",                          /* plus */
	"M-4,-1.3H4L-2.5,3.6L0,-4L2.5,3.6z",               /* star */
};
#define NMARKERS (sizeof(marker_path) / sizeof(marker_path[0]))

/*
 * Text as XML character data or attribute value: markup escaped, and
 * what XML 1.0 cannot hold (control characters, invalid UTF-8, which
 * node names and messages from a log may contain) replaced by '?'.
 */
static void
xml_put(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned c = *p;
		size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 :
		           (c & 0xf8) == 0xf0 ? 4 : 0;
		bool ok = n > 0;

		for (size_t k = 1; ok && k < n; k++)
			ok = (p[k] & 0xc0) == 0x80;
		if (ok && n == 2)
			ok = c >= 0xc2;  /* overlong */
		if (ok && n == 3)
			ok = !(c == 0xe0 && p[1] < 0xa0) && !(c == 0xed && p[1] >= 0xa0) &&
			     !(c == 0xef && p[1] == 0xbf && p[2] >= 0xbe);  /* overlong, surrogate, U+FFFE/F */
		if (ok && n == 4)
			ok = c <= 0xf4 && !(c == 0xf0 && p[1] < 0x90) && !(c == 0xf4 && p[1] >= 0x90);
		if (!ok) {
			fputc('?', out);
			p++;
			continue;
		}
		if (n > 1) {
			fwrite(p, 1, n, out);
		} else if (c == '&') {
			fputs("&amp;", out);
		} else if (c == '<') {
			fputs("&lt;", out);
		} else if (c == '>') {
			fputs("&gt;", out);
		} else if (c == '"') {
			fputs("&quot;", out);
		} else if (c < 0x20 && c != '\t' && c != '\n') {
			fputc('?', out);
		} else {
			fputc((int)c, out);
		}
		p += n;
	}
}

/* floor() and ceil() without libm.  From 2^52 up every double is whole. */
static double
floor_d(double x)
{
	double t;

	if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
		return x;
	t = (double)(long long)x;
	return t > x ? t - 1 : t;
}

static double
ceil_d(double x)
{
	double t;

	if (!(x > -4503599627370496.0 && x < 4503599627370496.0))
		return x;
	t = (double)(long long)x;
	return t < x ? t + 1 : t;
}

/*
 * A "nice" step (1, 2 or 5 times a power of ten) for about N ticks over
 * SPAN (> 0), and in *DECIMALS the digits after the point its multiples
 * need.  Powers of ten by multiplication keep libm out of the link.
 */
static double
nice_step(double span, int n, int *decimals)
{
	double raw = span / n, mag = 1, f;
	int d = 0;

	while (mag > raw && mag > 1e-12) {
		mag /= 10;
		d++;
	}
	while (mag * 10 <= raw && mag < 1e300)
		mag *= 10;
	f = raw / mag;
	if (f >= 7.5)
		d--;  /* the step is 10 * mag */
	*decimals = d < 0 ? 0 : d > 12 ? 12 : d;
	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

struct axis {
	double lo, hi, step;
	int decimals, ticks;  /* ticks: intervals between lo and hi */
};

/* Round [LO, HI] out to whole ticks. */
static void
axis_fit(struct axis *a, double lo, double hi, int ticks, bool whole)
{
	double n;

	if (!(hi > lo)) {
		double pad = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;

		lo -= pad;
		hi += pad;
	}
	a->step = nice_step(hi - lo, ticks, &a->decimals);
	if (whole && a->step < 1) {  /* iterations: no 2.75 */
		a->step = 1;
		a->decimals = 0;
	}
	a->lo = floor_d(lo / a->step) * a->step;
	a->hi = ceil_d(hi / a->step) * a->step;
	/* Counted, not stepped to: at magnitudes far above the step, v += step
	 * would not move. */
	n = (a->hi - a->lo) / a->step + 0.5;
	if (n >= 1 && n <= 40) {
		a->ticks = (int)n;
	} else {
		/* degenerate (values near the limits of double): two ticks */
		a->lo = lo;
		a->hi = hi > lo ? hi : lo + fabs(lo) * 1e-6 + 1;
		a->ticks = 1;
		a->step = a->hi - a->lo;
	}
}

static double
map_x(const struct axis *a, double v)
{
	return PLOT_X0 + (v - a->lo) / (a->hi - a->lo) * (PLOT_X1 - PLOT_X0);
}

static double
map_y(const struct axis *a, double v)
{
	return PLOT_Y1 - (v - a->lo) / (a->hi - a->lo) * (PLOT_Y1 - PLOT_Y0);
}

/*
 * One series as a polyline, moved by DX, DY (px).  Beyond two points per
 * horizontal pixel the points are thinned per pixel column to that
 * column's lowest and highest, in order, so spikes survive and the file
 * stays small.
 */
static void
put_polyline(FILE *out, const struct axis *ax, const struct axis *ay, const struct point *pts,
             size_t n, const char *colour, double width, double opacity, double dx, double dy)
{
	size_t cols = (size_t)(PLOT_X1 - PLOT_X0);
	bool thin = n > 2 * cols;
	size_t i = 0;

	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
	        "stroke-opacity=\"%.2f\" stroke-linejoin=\"round\" stroke-linecap=\"round\" "
	        "points=\"", colour, width, opacity);

	while (i < n) {
		size_t lo = i, hi = i, k = i;
		double col = floor_d(map_x(ax, pts[i].iter));

		if (!thin) {
			fprintf(out, "%s%.1f,%.1f", i ? " " : "", map_x(ax, pts[i].iter) + dx,
			        map_y(ay, pts[i].ms) + dy);
			i++;
			continue;
		}
		while (k < n && floor_d(map_x(ax, pts[k].iter)) == col) {
			if (pts[k].ms < pts[lo].ms)
				lo = k;
			if (pts[k].ms > pts[hi].ms)
				hi = k;
			k++;
		}
		if (lo > hi) {
			size_t t = lo;

			lo = hi;
			hi = t;
		}
		fprintf(out, "%s%.1f,%.1f", i ? " " : "", map_x(ax, pts[lo].iter) + dx,
		        map_y(ay, pts[lo].ms) + dy);
		if (hi != lo)
			fprintf(out, " %.1f,%.1f", map_x(ax, pts[hi].iter) + dx,
			        map_y(ay, pts[hi].ms) + dy);
		i = k;
	}
	fputs("\"/>\n", out);
}

/* The marker shapes, once, for <use>. */
static void
put_marker_defs(FILE *out)
{
	fputs("<defs>\n", out);
	for (size_t i = 0; i < NMARKERS; i++)
		fprintf(out, "<path id=\"mk%zu\" d=\"%s\"/>\n", i, marker_path[i]);
	fputs("</defs>\n", out);
}

/* One marker of shape MARKER at X, Y, in the style of the group around it. */
static void
put_marker(FILE *out, int marker, double x, double y)
{
	fprintf(out, "<use xlink:href=\"#mk%d\" x=\"%.1f\" y=\"%.1f\"/>\n", marker, x, y);
}

/* A series' markers: on every point, or every k-th beyond MARKERS_MAX. */
static void
put_markers(FILE *out, const struct axis *ax, const struct axis *ay, const struct point *pts,
            size_t n, int marker, const char *colour, double dx, double dy)
{
	size_t every = (n + MARKERS_MAX - 1) / MARKERS_MAX;

	fprintf(out, "<g class=\"markers\" fill=\"#ffffff\" stroke=\"%s\" stroke-width=\"1.3\">\n",
	        colour);
	for (size_t i = 0; i < n; i += every ? every : 1)
		put_marker(out, marker, map_x(ax, pts[i].iter) + dx, map_y(ay, pts[i].ms) + dy);
	fputs("</g>\n", out);
}

struct series {
	const char *name;
	const struct point *pts;
	size_t n;
	double median;
	bool flagged, slowest;
	const char *colour;
	double width, opacity;
	bool legend;
	int marker;                 /* its shape (marker_path), -1: none */
	double dx, dy;              /* drawn this far off (px), see DODGE_STEP */
};

/* One series: its line and its markers, with its name as the group's title. */
static void
put_series(FILE *out, const struct axis *ax, const struct axis *ay, const struct series *s)
{
	fputs("<g class=\"series\"><title>", out);
	xml_put(out, s->name);
	fputs("</title>\n", out);
	put_polyline(out, ax, ay, s->pts, s->n, s->colour, s->width, s->opacity, s->dx, s->dy);
	if (s->marker >= 0)
		put_markers(out, ax, ay, s->pts, s->n, s->marker, s->colour, s->dx, s->dy);
	else if (s->n == 1)  /* a line of one point shows nothing: a dot */
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"/>\n",
		        map_x(ax, s->pts[0].iter), map_y(ay, s->pts[0].ms), s->width + 1.5, s->colour);
	fputs("</g>\n", out);
}

/* Markers and offsets for the series with a legend entry, in turn. */
static void
assign_markers(struct series *s, size_t n)
{
	size_t m = 0, k = 0;
	double step;

	for (size_t i = 0; i < n; i++)
		m += s[i].legend;
	step = m > 1 && DODGE_STEP * (double)(m - 1) > DODGE_SPAN ? DODGE_SPAN / (double)(m - 1)
	                                                         : DODGE_STEP;
	for (size_t i = 0; i < n; i++) {
		double off = ((double)k - (double)(m - 1) / 2) * step;

		s[i].marker = -1;
		if (!s[i].legend)
			continue;
		s[i].marker = (int)(k % NMARKERS);
		s[i].dx = off;
		s[i].dy = -off;
		k++;
	}
}

/* The series to draw: per node, or min / mean / max across nodes. */
static struct series *
make_series(const struct report *r, struct point **own, size_t *count)
{
	struct series *s;
	size_t n = 0;

	*own = NULL;
	*count = 0;
	if (r->node_values) {
		s = calloc(r->nnodes + 1, sizeof(*s));
		if (!s)
			return NULL;
		for (size_t i = 0; i < r->nnodes; i++) {
			const struct rnode *nd = &r->nodes[i];
			struct series *x = &s[n];

			if (!nd->npts)
				continue;
			x->name = nd->name;
			x->pts = nd->pts;
			x->n = nd->npts;
			x->median = nd->median;
			x->flagged = nd->stragglers > 0;
			x->slowest = (int)i == r->slowest;
			x->width = x->flagged ? 2.5 : 1.5;
			x->opacity = 0.9;
			x->legend = true;
			n++;
		}
		/* Many nodes: the ordinary ones in grey, behind; the flagged
		 * and the slowest in colour with a legend entry. */
		for (size_t i = 0, c = 0; i < n; i++) {
			bool many = n > LEGEND_MAX;
			bool hi = s[i].flagged || s[i].slowest;

			if (many && !hi) {
				s[i].colour = "#9a9a9a";
				s[i].width = 1;
				s[i].opacity = 0.35;
				s[i].legend = false;
			} else {
				s[i].colour = palette[c++ % NPALETTE];
			}
		}
		assign_markers(s, n);
		*count = n;
		return s;
	}
	{
		/* min / mean / max of every summary */
		static const char *const names[] = { "max", "mean", "min" };
		struct point *p = calloc(3 * r->nsamples + 1, sizeof(*p));

		s = calloc(3, sizeof(*s));
		if (!p || !s) {
			free(p);
			free(s);
			return NULL;
		}
		for (int k = 0; k < 3; k++) {
			struct point *pk = p + (size_t)k * r->nsamples;
			size_t m = 0;

			for (size_t i = 0; i < r->nsamples; i++) {
				const struct sample *sm = &r->samples[i];
				double v = k == 0 ? sm->e2e_max : k == 1 ? sm->e2e_mean : sm->e2e_min;

				if (isnan(v))
					continue;
				pk[m].iter = sm->iter;
				pk[m].ms = v;
				pk[m].w = 1;
				m++;
			}
			if (m == 0)
				continue;
			qsort(pk, m, sizeof(*pk), report_cmp_point);
			s[n].name = names[k];
			s[n].pts = pk;
			s[n].n = m;
			s[n].median = NAN;
			s[n].colour = palette[k == 0 ? 9 : k == 1 ? 0 : 2];
			s[n].width = k == 1 ? 2 : 1.5;
			s[n].opacity = 0.9;
			s[n].legend = true;
			n++;
		}
		assign_markers(s, n);
		*own = p;
		*count = n;
		return s;
	}
}

static void
put_text(FILE *out, double x, double y, const char *attrs, const char *text)
{
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
	xml_put(out, text);
	fputs("</text>\n", out);
}

/* The extent of the data: every series' points and the alerts' iterations. */
static void
data_range(const struct report *r, const struct series *s, size_t ns, struct axis *ax,
           struct axis *ay)
{
	double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
	const cJSON *a;

	for (size_t i = 0; i < ns; i++) {
		for (size_t j = 0; j < s[i].n; j++) {
			const struct point *p = &s[i].pts[j];

			xlo = p->iter < xlo ? p->iter : xlo;
			xhi = p->iter > xhi ? p->iter : xhi;
			ylo = p->ms < ylo ? p->ms : ylo;
			yhi = p->ms > yhi ? p->ms : yhi;
		}
	}
	cJSON_ArrayForEach(a, r->alerts) {
		double it = jnum(a, "iter");

		if (!isnan(it)) {
			xlo = it < xlo ? it : xlo;
			xhi = it > xhi ? it : xhi;
		}
	}
	if (xlo > xhi)
		xlo = xhi = 0;
	if (ylo > yhi)
		ylo = yhi = 0;
	/* room for the markers at the extremes, off the frame */
	ylo -= (yhi - ylo) * 0.03;
	yhi += (yhi - ylo) * 0.03;
	axis_fit(ax, xlo, xhi, 8, true);
	axis_fit(ay, ylo, yhi, 6, false);
}

/* The document's height: the plot, and the timeline below it when the log has attempts. */
static int
svg_height(const struct report *r)
{
	return r->natts > 0 ? SVG_H + TL_H : SVG_H;
}

/* The document's start, the background, the title and the subtitle. */
static void
put_header(FILE *out, const struct report *r)
{
	size_t nalerts = (size_t)cJSON_GetArraySize(r->alerts);
	const char *base = strrchr(r->path, '/');
	char title[512];

	base = base ? base + 1 : r->path;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" "
	        "xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
	        "font-size=\"12\">\n", SVG_W, svg_height(r), SVG_W, svg_height(r));
	fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", SVG_W, svg_height(r));
	put_marker_defs(out);
	put_text(out, PLOT_X0, 28, "font-size=\"17\" font-weight=\"bold\" fill=\"#222222\"",
	         r->node_values ? "End-to-end time per node over iterations" :
	         "End-to-end time across nodes over iterations (min, mean, max)");
	if (r->ended && !isnan(r->exit_code))
		snprintf(title, sizeof(title), "%s: job %s, exit status %.0f; %zu node%s; %zu alert%s",
		         base, r->state, r->exit_code, r->nnodes, util_plural(r->nnodes),
		         nalerts, util_plural(nalerts));
	else
		snprintf(title, sizeof(title), "%s: job %s; %zu node%s; %zu alert%s", base,
		         r->ended ? r->state : "without an end", r->nnodes, util_plural(r->nnodes),
		         nalerts, util_plural(nalerts));
	put_text(out, PLOT_X0, 48, "font-size=\"12\" fill=\"#555555\"", title);
}

/* The widest point of any node's series (iterations), 1 without one. */
static double
widest_point(const struct report *r)
{
	double w = 1;

	for (size_t i = 0; r->series && i < r->nnodes; i++)
		for (size_t k = 0; k < r->nodes[i].npts; k++)
			w = r->nodes[i].pts[k].w > w ? r->nodes[i].pts[k].w : w;
	return w;
}

/* Under the plot: what a point is, and why the series are a little apart. */
static void
put_note(FILE *out, const struct report *r, const struct series *s, size_t ns)
{
	double w = widest_point(r);
	bool dodged = false;
	char what[64], buf[200];

	for (size_t i = 0; i < ns; i++)
		dodged = dodged || s[i].dx != 0;
	if (w > 1)
		snprintf(what, sizeof(what), "the mean of up to %.0f iterations", w);
	else
		snprintf(what, sizeof(what), "%s", r->series ? "one iteration" :
		         r->node_values ? "one timing summary" : "one timing summary across nodes");
	snprintf(buf, sizeof(buf), "each point: %s%s", what,
	         dodged ? "; nodes drawn a few px apart, so that equal values stay visible" : "");
	put_text(out, PLOT_X0, SVG_H - 14, "class=\"note\" font-size=\"11\" fill=\"#666666\"", buf);
}

/*
 * The job's median e2e time, the one the summary prints (struct report's
 * e2e_median, formatted by report_fmt_ms()), as a dashed line across.
 */
static void
put_median(FILE *out, const struct report *r, const struct axis *ay)
{
	char ms[32], buf[64];
	double y;

	if (isnan(r->e2e_median))
		return;
	y = map_y(ay, r->e2e_median);
	fprintf(out, "<line class=\"median\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
	        "stroke=\"%s\" stroke-width=\"1\" stroke-dasharray=\"2 3\"/>\n", PLOT_X0, y,
	        PLOT_X1, y, MEDIAN_COLOUR);
	snprintf(buf, sizeof(buf), "median %s", report_fmt_ms(ms, sizeof(ms), r->e2e_median));
	fprintf(out, "<text class=\"median-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
	        "fill=\"%s\" text-anchor=\"end\" stroke=\"#ffffff\" stroke-width=\"3\" "
	        "paint-order=\"stroke\">", PLOT_X1 - 4, y - 4, MEDIAN_COLOUR);
	xml_put(out, buf);
	fputs("</text>\n", out);
}

/* Grid, ticks with their labels, the frame and the axis titles. */
static void
put_axes(FILE *out, const struct axis *ax, const struct axis *ay)
{
	char buf[64];

	fputs("<g class=\"grid\" stroke=\"#e3e3e3\" stroke-width=\"1\">\n", out);
	for (int i = 0; i <= ay->ticks; i++) {
		double y = map_y(ay, ay->lo + i * ay->step);

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", PLOT_X0, y,
		        PLOT_X1, y);
	}
	for (int i = 0; i <= ax->ticks; i++) {
		double x = map_x(ax, ax->lo + i * ax->step);

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, PLOT_Y0,
		        x, PLOT_Y1);
	}
	fputs("</g>\n<g class=\"ticks\" fill=\"#333333\">\n", out);
	for (int i = 0; i <= ay->ticks; i++) {
		double v = ay->lo + i * ay->step;

		snprintf(buf, sizeof(buf), "%.*f", ay->decimals, fabs(v) < ay->step / 2 ? 0 : v);
		put_text(out, PLOT_X0 - 8, map_y(ay, v) + 4, "text-anchor=\"end\"", buf);
	}
	for (int i = 0; i <= ax->ticks; i++) {
		double v = ax->lo + i * ax->step;

		snprintf(buf, sizeof(buf), "%.*f", ax->decimals, fabs(v) < ax->step / 2 ? 0 : v);
		put_text(out, map_x(ax, v), PLOT_Y1 + 18, "text-anchor=\"middle\"", buf);
	}
	fputs("</g>\n", out);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
	        "stroke=\"#555555\" stroke-width=\"1\"/>\n", PLOT_X0, PLOT_Y0, PLOT_X1 - PLOT_X0,
	        PLOT_Y1 - PLOT_Y0);
	put_text(out, (PLOT_X0 + PLOT_X1) / 2, PLOT_Y1 + 42,
	         "text-anchor=\"middle\" font-size=\"13\" fill=\"#222222\"", "iteration");
	fprintf(out, "<text x=\"0\" y=\"0\" transform=\"translate(24 %.1f) rotate(-90)\" "
	        "text-anchor=\"middle\" font-size=\"13\" fill=\"#222222\">e2e time (ms)</text>\n",
	        (PLOT_Y0 + PLOT_Y1) / 2);
}

/* A dashed line per alert, labels staggered over three rows. */
static void
put_alerts(FILE *out, const struct report *r, const struct axis *ax)
{
	size_t nalerts = (size_t)cJSON_GetArraySize(r->alerts), k = 0;
	const cJSON *a;
	char buf[128];

	cJSON_ArrayForEach(a, r->alerts) {
		double it = jnum(a, "iter"), x;
		bool right;

		if (isnan(it))
			continue;
		x = map_x(ax, it);
		right = x > PLOT_X1 - 140;
		fprintf(out, "<line class=\"alert\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		        "stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"5 4\"><title>", x,
		        PLOT_Y0, x, PLOT_Y1, ALERT_COLOUR);
		xml_put(out, jstr(a, "message"));
		fputs("</title></line>\n", out);
		if (nalerts > ALERT_LABELS_MAX)
			continue;  /* a forest of labels reads as nothing: titles only */
		snprintf(buf, sizeof(buf), "%s %.40s @%.0f", jstr(a, "kind"), jstr(a, "node"), it);
		fprintf(out, "<text class=\"alert-label\" x=\"%.1f\" y=\"%.1f\" font-size=\"11\" "
		        "fill=\"%s\" text-anchor=\"%s\" stroke=\"#ffffff\" stroke-width=\"3\" "
		        "paint-order=\"stroke\">", right ? x - 4 : x + 4,
		        PLOT_Y0 + 14 + (double)(k % 3) * 14, ALERT_COLOUR, right ? "end" : "start");
		xml_put(out, buf);
		fputs("</text>\n", out);
		k++;
	}
}

/*
 * A legend entry: a short line in the series' style (with its marker,
 * MARKER >= 0), then its label.
 */
static void
put_key(FILE *out, double y, const char *colour, double width, const char *dash, int marker,
        const char *attrs, const char *label)
{
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
	        "stroke-width=\"%.1f\"%s%s%s/>\n", PLOT_X1 + 20, y - 4, PLOT_X1 + 44, y - 4, colour,
	        width, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
	if (marker >= 0) {
		fprintf(out, "<g fill=\"#ffffff\" stroke=\"%s\" stroke-width=\"1.3\">\n", colour);
		put_marker(out, marker, PLOT_X1 + 32, y - 4);
		fputs("</g>\n", out);
	}
	put_text(out, PLOT_X1 + 50, y, attrs, label);
}

/* The legend, right of the plot: the series, the median, the alerts. */
static void
put_legend(FILE *out, const struct report *r, const struct series *s, size_t ns)
{
	size_t nalerts = (size_t)cJSON_GetArraySize(r->alerts), grey = 0;
	double ly = PLOT_Y0 + 4;
	char buf[128], ms[32];

	put_text(out, PLOT_X1 + 20, ly, "font-weight=\"bold\" fill=\"#222222\"",
	         r->node_values ? "node (its median e2e)" : "across nodes");
	ly += 20;
	for (size_t i = 0; i < ns; i++)
		grey += !s[i].legend;
	for (size_t i = 0; i < ns; i++) {
		if (!s[i].legend)
			continue;
		if (ly > PLOT_Y1 - 60) {
			put_text(out, PLOT_X1 + 20, ly, "fill=\"#555555\"", "...");
			ly += 18;
			break;
		}
		if (isnan(s[i].median))
			snprintf(buf, sizeof(buf), "%.32s", s[i].name);
		else
			snprintf(buf, sizeof(buf), "%.32s (%s)", s[i].name,
			         report_fmt_ms(ms, sizeof(ms), s[i].median));
		put_key(out, ly, s[i].colour, s[i].width + 1, NULL, s[i].marker, s[i].flagged ?
		        "class=\"key\" font-weight=\"bold\" fill=\"#222222\"" :
		        "class=\"key\" fill=\"#222222\"", buf);
		if (s[i].flagged || s[i].slowest) {
			ly += 15;
			put_text(out, PLOT_X1 + 50, ly,
			         s[i].flagged ? "class=\"slow\" font-size=\"11\" fill=\"" ALERT_COLOUR "\""
			                      : "font-size=\"11\" fill=\"#555555\"",
			         s[i].flagged ? "\u26a0 slow: straggler alert" : "slowest, no alert");
		}
		ly += 20;
	}
	if (grey > 0) {
		snprintf(buf, sizeof(buf), "%zu other nodes", grey);
		put_key(out, ly, "#9a9a9a", 2, NULL, -1, "fill=\"#555555\"", buf);
		ly += 20;
	}
	if (!isnan(r->e2e_median)) {
		snprintf(buf, sizeof(buf), "median, all: %s", report_fmt_ms(ms, sizeof(ms), r->e2e_median));
		put_key(out, ly, MEDIAN_COLOUR, 1, "2 3", -1, "class=\"median-key\" fill=\"#222222\"",
		        buf);
		ly += 20;
	}
	if (nalerts > 0) {
		snprintf(buf, sizeof(buf), "alert (%zu)", nalerts);
		put_key(out, ly, ALERT_COLOUR, 1.5, "5 4", -1, "fill=\"#222222\"", buf);
	}
}

/* ---- the timeline of the attempts ------------------------------------ */

/* A colour per cause (report_cost.h), readable side by side. */
static const char *const cause_colour[COST_N] = {
	[COST_LAUNCH] = "#8c8c8c", [COST_PRECHECK] = "#9c755f", [COST_STAGING] = "#b07aa1", [COST_START] = "#edc948",
	[COST_PRODUCTIVE] = "#59a14f", [COST_STRAGGLER] = "#f28e2b",
	[COST_DETECTION] = "#e15759", [COST_CHECKPOINT] = "#4e79a7", [COST_STOP] = "#76b7b2",
	[COST_REDONE] = "#ff9da7", [COST_OTHER] = "#bab0ac", [COST_GAP] = "#e6e6e6",
};

/* The timeline's unit: seconds, minutes or hours, as the chain is long. */
static double
tl_unit(double elapsed, const char **name)
{
	*name = elapsed > 7200 ? "h" : elapsed > 600 ? "min" : "s";
	return elapsed > 7200 ? 3600 : elapsed > 600 ? 60 : 1;
}

/* One stretch of an attempt's bar, [FROM, TO) s since T0, with its tooltip. */
static void
tl_rect(FILE *out, const struct axis *ax, double unit, double t0, double from, double to,
        double y, double h, int cause, size_t attempt)
{
	double x0 = map_x(ax, (from - t0) / unit), x1 = map_x(ax, (to - t0) / unit);
	char tip[96];

	if (!(x1 > x0))
		return;
	fprintf(out, "<rect class=\"seg %s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
	        "height=\"%.1f\" fill=\"%s\"><title>", cost_names[cause], x0, y, x1 - x0, h,
	        cause_colour[cause]);
	snprintf(tip, sizeof(tip), "attempt %zu: %s %.3f s", attempt, cost_names[cause], to - from);
	xml_put(out, tip);
	fputs("</title></rect>\n", out);
}

/* Attempt K's bar: its stretches by cause, the iterations in their shares. */
static void
tl_bar(FILE *out, const struct report *r, const struct axis *ax, double unit, size_t k,
       double y, double h)
{
	const struct cost_attempt *a = &r->atts[k];
	double t0 = r->chain_sum.t0;
	static const int iter_parts[] = { COST_REDONE, COST_PRODUCTIVE, COST_STRAGGLER, COST_OTHER };

	if (k > 0)  /* the requeue: the gap before the attempt, on its row */
		tl_rect(out, ax, unit, t0, r->atts[k - 1].m.end, a->nsegs ? a->segs[0].from : a->m.start,
		        y, h, COST_GAP, k + 1);
	for (size_t i = 0; i < a->nsegs; i++) {
		const struct cost_seg *s = &a->segs[i];
		double iter_s = 0, at = s->from;

		if (s->cause != COST_ITER) {
			tl_rect(out, ax, unit, t0, s->from, s->to, y, h, s->cause, k + 1);
			continue;
		}
		for (size_t p = 0; p < 4; p++)
			iter_s += a->secs[iter_parts[p]];
		for (size_t p = 0; p < 4 && iter_s > 0; p++) {
			double len = (s->to - s->from) * a->secs[iter_parts[p]] / iter_s;

			tl_rect(out, ax, unit, t0, at, at + len, y, h, iter_parts[p], k + 1);
			at += len;
		}
	}
}

/* The faults (a red triangle over the bar) and the requeues (a dashed line). */
static void
tl_marks(FILE *out, const struct report *r, const struct axis *ax, double unit, size_t k,
         double y)
{
	const struct cost_attempt *a = &r->atts[k];
	double t0 = r->chain_sum.t0;

	if (!isnan(a->m.fault) && a->m.fault >= a->m.start && a->m.fault <= a->m.end) {
		double x = map_x(ax, (a->m.fault - t0) / unit);

		fprintf(out, "<path class=\"fault\" d=\"M%.1f %.1f l-5 -8 h10 z\" fill=\"%s\">"
		        "<title>attempt %zu: fault</title></path>\n", x, y - 1, ALERT_COLOUR, k + 1);
	}
	if (k > 0) {
		double x = map_x(ax, ((a->nsegs ? a->segs[0].from : a->m.start) - t0) / unit);

		fprintf(out, "<line class=\"requeue\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
		        "y2=\"%.1f\" stroke=\"#222222\" stroke-width=\"1.2\" "
		        "stroke-dasharray=\"3 2\"><title>attempt %zu starts</title></line>\n",
		        x, TL_Y0 - 6, x, TL_Y1, k + 1);
	}
}

/* The time axis under the bars, and the title above them. */
static void
tl_axis(FILE *out, const struct report *r, const struct axis *ax, const char *unit)
{
	char buf[160];

	if (isnan(r->chain_sum.ettr))
		snprintf(buf, sizeof(buf), "Where the time went: %zu attempt%s", r->natts,
		         util_plural((long long)r->natts));
	else
		snprintf(buf, sizeof(buf), "Where the time went: %zu attempt%s, ETTR %.1f %% "
		         "(productive %.1f s of %.1f s)", r->natts, util_plural((long long)r->natts),
		         r->chain_sum.ettr * 100, r->chain_sum.secs[COST_PRODUCTIVE],
		         r->chain_sum.elapsed);
	put_text(out, PLOT_X0, SVG_H + 16, "class=\"tl-title\" font-size=\"14\" "
	         "font-weight=\"bold\" fill=\"#222222\"", buf);
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555555\"/>\n",
	        PLOT_X0, TL_Y1, PLOT_X1, TL_Y1);
	fputs("<g class=\"tl-ticks\" fill=\"#333333\">\n", out);
	for (int i = 0; i <= ax->ticks; i++) {
		double v = ax->lo + i * ax->step, x = map_x(ax, v);

		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		        "stroke=\"#555555\"/>\n", x, TL_Y1, x, TL_Y1 + 4);
		snprintf(buf, sizeof(buf), "%.*f", ax->decimals, fabs(v) < ax->step / 2 ? 0 : v);
		put_text(out, x, TL_Y1 + 17, "text-anchor=\"middle\"", buf);
	}
	fputs("</g>\n", out);
	snprintf(buf, sizeof(buf), "time since the first attempt started (%s)", unit);
	put_text(out, (PLOT_X0 + PLOT_X1) / 2, TL_Y1 + 36,
	         "class=\"tl-axis\" text-anchor=\"middle\" font-size=\"13\" fill=\"#222222\"", buf);
}

/* The timeline's legend, right of it: the causes that took time, the marks. */
static void
tl_legend(FILE *out, const struct report *r)
{
	double x = PLOT_X1 + 20, y = TL_Y0 - 10;
	int shown = 0;
	char buf[64];

	for (int c = 0; c < COST_N; c++) {
		if (!(r->chain_sum.secs[c] > 0))
			continue;
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"10\" height=\"10\" fill=\"%s\"/>\n",
		        x + (shown % 2) * 110, y - 9 + (shown / 2) * 15, cause_colour[c]);
		snprintf(buf, sizeof(buf), "%s", cost_names[c]);
		put_text(out, x + 14 + (shown % 2) * 110, y + (shown / 2) * 15,
		         "class=\"tl-key\" font-size=\"11\" fill=\"#222222\"", buf);
		shown++;
	}
	y += ((shown + 1) / 2) * 15 + 4;
	fprintf(out, "<path d=\"M%.1f %.1f l-5 -8 h10 z\" fill=\"%s\"/>\n", x + 5, y, ALERT_COLOUR);
	put_text(out, x + 14, y, "class=\"tl-key\" font-size=\"11\" fill=\"#222222\"", "fault");
	fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#222222\" "
	        "stroke-dasharray=\"3 2\"/>\n", x + 115, y - 10, x + 115, y + 2);
	put_text(out, x + 124, y, "class=\"tl-key\" font-size=\"11\" fill=\"#222222\"",
	         "requeue");
}

/* The chain of attempts as a timeline: a bar per attempt, coloured by cause. */
static void
put_timeline(FILE *out, const struct report *r)
{
	struct axis ax;
	const char *uname;
	double unit = tl_unit(r->chain_sum.elapsed, &uname);
	double h = (TL_Y1 - TL_Y0 - 4) / (double)r->natts;
	char label[32];

	if (r->natts == 0)
		return;
	if (h > TL_BAR_MAX)
		h = TL_BAR_MAX;
	axis_fit(&ax, 0, r->chain_sum.elapsed / unit, 8, false);
	ax.lo = 0;  /* the chain's start at the left edge */
	tl_axis(out, r, &ax, uname);
	for (size_t k = 0; k < r->natts; k++) {
		double y = TL_Y0 + (double)k * (TL_Y1 - TL_Y0 - 4) / (double)r->natts;

		snprintf(label, sizeof(label), "attempt %zu", k + 1);
		if (h >= 9)
			put_text(out, PLOT_X0 - 8, y + h / 2 + 4,
			         "class=\"tl-label\" text-anchor=\"end\" fill=\"#222222\"", label);
		tl_bar(out, r, &ax, unit, k, y, h);
		tl_marks(out, r, &ax, unit, k, y);
	}
	tl_legend(out, r);
}

int
report_plot(const struct report *r, FILE *out)
{
	struct point *own = NULL;
	size_t ns = 0;
	struct series *s = make_series(r, &own, &ns);
	struct axis ax, ay;

	if (!s)
		return -ENOMEM;
	data_range(r, s, ns, &ax, &ay);
	put_header(out, r);
	put_axes(out, &ax, &ay);
	if (ns == 0)
		put_text(out, (PLOT_X0 + PLOT_X1) / 2, (PLOT_Y0 + PLOT_Y1) / 2,
		         "text-anchor=\"middle\" font-size=\"15\" fill=\"#888888\"",
		         "no timings in the log");
	put_median(out, r, &ay);
	/* series: ordinary ones first, so the flagged ones are drawn on top */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < ns; i++)
			if ((s[i].flagged || s[i].slowest) == (pass == 1))
				put_series(out, &ax, &ay, &s[i]);
	put_alerts(out, r, &ax);
	put_legend(out, r, s, ns);
	if (ns > 0)
		put_note(out, r, s, ns);
	put_timeline(out, r);
	fputs("</svg>\n", out);
	free(own);
	free(s);
	return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}
