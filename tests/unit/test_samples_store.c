// SPDX-License-Identifier: MIT
/*
 * Run files and the store, with no kernel: encode/decode round trips, every
 * flipped byte and every truncation refused, atomic writes, pruning by age
 * and size, bursts and their attribution on a synthetic run.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "samples/samples.h"
#include "common/log.h"
#include "common/util.h"

static int failures;

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			failures++;                                            \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);            \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
		}                                                              \
	} while (0)

/* 1 ms bins; a burst of 3 bins at 10, one of 1 bin at 30, idle elsewhere. */
static struct cw_sample_run *synthetic(uint32_t nbins)
{
	struct cw_sample_run *run = cw_sample_run_new(nbins);
	uint32_t i;

	strcpy(run->host, "testhost");
	strcpy(run->dev, "veth0,veth1");
	run->start_real_ns = 1700000000123456789ULL;
	run->interval_ns = NSEC_PER_MSEC;
	run->link_speed_bps = 1000000000; /* 125000 bytes per bin */
	run->samples = nbins;
	run->ncpus = 2;
	run->past_end = 7;
	for (i = 0; i < nbins; i++) {
		run->bins[i].v[CW_SF_BYTES_IN] = 1000 + i;
		run->bins[i].v[CW_SF_BYTES_OUT_X] = i % 3;
		run->bins[i].v[CW_SF_FLOWS_IN] = 2;
	}
	for (i = 10; i < 13; i++) {
		run->bins[i].v[CW_SF_BYTES_IN] = 100000;
		run->bins[i].v[CW_SF_FLOWS_IN] = 40;
		run->bins[i].v[CW_SF_ECN_IN] = 5000;
		run->bins[i].v[CW_SF_RETRANS_OUT] = 3;
	}
	run->bins[11].v[CW_SF_FLOWS_IN_X] = 621;
	run->bins[11].saturated = 2;
	run->bins[30 % nbins].v[CW_SF_BYTES_IN] = UINT64_MAX / 2;
	return run;
}

static void test_roundtrip(void)
{
	struct cw_sample_run *run = synthetic(50), *back;
	uint8_t *buf;
	size_t len, i;
	char err[128];
	int bad = 0, ok;

	CHECK(!cw_sample_run_encode(run, &buf, &len), "encode");
	CHECK(!cw_sample_run_decode(buf, len, &back, err, sizeof(err)),
	      "decode: %s", err);
	CHECK(back && back->nbins == 50 && !strcmp(back->host, "testhost") &&
		      !strcmp(back->dev, "veth0,veth1") &&
		      back->start_real_ns == run->start_real_ns &&
		      back->past_end == 7 && back->ncpus == 2,
	      "header round trip");
	CHECK(back && !memcmp(back->bins, run->bins, 50 * sizeof(*run->bins)),
	      "bins round trip");
	printf("round trip: 50 bins in %zu bytes\n", len);
	cw_sample_run_free(back);
	/* Every single flipped bit in every byte, and every truncation. */
	for (i = 0; i < len; i++) {
		buf[i] ^= 1 << (i % 8);
		ok = !cw_sample_run_decode(buf, len, &back, err, sizeof(err));
		cw_sample_run_free(back);
		buf[i] ^= 1 << (i % 8);
		bad += ok;
		ok = !cw_sample_run_decode(buf, i, &back, err, sizeof(err));
		cw_sample_run_free(back);
		bad += ok;
	}
	CHECK(!bad, "%d corruptions accepted", bad);
	printf("corruption: %zu flips and %zu truncations refused\n", len, len);
	free(buf);
	cw_sample_run_free(run);
}

static void age_file(const char *dir, const char *name, uint64_t secs)
{
	struct timespec ts[2];
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= secs;
	ts[1] = ts[0];
	utimensat(AT_FDCWD, path, ts, 0);
}

static void test_store(void)
{
	char dir[] = "/tmp/cw-samples-store.XXXXXX", name[CW_SAMPLE_NAME_MAX];
	char first[CW_SAMPLE_NAME_MAX], path[4096];
	struct cw_sample_store_limits lim = {0};
	struct cw_sample_run *run = synthetic(20), *back;
	struct cw_sample_entry *v;
	size_t n, i;

	if (!mkdtemp(dir)) {
		CHECK(0, "mkdtemp");
		return;
	}
	CHECK(!cw_sample_store_write(dir, run, &lim, first, sizeof(first)),
	      "write");
	/* Same start: a second name, not an overwrite. */
	CHECK(!cw_sample_store_write(dir, run, &lim, name, sizeof(name)),
	      "write 2");
	CHECK(strcmp(first, name), "two runs, one name '%s'", name);
	CHECK(!cw_sample_store_list(dir, &v, &n) && n == 2, "list %zu", n);
	free(v);
	CHECK(!cw_sample_store_resolve(dir, "latest", path, sizeof(path)),
	      "resolve latest");
	CHECK(!cw_sample_run_read(path, &back), "read");
	cw_sample_run_free(back);
	/* By age: an old run goes at the next write, a fresh one stays. */
	age_file(dir, first, 4 * 86400);
	run->start_real_ns += NSEC_PER_SEC;
	CHECK(!cw_sample_store_write(dir, run, &lim, name, sizeof(name)),
	      "write 3");
	CHECK(!cw_sample_store_list(dir, &v, &n) && n == 2, "aged: %zu", n);
	for (i = 0; i < n; i++)
		CHECK(strcmp(v[i].name, first), "old run kept");
	free(v);
	/* By size: a cap of one file keeps only the newest. */
	lim.max_bytes = 1;
	run->start_real_ns += NSEC_PER_SEC;
	CHECK(!cw_sample_store_write(dir, run, &lim, name, sizeof(name)),
	      "write 4");
	CHECK(!cw_sample_store_list(dir, &v, &n) && n == 1 &&
		      !strcmp(v[0].name, name),
	      "capped: %zu", n);
	free(v);
	/* Other files in the store are never touched. */
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	close(open(path, O_CREAT | O_WRONLY, 0644));
	age_file(dir, "notes.txt", 10 * 86400);
	cw_sample_store_prune(dir, &lim, NULL);
	CHECK(!access(path, F_OK), "pruned a file that is not a run");
	printf("store: names, latest, prune by age and size ok\n");
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	if (system(path))
		CHECK(0, "cleanup");
	cw_sample_run_free(run);
}

static void test_bursts(void)
{
	struct cw_sample_run *run = synthetic(50);
	char path[] = "/tmp/cw-samples-conns.XXXXXX";
	uint64_t t0 = run->start_real_ns;
	struct cw_burst_edge *edges;
	struct cw_burst *b;
	size_t n, ne, idx[8], k;
	FILE *fp;
	int fd;

	CHECK(cw_sample_bursts(run, true, 0.5, 0, &b, &n), "no link speed");
	CHECK(!cw_sample_bursts(run, true, 0.5, 1000000000, &b, &n), "bursts");
	CHECK(n == 2 && b[0].first == 10 && b[0].last == 12 &&
		      b[1].first == 30 && b[1].last == 30,
	      "burst bins: %zu", n);
	CHECK(n && b[0].max_flows == 40 + 621 && b[0].flows_saturated,
	      "burst flows %u", n ? b[0].max_flows : 0);
	CHECK(n && b[0].bytes == 300000 && b[0].peak_util > 0.79 &&
		      b[0].peak_util < 0.81,
	      "burst bytes");
	fd = mkstemp(path);
	fp = fdopen(fd, "w");
	/* Active 9-11 ms: overlaps the first burst only. */
	fprintf(fp,
		"{\"laddr\":\"10.0.0.1\",\"lport\":5201,\"raddr\":\"10.0.0.2\","
		"\"rport\":40000,\"bytes_out\":10,\"bytes_in\":5,\"first_ns\":"
		"%lu,\"last_ns\":%lu,\"process\":{\"pid\":42,\"comm\":"
		"\"small\"}}"
		"\n\n",
		(unsigned long)(t0 + 9 * NSEC_PER_MSEC),
		(unsigned long)(t0 + 11 * NSEC_PER_MSEC));
	fprintf(fp,
		"{\"laddr\":\"10.0.0.1\",\"lport\":5201,\"raddr\":\"10.0.0.3\","
		"\"rport\":40001,\"bytes_out\":1000,\"bytes_in\":0,\"first_"
		"ns\":"
		"%lu,\"last_ns\":%lu,\"process\":{\"pid\":null}}\n",
		(unsigned long)t0, (unsigned long)(t0 + 40 * NSEC_PER_MSEC));
	/* Before the run: never active. */
	fprintf(fp,
		"{\"laddr\":\"10.0.0.1\",\"lport\":1,\"raddr\":\"10.0.0.4\","
		"\"rport\":2,\"bytes_out\":99999,\"bytes_in\":0,\"first_ns\":1,"
		"\"last_ns\":2,\"process\":{\"pid\":7,\"comm\":\"old\"}}\n");
	fclose(fp);
	CHECK(!cw_burst_edges_load(path, &edges, &ne) && ne == 3, "load %zu",
	      ne);
	k = cw_burst_attribute(run, &b[0], edges, ne, idx);
	CHECK(k == 2 && idx[0] == 1 && idx[1] == 0 &&
		      !strcmp(edges[0].comm, "small") && edges[0].pid == 42 &&
		      edges[1].pid == -1,
	      "attribution of burst 1: %zu", k);
	k = cw_burst_attribute(run, &b[1], edges, ne, idx);
	CHECK(k == 1 && idx[0] == 1, "attribution of burst 2: %zu", k);
	free(edges);
	/* A line that is not a record is an error with its line number. */
	fp = fopen(path, "a");
	fprintf(fp, "{\"laddr\": 3}\n");
	fclose(fp);
	CHECK(cw_burst_edges_load(path, &edges, &ne), "bad line accepted");
	unlink(path);
	printf("bursts: %zu found, attribution ranked by bytes\n", n);
	free(b);
	cw_sample_run_free(run);
}

/* Three bins of UINT64_MAX bytes once summed to UINT64_MAX - 2. */
static void test_saturation(void)
{
	struct cw_sample_run *run = cw_sample_run_new(3);
	struct cw_burst *b;
	size_t n;
	uint32_t i;

	run->interval_ns = NSEC_PER_MSEC;
	run->nbins = run->samples = 3;
	for (i = 0; i < 3; i++) {
		run->bins[i].v[CW_SF_BYTES_IN] = UINT64_MAX;
		run->bins[i].v[CW_SF_BYTES_IN_X] = 1;
	}
	run->bins[0].v[CW_SF_BYTES_OUT] = 7;
	CHECK(cw_sample_run_total(run, CW_SF_BYTES_IN) == UINT64_MAX,
	      "total wrapped to %llu",
	      (unsigned long long)cw_sample_run_total(run, CW_SF_BYTES_IN));
	CHECK(cw_sample_run_total_saturated(run, CW_SF_BYTES_IN),
	      "held total not flagged");
	CHECK(cw_sample_run_total(run, CW_SF_BYTES_OUT) == 7 &&
		      !cw_sample_run_total_saturated(run, CW_SF_BYTES_OUT),
	      "ordinary total flagged");
	CHECK(!cw_sample_bursts(run, true, 0.5, 1000000000, &b, &n) && n == 1,
	      "bursts");
	CHECK(n == 1 && b[0].bytes == UINT64_MAX && b[0].bytes_saturated,
	      "burst bytes %llu", n ? (unsigned long long)b[0].bytes : 0);
	free(b);
	printf("saturation: totals and burst bytes held and flagged\n");
	cw_sample_run_free(run);
}

int main(void)
{
	test_saturation();
	test_roundtrip();
	test_store();
	test_bursts();
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
