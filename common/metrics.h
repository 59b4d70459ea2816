/* SPDX-License-Identifier: MIT */
/*
 * Prometheus metrics: the text format (version 0.0.4) and a small HTTP
 * server that answers GET /metrics from a board of counters.  One thread
 * (the agent's loop) copies its counters onto the board whenever it likes;
 * the server's threads read the board under its lock when scraped, so
 * the loop never waits for a scrape and a scrape never sees half a copy.
 * `causeway agent --metrics` and `causeway run --metrics` use the server;
 * `causeway serve` shares the text format (and, with this server, the
 * HTTP layer: common/httpd.h).
 *
 *	static const struct cw_metric_def defs[] = {
 *		{"causeway_agent_records_total", CW_METRIC_COUNTER,
 *		 "Connection records handed out."},
 *	};
 *	struct cw_metrics_board *b = cw_metrics_board_new(defs, 1, "host", id);
 *	struct cw_metrics_server *s = cw_metrics_server_start("9101", b);
 *	uint64_t v[1] = {records};
 *	cw_metrics_board_set(b, v);		// any thread, any time
 *	...
 *	cw_metrics_server_stop(s);
 *	cw_metrics_board_free(b);
 *
 * Functions returning int give 0, or -1 after a message.
 */
#ifndef CW_METRICS_H
#define CW_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#include "common/httpd.h" /* cw_listen_parse */

enum cw_metric_type {
	CW_METRIC_COUNTER,
	CW_METRIC_GAUGE,
	CW_METRIC_HISTOGRAM,
};

/* One metric family of the board: name, type and help are static text. */
struct cw_metric_def {
	const char *name;
	enum cw_metric_type type;
	const char *help;
};

/* "# HELP name help" and "# TYPE name type" lines. */
void cw_prom_header(FILE *fp, const char *name, enum cw_metric_type type,
		    const char *help);
/* name="value" with \, " and newlines escaped, and UTF-8 only (the
 * format wants it: a byte that is not becomes U+FFFD). */
void cw_prom_label(FILE *fp, const char *name, const char *value);
/*
 * One series of a histogram family from a cw_hist (common/hist.h) of
 * values in ns, written in seconds: name_bucket{labels,le="..."} for each
 * of the nle bounds (seconds, ascending) and +Inf, then name_sum and
 * name_count.  labels is the series' label text without braces ("" for
 * none; written with cw_prom_label).  A bin counts under a bound when its
 * upper end is at or below it, so counts are exact to the histogram's
 * resolution (1/32 of a power of two: a value within 3% under a bound
 * may count above it); the sum is the bins' middles summed (within 1.6%).
 */
struct cw_hist;
void cw_prom_hist(FILE *fp, const char *name, const char *labels,
		  const struct cw_hist *h, const double *le, size_t nle);
/* The bounds causeway's latency histograms are written with: 100 us to
 * 10 s, 1-2.5-5 per decade. */
extern const double cw_prom_latency_le[];
extern const size_t cw_prom_latency_nle;

struct cw_metrics_board;

/*
 * A board for these definitions (kept by pointer: static), every sample
 * carrying the one label label_name=label_value (copied; NULL: none).
 * Values start at 0 and are not served until the first set.  NULL after a
 * message when out of memory.
 */
struct cw_metrics_board *cw_metrics_board_new(const struct cw_metric_def *defs,
					      size_t n, const char *label_name,
					      const char *label_value);
/* Copy values[0..n) (n as given to _new) onto the board. */
void cw_metrics_board_set(struct cw_metrics_board *b, const uint64_t *values);
/* The board as Prometheus text: 0, or -1 (nothing set yet, or a write error).
 */
int cw_metrics_board_write(struct cw_metrics_board *b, FILE *fp);
void cw_metrics_board_free(struct cw_metrics_board *b);

struct cw_metrics_server;

/*
 * Serve the board at http://listen/metrics (common/httpd.h's server: GET
 * and HEAD only, other paths 404, 503 before the first set; 32
 * connections, 4 from one address, 10 s for a request's header), and say
 * where ("metrics at http://127.0.0.1:9101/metrics").  NULL after a
 * message when the address is bad or cannot be bound.
 */
struct cw_metrics_server *cw_metrics_server_start(const char *listen,
						  struct cw_metrics_board *b);
/* The port bound (useful with port 0). */
unsigned cw_metrics_server_port(const struct cw_metrics_server *s);
void cw_metrics_server_stop(struct cw_metrics_server *s);

#endif
