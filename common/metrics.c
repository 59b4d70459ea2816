// SPDX-License-Identifier: MIT
/*
 * Prometheus text and the /metrics server over libmicrohttpd: one polling
 * thread of MHD's answers scrapes from a copy of the board taken under its
 * lock.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/metrics.h"
#include "common/util.h"

static const char *type_name(enum cw_metric_type t)
{
	return t == CW_METRIC_GAUGE ? "gauge" : "counter";
}

void cw_prom_header(FILE *fp, const char *name, enum cw_metric_type type,
		    const char *help)
{
	fprintf(fp, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
		type_name(type));
}

void cw_prom_label(FILE *fp, const char *name, const char *v)
{
	fprintf(fp, "%s=\"", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', fp);
		if (*v == '\n')
			fputs("\\n", fp);
		else
			fputc(*v, fp);
	}
	fputc('"', fp);
}

struct cw_metrics_board {
	pthread_mutex_t lock;
	const struct cw_metric_def *defs;
	size_t n;
	char *label_name, *label_value;
	uint64_t *values;
	bool set;
};

struct cw_metrics_board *cw_metrics_board_new(const struct cw_metric_def *defs,
					      size_t n, const char *label_name,
					      const char *label_value)
{
	struct cw_metrics_board *b = calloc(1, sizeof(*b));

	if (!b)
		goto oom;
	pthread_mutex_init(&b->lock, NULL);
	b->defs = defs;
	b->n = n;
	b->values = calloc(n + 1, sizeof(*b->values));
	if (!b->values)
		goto oom;
	if (label_name) {
		b->label_name = strdup(label_name);
		b->label_value = strdup(label_value ? label_value : "");
		if (!b->label_name || !b->label_value)
			goto oom;
	}
	return b;
oom:
	cw_error("out of memory");
	cw_metrics_board_free(b);
	return NULL;
}

void cw_metrics_board_set(struct cw_metrics_board *b, const uint64_t *values)
{
	pthread_mutex_lock(&b->lock);
	memcpy(b->values, values, b->n * sizeof(*values));
	b->set = true;
	pthread_mutex_unlock(&b->lock);
}

int cw_metrics_board_write(struct cw_metrics_board *b, FILE *fp)
{
	uint64_t *v = calloc(b->n + 1, sizeof(*v));
	bool set;
	size_t i;

	if (!v)
		return -1;
	pthread_mutex_lock(&b->lock);
	memcpy(v, b->values, b->n * sizeof(*v));
	set = b->set;
	pthread_mutex_unlock(&b->lock);
	for (i = 0; set && i < b->n; i++) {
		cw_prom_header(fp, b->defs[i].name, b->defs[i].type,
			       b->defs[i].help);
		fputs(b->defs[i].name, fp);
		if (b->label_name) {
			fputc('{', fp);
			cw_prom_label(fp, b->label_name, b->label_value);
			fputc('}', fp);
		}
		fprintf(fp, " %llu\n", (unsigned long long)v[i]);
	}
	free(v);
	return set && !ferror(fp) ? 0 : -1;
}

void cw_metrics_board_free(struct cw_metrics_board *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b->values);
	free(b->label_name);
	free(b->label_value);
	free(b);
}

int cw_listen_parse(const char *s, const char *what,
		    struct sockaddr_storage *ss, bool *v6)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(s, ':'), *port = colon ? colon + 1 : s;
	struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	uint64_t p;
	size_t n;

	if (cw_parse_u64(port, 0, 65535, &p))
		return cw_error("%s '%s': want ADDR:PORT or PORT", what, s);
	n = colon ? (size_t)(colon - s) : 0;
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
		memcpy(host, s + 1, n - 2), host[n - 2] = '\0';
	else if (n && n < sizeof(host))
		memcpy(host, s, n), host[n] = '\0';
	else if (!colon)
		snprintf(host, sizeof(host), "127.0.0.1");
	else
		return cw_error("%s '%s': want ADDR:PORT or PORT", what, s);
	if (getaddrinfo(host, port, &hints, &ai) || !ai)
		return cw_error("%s '%s': '%s' is not an IP address", what, s,
				host);
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*v6 = ai->ai_family == AF_INET6;
	freeaddrinfo(ai);
	return 0;
}

struct cw_metrics_server {
	struct MHD_Daemon *d;
	struct cw_metrics_board *board;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			     const char *type, char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", type);
	MHD_add_response_header(r, "Cache-Control", "no-store");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c,
			      const char *url, const char *method,
			      const char *version, const char *upload,
			      size_t *upload_size, void **req)
{
	struct cw_metrics_server *s = cls;
	unsigned status = 200;
	char *body = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&body, &len);
	int err = 0;

	if (!fp)
		return MHD_NO;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		status = 405, fputs("{\"error\": \"read-only: GET\"}\n", fp);
	else if (strcmp(url, "/metrics"))
		status = 404, fputs("{\"error\": \"see /metrics\"}\n", fp);
	else
		err = cw_metrics_board_write(s->board, fp);
	if (err)
		status = 503;
	if (fclose(fp)) {
		free(body);
		return MHD_NO;
	}
	return reply(c, status,
		     status == 200 ? "text/plain; version=0.0.4"
				   : "application/json",
		     body, len);
}

/* The address really bound, for people and tests to find. */
static void say_where(const struct sockaddr_storage *ss, unsigned port)
{
	char addr[INET6_ADDRSTRLEN] = "?";
	bool v6 = ss->ss_family == AF_INET6;

	if (v6)
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)ss)->sin6_addr, addr,
			  sizeof(addr));
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
			  addr, sizeof(addr));
	cw_info("metrics at http://%s%s%s:%u/metrics", v6 ? "[" : "", addr,
		v6 ? "]" : "", port);
}

unsigned cw_metrics_server_port(const struct cw_metrics_server *s);

struct cw_metrics_server *cw_metrics_server_start(const char *listen,
						  struct cw_metrics_board *b)
{
	struct cw_metrics_server *s;
	struct sockaddr_storage ss;
	bool v6 = false;

	if (cw_listen_parse(listen, "--metrics", &ss, &v6))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s) {
		cw_error("out of memory");
		return NULL;
	}
	s->board = b;
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
					(v6 ? MHD_USE_IPv6 : 0),
				0, NULL, NULL, handle, s, MHD_OPTION_SOCK_ADDR,
				&ss, MHD_OPTION_CONNECTION_LIMIT, 16U,
				MHD_OPTION_CONNECTION_TIMEOUT, 10U,
				MHD_OPTION_END);
	if (!s->d) {
		cw_error("unable to listen on '%s': %s", listen,
			 strerror(errno));
		free(s);
		return NULL;
	}
	say_where(&ss, cw_metrics_server_port(s));
	return s;
}

unsigned cw_metrics_server_port(const struct cw_metrics_server *s)
{
	const union MHD_DaemonInfo *info =
		MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);

	return info ? info->port : 0;
}

void cw_metrics_server_stop(struct cw_metrics_server *s)
{
	if (!s)
		return;
	MHD_stop_daemon(s->d);
	free(s);
}
