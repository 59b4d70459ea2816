// SPDX-License-Identifier: MIT
/* Runs as CSV, JSON and a hand-drawn SVG. */
#include <inttypes.h>
#include <string.h>

#include "samples/samples.h"
#include "common/jsonw.h"
#include "common/util.h"

int cw_sample_run_csv(FILE *fp, const struct cw_sample_run *run)
{
	uint32_t i;
	int f;

	fprintf(fp, "bin,offset_ns");
	for (f = 0; f < CW_SF_MAX; f++)
		fprintf(fp, ",%s", cw_sample_field_names[f]);
	fprintf(fp, ",flows_saturated\n");
	for (i = 0; i < run->nbins; i++) {
		fprintf(fp, "%u,%" PRIu64, i, (uint64_t)i * run->interval_ns);
		for (f = 0; f < CW_SF_MAX; f++)
			fprintf(fp, ",%" PRIu64, run->bins[i].v[f]);
		fprintf(fp, ",%u\n", run->bins[i].saturated);
	}
	return ferror(fp) ? -1 : 0;
}

int cw_sample_run_json(FILE *fp, const struct cw_sample_run *run)
{
	struct cw_jsonw w;

	cw_jsonw_init(&w, fp);
	cw_jsonw_obj_open(&w, NULL);
	cw_jsonw_u64(&w, "version", CW_SAMPLE_FILE_VERSION);
	cw_jsonw_str(&w, "host", run->host);
	cw_sample_run_json_fields(&w, run);
	cw_jsonw_obj_close(&w);
	cw_jsonw_end_line(&w);
	return ferror(fp) ? -1 : 0;
}

/* ---- SVG --------------------------------------------------------------- */

#define SVG_W	  960
#define PANEL_H	  150
#define PANEL_GAP 40
#define MARGIN_L  80
#define MARGIN_R  20
#define TOP	  40

struct series {
	const char *label;
	const char *colour;
	enum cw_sample_field f; /* plus the cross-region twin f + 1 */
	double scale;		/* value * scale is plotted */
};

static double bin_value(const struct cw_sample_run *run, uint32_t i,
			const struct series *s)
{
	return (double)(run->bins[i].v[s->f] + run->bins[i].v[s->f + 1]) *
	       s->scale;
}

static void panel(FILE *fp, const struct cw_sample_run *run, int row,
		  const char *title, const struct series *s, int ns)
{
	double top = TOP + row * (PANEL_H + PANEL_GAP), max = 0, x, y;
	double plot_w = SVG_W - MARGIN_L - MARGIN_R;
	uint32_t i, n = run->nbins ?: 1;
	char buf[32];
	int k;

	for (k = 0; k < ns; k++)
		for (i = 0; i < run->nbins; i++)
			if (bin_value(run, i, &s[k]) > max)
				max = bin_value(run, i, &s[k]);
	if (max <= 0)
		max = 1;
	fprintf(fp,
		"<text x=\"%d\" y=\"%.0f\" class=\"t\">%s</text>\n"
		"<rect x=\"%d\" y=\"%.0f\" width=\"%.0f\" height=\"%d\" "
		"class=\"frame\"/>\n"
		"<text x=\"%d\" y=\"%.0f\" class=\"a\" "
		"text-anchor=\"end\">%.4g</text>\n"
		"<text x=\"%d\" y=\"%.0f\" class=\"a\" "
		"text-anchor=\"end\">0</text>\n",
		MARGIN_L, top - 8, title, MARGIN_L, top, plot_w, PANEL_H,
		MARGIN_L - 6, top + 10, max, MARGIN_L - 6, top + PANEL_H);
	for (k = 0; k < ns; k++) {
		fprintf(fp, "<polyline class=\"l\" stroke=\"%s\" points=\"",
			s[k].colour);
		for (i = 0; i < run->nbins; i++) {
			x = MARGIN_L + plot_w * (i + 0.5) / n;
			y = top + PANEL_H -
			    PANEL_H * bin_value(run, i, &s[k]) / max;
			fprintf(fp, "%.1f,%.1f ", x, y);
		}
		fprintf(fp,
			"\"/>\n<text x=\"%.0f\" y=\"%.0f\" class=\"a\" "
			"fill=\"%s\">%s</text>\n",
			MARGIN_L + plot_w - 160.0 + 80 * k, top - 8,
			s[k].colour, s[k].label);
	}
	fprintf(fp,
		"<text x=\"%d\" y=\"%.0f\" class=\"a\">0</text>\n"
		"<text x=\"%.0f\" y=\"%.0f\" class=\"a\" "
		"text-anchor=\"end\">%s</text>\n",
		MARGIN_L, top + PANEL_H + 14, MARGIN_L + plot_w,
		top + PANEL_H + 14,
		cw_fmt_duration(run->interval_ns * run->nbins, buf,
				sizeof(buf)));
}

int cw_sample_run_svg(FILE *fp, const struct cw_sample_run *run)
{
	double mbps = 8.0 * 1000.0 / (double)run->interval_ns; /* B -> Mb/s */
	const struct series bytes[] = {
		{"in", "#1f77b4", CW_SF_BYTES_IN, mbps},
		{"out", "#ff7f0e", CW_SF_BYTES_OUT, mbps},
	};
	const struct series ecn[] = {
		{"in", "#d62728", CW_SF_ECN_IN, 1},
	};
	const struct series retrans[] = {
		{"in", "#1f77b4", CW_SF_RETRANS_IN, 1},
		{"out", "#ff7f0e", CW_SF_RETRANS_OUT, 1},
	};
	const struct series flows[] = {
		{"in", "#1f77b4", CW_SF_FLOWS_IN, 1},
		{"out", "#ff7f0e", CW_SF_FLOWS_OUT, 1},
	};
	int h = TOP + 4 * (PANEL_H + PANEL_GAP);
	char ibuf[32];

	fprintf(fp,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n"
		"<style>.t{font:bold 13px sans-serif}"
		".a{font:11px sans-serif}.frame{fill:none;stroke:#999}"
		".l{fill:none;stroke-width:1}</style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%d\" y=\"18\" class=\"t\">",
		SVG_W, h, SVG_W, h, MARGIN_L);
	for (const char *p = run->dev; *p; p++) /* names are plain, still */
		fputs(*p == '<'	  ? "&lt;"
		      : *p == '&' ? "&amp;"
				  : (char[]){*p, 0},
		      fp);
	fprintf(fp, " - %u bins of %s</text>\n", run->nbins,
		cw_fmt_duration(run->interval_ns, ibuf, sizeof(ibuf)));
	panel(fp, run, 0, "throughput (Mbit/s)", bytes, 2);
	panel(fp, run, 1, "ECN-CE bytes per bin", ecn, 1);
	panel(fp, run, 2, "retransmitted segments per bin", retrans, 2);
	panel(fp, run, 3, "active flows per bin", flows, 2);
	fprintf(fp, "</svg>\n");
	return ferror(fp) ? -1 : 0;
}
