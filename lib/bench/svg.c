/* svg.c: line plots on log-log axes as a self-contained SVG (no gnuplot),
 * for tfm-bench --attn -F svg: time and KV memory against context length,
 * one line per attention variant.  Axis ticks at powers of ten (of two on the
 * x axis, which holds context lengths). */
#include "tfm.h"
#include "bench/bench.h"

#include <math.h>

#define PW 460    /* panel width */
#define PH 340    /* panel height */
#define ML 80     /* margins: left, right, top, bottom */
#define MR 20
#define MT 40
#define MB 90
#define TH 30    /* the title line above the panels */

static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
				     "#8c564b", "#e377c2", "#7f7f7f"};

static void range(const struct tfm_bench_panel *p, int axis, double *lo, double *hi)
{
	*lo = INFINITY, *hi = -INFINITY;
	for (int i = 0; i < p->n_series; i++)
		for (int j = 0; j < p->s[i].n; j++) {
			double v = axis ? p->s[i].y[j] : p->s[i].x[j];
			if (v > 0 && p->s[i].y[j] > 0) {
				if (v < *lo)
					*lo = v;
				if (v > *hi)
					*hi = v;
			}
		}
	if (!(*lo <= *hi))
		*lo = 1, *hi = 10;
	*lo = log10(*lo), *hi = log10(*hi);
	if (axis) { /* whole decades on y */
		*lo = floor(*lo), *hi = ceil(*hi);
	}
	if (*hi - *lo < 1e-9)
		*lo -= 0.5, *hi += 0.5;
}

static void text(struct tfm_out *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			tfm_out_printf(o, "&lt;");
		else if (*s == '>')
			tfm_out_printf(o, "&gt;");
		else if (*s == '&')
			tfm_out_printf(o, "&amp;");
		else
			tfm_out_write(o, s, 1);
	}
}

static void panel(struct tfm_out *o, const struct tfm_bench_panel *p, double ox)
{
	double xl, xh, yl, yh;
	range(p, 0, &xl, &xh);
	range(p, 1, &yl, &yh);
	double x0 = ox + ML, x1 = ox + PW - MR, y0 = PH - MB, y1 = MT;
#define X(v) (x0 + (log10(v) - xl) / (xh - xl) * (x1 - x0))
#define Y(v) (y0 - (log10(v) - yl) / (yh - yl) * (y0 - y1))
	tfm_out_printf(o, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-weight=\"bold\">",
		       (x0 + x1) / 2);
	text(o, p->title);
	tfm_out_printf(o, "</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		       "fill=\"none\" stroke=\"#000\"/>\n", x0, y1, x1 - x0, y0 - y1);
	for (double e = ceil(yl); e <= yh + 1e-9; e++) {
		double y = y0 - (e - yl) / (yh - yl) * (y0 - y1);
		tfm_out_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			       "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">"
			       "1e%d</text>\n", x0, y, x1, y, x0 - 6, y + 4, (int)e);
	}
	for (double e = ceil(xl / log10(2)); e * log10(2) <= xh + 1e-9; e++) {
		double v = pow(2, e), x = X(v);
		if (xh - xl > 3 && (int)e % 2) /* every other power of two when crowded */
			continue;
		tfm_out_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			       "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
			       "%.0f</text>\n", x, y0, x, y1, x, y0 + 16, v);
	}
	tfm_out_printf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x0 + x1) / 2,
		       y0 + 34);
	text(o, p->xlabel);
	tfm_out_printf(o, "</text>\n<text transform=\"translate(%.1f,%.1f) rotate(-90)\" "
		       "text-anchor=\"middle\">", ox + 18, (y0 + y1) / 2);
	text(o, p->ylabel);
	tfm_out_printf(o, "</text>\n");
	for (int i = 0; i < p->n_series; i++) {
		const struct tfm_bench_series *s = &p->s[i];
		const char *c = colors[i % (int)(sizeof colors / sizeof colors[0])];
		tfm_out_printf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
		for (int j = 0; j < s->n; j++)
			if (s->x[j] > 0 && s->y[j] > 0)
				tfm_out_printf(o, "%.1f,%.1f ", X(s->x[j]), Y(s->y[j]));
		tfm_out_printf(o, "\"/>\n");
		for (int j = 0; j < s->n; j++)
			if (s->x[j] > 0 && s->y[j] > 0)
				tfm_out_printf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
					       X(s->x[j]), Y(s->y[j]), c);
		/* legend below the axis label, two columns */
		double lx = x0 + (i % 2) * 180, ly = y0 + 52 + (i / 2) * 16;
		tfm_out_printf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			       "stroke-width=\"2\"/>\n<text x=\"%.1f\" y=\"%.1f\">", lx, ly - 4,
			       lx + 20, ly - 4, c, lx + 26, ly);
		text(o, s->name);
		tfm_out_printf(o, "</text>\n");
	}
#undef X
#undef Y
}

int tfm_bench_svg(struct tfm_out *o, const char *title, const struct tfm_bench_panel *p,
		  int n_panels)
{
	/* the title (the shapes measured) as the document's <title> and as a
	 * line of text above the panels */
	tfm_out_printf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		       "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		       "<title>", PW * n_panels, PH + TH, PW * n_panels, PH + TH);
	text(o, title);
	tfm_out_printf(o, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
		       "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" "
		       "font-weight=\"bold\">", PW * n_panels / 2);
	text(o, title);
	tfm_out_printf(o, "</text>\n<g transform=\"translate(0,%d)\">\n", TH);
	for (int i = 0; i < n_panels; i++)
		panel(o, &p[i], (double)i * PW);
	return tfm_out_printf(o, "</g>\n</svg>\n");
}
