// SPDX-License-Identifier: MIT
/*
 * The Prometheus board and its server (common/metrics.h): nothing is
 * served before the first set, the text is the format's with the label
 * escaped, a scrape over a real socket gets the newest values, other
 * paths and methods are refused; listen addresses parse as documented
 * (a bare port is loopback).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "common/hist.h"
#include "common/metrics.h"

static const struct cw_metric_def defs[] = {
	{"t_records_total", CW_METRIC_COUNTER, "Records."},
	{"t_waiting", CW_METRIC_GAUGE, "Waiting."},
};

static char *board_text(struct cw_metrics_board *b, int *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);

	*err = cw_metrics_board_write(b, fp);
	fclose(fp);
	return buf;
}

static void test_board(void)
{
	struct cw_metrics_board *b =
		cw_metrics_board_new(defs, 2, "host", "a\"b\\c\nd");
	uint64_t v[2] = {7, 3};
	char *t;
	int err;

	CHECK(b != NULL);
	t = board_text(b, &err);
	CHECK(err == -1 && t && !*t); /* nothing set yet: nothing served */
	free(t);
	cw_metrics_board_set(b, v);
	t = board_text(b, &err);
	CHECK(err == 0);
	CHECK(!strcmp(t, "# HELP t_records_total Records.\n"
			 "# TYPE t_records_total counter\n"
			 "t_records_total{host=\"a\\\"b\\\\c\\nd\"} 7\n"
			 "# HELP t_waiting Waiting.\n"
			 "# TYPE t_waiting gauge\n"
			 "t_waiting{host=\"a\\\"b\\\\c\\nd\"} 3\n"));
	free(t);
	cw_metrics_board_free(b);
}

static void test_listen(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *in4 = (struct sockaddr_in *)&ss;
	bool v6 = true;

	CHECK(cw_listen_parse("9101", "--metrics", &ss, &v6) == 0);
	CHECK(!v6 && in4->sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
	      ntohs(in4->sin_port) == 9101);
	CHECK(cw_listen_parse("0.0.0.0:80", "--metrics", &ss, &v6) == 0);
	CHECK(!v6 && in4->sin_addr.s_addr == 0 && ntohs(in4->sin_port) == 80);
	CHECK(cw_listen_parse("[::1]:8080", "--metrics", &ss, &v6) == 0 && v6);
	CHECK(cw_listen_parse("65536", "--metrics", &ss, &v6) == -1);
	CHECK(cw_listen_parse("localhost:80", "--metrics", &ss, &v6) == -1);
	CHECK(cw_listen_parse(":80", "--metrics", &ss, &v6) == -1);
	CHECK(cw_listen_parse("1.2.3.4:", "--metrics", &ss, &v6) == -1);
	CHECK(cw_listen_parse("", "--metrics", &ss, &v6) == -1);
}

/* GET path from 127.0.0.1:port; the whole answer, malloc'd. */
static char *http_get(unsigned port, const char *method, const char *path)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	char req[256], *buf = calloc(1, 65536);
	size_t got = 0;
	ssize_t n;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0 || !buf || connect(fd, (void *)&a, sizeof(a))) {
		if (fd >= 0)
			close(fd);
		return buf;
	}
	snprintf(req, sizeof(req),
		 "%s %s HTTP/1.0\r\nHost: x\r\nConnection: close\r\n\r\n",
		 method, path);
	if (write(fd, req, strlen(req)) == (ssize_t)strlen(req))
		while (got < 65535 &&
		       (n = read(fd, buf + got, 65535 - got)) > 0)
			got += (size_t)n;
	close(fd);
	return buf;
}

static void test_server(void)
{
	struct cw_metrics_board *b = cw_metrics_board_new(defs, 2, NULL, NULL);
	struct cw_metrics_server *s = cw_metrics_server_start("0", b);
	uint64_t v[2] = {1, 2};
	unsigned port;
	char *r;

	CHECK(s != NULL);
	if (!s)
		return;
	port = cw_metrics_server_port(s);
	CHECK(port > 0);
	r = http_get(port, "GET", "/metrics");
	CHECK(strstr(r, " 503 ") != NULL); /* not set yet */
	free(r);
	cw_metrics_board_set(b, v);
	v[0] = 41;
	cw_metrics_board_set(b, v);
	r = http_get(port, "GET", "/metrics");
	CHECK(strstr(r, " 200 ") && strstr(r, "\r\n\r\n# HELP"));
	CHECK(strstr(r, "\nt_records_total 41\n") &&
	      strstr(r, "\nt_waiting 2\n"));
	CHECK(strstr(r, "text/plain; version=0.0.4") != NULL);
	CHECK(strstr(r, "\ncauseway_http_header_timeouts_total 0\n") != NULL);
	free(r);
	r = http_get(port, "GET", "/");
	CHECK(strstr(r, " 404 ") != NULL);
	free(r);
	r = http_get(port, "POST", "/metrics");
	CHECK(strstr(r, " 405 ") != NULL);
	free(r);
	cw_metrics_server_stop(s);
	CHECK(cw_metrics_server_start("127.0.0.1:x", b) == NULL);
	cw_metrics_board_free(b);
}

/*
 * A histogram of ns as Prometheus seconds: buckets cumulative at each
 * bound (a value exactly on a bound counts under it when its bin ends
 * there: values under 32 ns have a bin each), +Inf the count, the sum
 * within the bins' resolution; a label that is not UTF-8 is replaced.
 */
static void test_hist(void)
{
	static const double le[] = {1e-8, 2e-8, 1e-3};
	struct cw_hist h = CW_HIST_INIT;
	char *buf = NULL, lab[64];
	size_t len = 0;
	FILE *fp = open_memstream(&buf, &len);
	double sum;

	CHECK(!cw_hist_add(&h, 10, 3) && !cw_hist_add(&h, 20, 1) &&
	      !cw_hist_add(&h, 500000, 2) && !cw_hist_add(&h, 3000000000, 1));
	cw_prom_hist(fp, "t_seconds", "a=\"b\"", &h, le, 3);
	cw_prom_hist(fp, "t_none_seconds", "", &h, le, 0);
	fclose(fp);
	CHECK(strstr(buf, "t_seconds_bucket{a=\"b\",le=\"1e-08\"} 3\n"));
	CHECK(strstr(buf, "t_seconds_bucket{a=\"b\",le=\"2e-08\"} 4\n"));
	CHECK(strstr(buf, "t_seconds_bucket{a=\"b\",le=\"0.001\"} 6\n"));
	CHECK(strstr(buf, "t_seconds_bucket{a=\"b\",le=\"+Inf\"} 7\n"));
	CHECK(strstr(buf, "t_seconds_count{a=\"b\"} 7\n"));
	CHECK(strstr(buf, "t_none_seconds_bucket{le=\"+Inf\"} 7\n"));
	CHECK(strstr(buf, "t_none_seconds_count{} 7\n"));
	CHECK(sscanf(strstr(buf, "t_seconds_sum{a=\"b\"} ") + 20, "%lf",
		     &sum) == 1);
	CHECK(sum > 3.001 * 0.984 && sum < 3.001 * 1.016);
	free(buf);
	cw_hist_release(&h);
	buf = NULL;
	fp = open_memstream(&buf, &len);
	snprintf(lab, sizeof(lab), "x\xff\"");
	cw_prom_label(fp, "n", lab);
	fclose(fp);
	CHECK(!strcmp(buf, "n=\"x\xef\xbf\xbd\\\"\""));
	free(buf);
}

int main(void)
{
	test_board();
	test_hist();
	test_listen();
	test_server();
	if (failures) {
		fprintf(stderr, "%d checks failed\n", failures);
		return 1;
	}
	printf("test_metrics: all checks passed\n");
	return 0;
}
