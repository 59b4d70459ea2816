// SPDX-License-Identifier: MIT
/*
 * The sampler's tc programs, loaded in the running kernel and driven with
 * crafted packets through bpf_prog_test_run_opts: bytes, ECN-CE, the
 * retransmit rule, regions, the end of a run, and the flow sketch's
 * accuracy from 1 to 1,000 flows in a bin (printed as a table).
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "agent/sampler.h"
#include "samples/samples.h"
#include "common/log.h"
#include "common/util.h"

#define IN  true
#define OUT false

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

struct pkt_spec {
	int family; /* 4 or 6 */
	int proto;  /* 6 or 17 */
	uint32_t saddr,
		daddr; /* IPv4, host order; IPv6 uses them as low bits */
	uint16_t sport, dport;
	uint32_t seq;
	uint32_t payload;
	uint8_t tos; /* IPv4 TOS or IPv6 traffic class */
	uint8_t tcp_flags;
};

/* Ethernet + IPv4/IPv6 + TCP/UDP + payload; returns the frame length. */
static size_t craft(const struct pkt_spec *p, uint8_t *buf)
{
	size_t l4 = p->proto == 6 ? 20 : 8, off;
	size_t l3 = p->family == 4 ? 20 : 40;
	size_t len = 14 + l3 + l4 + p->payload;
	uint32_t a;

	memset(buf, 0, len);
	buf[0] = 0x02, buf[5] = 0x01, buf[6] = 0x02, buf[11] = 0x02;
	if (p->family == 4) {
		buf[12] = 0x08, buf[13] = 0x00;
		buf[14] = 0x45;
		buf[15] = p->tos;
		buf[16] = (l3 + l4 + p->payload) >> 8;
		buf[17] = (l3 + l4 + p->payload) & 0xff;
		buf[22] = 64;
		buf[23] = p->proto;
		a = htonl(p->saddr);
		memcpy(buf + 26, &a, 4);
		a = htonl(p->daddr);
		memcpy(buf + 30, &a, 4);
	} else {
		buf[12] = 0x86, buf[13] = 0xdd;
		buf[14] = 0x60 | (p->tos >> 4);
		buf[15] = (p->tos & 0xf) << 4;
		buf[18] = (l4 + p->payload) >> 8;
		buf[19] = (l4 + p->payload) & 0xff;
		buf[20] = p->proto;
		buf[21] = 64;
		buf[22] = 0xfd, buf[23] = 0x77;
		a = htonl(p->saddr);
		memcpy(buf + 22 + 12, &a, 4);
		buf[38] = 0xfd, buf[39] = 0x77;
		a = htonl(p->daddr);
		memcpy(buf + 38 + 12, &a, 4);
	}
	off = 14 + l3;
	buf[off] = p->sport >> 8, buf[off + 1] = p->sport & 0xff;
	buf[off + 2] = p->dport >> 8, buf[off + 3] = p->dport & 0xff;
	if (p->proto == 6) {
		a = htonl(p->seq);
		memcpy(buf + off + 4, &a, 4);
		buf[off + 12] = 5 << 4;
		buf[off + 13] = p->tcp_flags ?: 0x10;
	} else {
		buf[off + 4] = (8 + p->payload) >> 8;
		buf[off + 5] = (8 + p->payload) & 0xff;
	}
	return len;
}

static uint8_t frame[2048];

static size_t send_pkt(struct cw_sampler *s, bool ingress,
		       const struct pkt_spec *p, uint32_t gso_segs)
{
	struct __sk_buff ctx = {.gso_segs = gso_segs};
	size_t len = craft(p, frame);
	LIBBPF_OPTS(bpf_test_run_opts, t, .data_in = frame, .data_size_in = len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = 1);
	int err;

	err = bpf_prog_test_run_opts(cw_sampler_prog_fd(s, ingress), &t);
	CHECK(!err && t.retval == 0, "test_run: err %d retval %u", err,
	      t.retval);
	return len;
}

static struct cw_sampler *open_sampler(uint64_t interval_ns, uint32_t n,
				       const char *const *prefixes,
				       size_t n_prefixes)
{
	static const char *const lo[] = {"lo"};
	struct cw_sampler_opts o = {
		.sz = sizeof(o),
		.devs = lo,
		.n_devs = 1,
		.interval_ns = interval_ns,
		.samples = n,
		.in_region = prefixes,
		.n_in_region = n_prefixes,
	};
	struct cw_sampler *s;

	if (cw_sampler_open(&o, &s)) {
		printf("FAIL: unable to load the sampler\n");
		exit(1);
	}
	return s;
}

static struct cw_sample_run *collect(struct cw_sampler *s)
{
	struct cw_sample_run *run;

	if (cw_sampler_collect(s, 0, &run)) {
		printf("FAIL: unable to collect\n");
		exit(1);
	}
	return run;
}

static void test_bytes_ecn(void)
{
	struct cw_sampler *s = open_sampler(NSEC_PER_SEC, 2, NULL, 0);
	struct pkt_spec p = {.family = 4,
			     .proto = 17,
			     .saddr = 0x0a010101,
			     .daddr = 0x0a010102,
			     .sport = 1000,
			     .dport = 2000,
			     .payload = 100};
	uint64_t in = 0, out = 0, ecn = 0;
	struct cw_sample_run *run;

	/* Before the run starts nothing counts. */
	send_pkt(s, IN, &p, 0);
	cw_sampler_start(s);
	in += send_pkt(s, IN, &p, 0);
	p.tos = 0x03; /* CE */
	ecn += send_pkt(s, IN, &p, 0);
	in += p.payload + 42;
	p.tos = 0x02; /* ECT(0): not CE */
	in += send_pkt(s, IN, &p, 0);
	p.tos = 0x01; /* ECT(1) */
	in += send_pkt(s, IN, &p, 0);
	p.tos = 0xb8 | 0x03; /* DSCP EF + CE */
	p.payload = 300;
	ecn += send_pkt(s, IN, &p, 0);
	in += 300 + 42;
	p.family = 6, p.tos = 0x03;
	ecn += send_pkt(s, IN, &p, 0);
	in += 300 + 62;
	p.tos = 0x03;
	out += send_pkt(s, OUT, &p, 0); /* egress CE is not ingress ECN */
	p.family = 4;
	out += send_pkt(s, OUT, &p, 0);
	run = collect(s);
	CHECK(run->bins[0].v[CW_SF_BYTES_IN] == in, "bytes_in %lu want %lu",
	      (unsigned long)run->bins[0].v[CW_SF_BYTES_IN], (unsigned long)in);
	CHECK(run->bins[0].v[CW_SF_BYTES_OUT] == out, "bytes_out %lu want %lu",
	      (unsigned long)run->bins[0].v[CW_SF_BYTES_OUT],
	      (unsigned long)out);
	CHECK(run->bins[0].v[CW_SF_ECN_IN] == ecn, "ecn_in %lu want %lu",
	      (unsigned long)run->bins[0].v[CW_SF_ECN_IN], (unsigned long)ecn);
	CHECK(run->bins[0].v[CW_SF_BYTES_IN_X] == 0, "nothing cross-region");
	printf("bytes and ECN-CE: in %lu out %lu ecn %lu\n", (unsigned long)in,
	       (unsigned long)out, (unsigned long)ecn);
	cw_sample_run_free(run);
	cw_sampler_free(s);
}

static void test_retransmits(void)
{
	struct cw_sampler *s = open_sampler(NSEC_PER_SEC, 2, NULL, 0);
	struct pkt_spec p = {.family = 4,
			     .proto = 6,
			     .saddr = 0x0a010101,
			     .daddr = 0x0a010102,
			     .sport = 40000,
			     .dport = 80};
	static const struct {
		bool ingress;
		uint32_t seq, len, gso;
		uint8_t flags;
		int retrans; /* expected added count */
		uint16_t sport;
	} steps[] = {
		{IN, 1000, 100, 0, 0, 0, 0},	  /* new flow */
		{IN, 1100, 100, 0, 0, 0, 0},	  /* new data */
		{IN, 1000, 100, 0, 0, 1, 0},	  /* the first again */
		{IN, 1050, 50, 0, 0, 1, 0},	  /* inside seen data */
		{IN, 1150, 100, 0, 0, 0, 0},	  /* overlaps, ends past */
		{IN, 1250, 0, 0, 0, 0, 0},	  /* pure ACK */
		{IN, 1250, 0, 0, 0x11, 0, 0},	  /* FIN, no data */
		{IN, 1000, 0, 0, 0x02, 0, 0},	  /* SYN, no data */
		{IN, 1100, 150, 3, 0, 3, 0},	  /* GSO resend: 3 segments */
		{OUT, 1000, 100, 0, 0, 0, 0},	  /* other direction: new */
		{OUT, 1000, 100, 0, 0, 1, 0},	  /* ... and its resend */
		{IN, 0xfffffff0, 32, 0, 0, 0, 1}, /* a flow about to wrap */
		{IN, 0x10, 10, 0, 0, 0, 1},	  /* past the wrap: new */
		{IN, 0xfffffff0, 32, 0, 0, 1, 1}, /* before the wrap: seen */
		{IN, 0x10, 10, 0, 0, 1, 1},	  /* after it: seen */
	};
	uint64_t want_in = 0, want_out = 0, got_in, got_out;
	struct cw_sample_run *run;
	size_t i;

	cw_sampler_start(s);
	for (i = 0; i < CW_ARRAY_SIZE(steps); i++) {
		p.sport = 40000 + steps[i].sport;
		p.seq = steps[i].seq;
		p.payload = steps[i].len;
		p.tcp_flags = steps[i].flags;
		send_pkt(s, steps[i].ingress, &p, steps[i].gso);
		if (steps[i].ingress)
			want_in += steps[i].retrans;
		else
			want_out += steps[i].retrans;
		run = collect(s);
		got_in = run->bins[0].v[CW_SF_RETRANS_IN];
		got_out = run->bins[0].v[CW_SF_RETRANS_OUT];
		CHECK(got_in == want_in && got_out == want_out,
		      "step %zu: retrans in %lu out %lu, want %lu %lu", i,
		      (unsigned long)got_in, (unsigned long)got_out,
		      (unsigned long)want_in, (unsigned long)want_out);
		cw_sample_run_free(run);
	}
	/* UDP never counts. */
	p.proto = 17;
	send_pkt(s, IN, &p, 0);
	send_pkt(s, IN, &p, 0);
	run = collect(s);
	CHECK(run->bins[0].v[CW_SF_RETRANS_IN] == want_in, "UDP counted");
	printf("retransmits: %zu steps, in %lu out %lu\n", i,
	       (unsigned long)want_in, (unsigned long)want_out);
	cw_sample_run_free(run);
	cw_sampler_free(s);
}

static void test_regions(void)
{
	static const char *const prefixes[] = {"10.1.0.0/16", "fd77::/64"};
	struct cw_sampler *s = open_sampler(NSEC_PER_SEC, 2, prefixes, 2);
	struct pkt_spec p = {.family = 4,
			     .proto = 17,
			     .sport = 1,
			     .dport = 2,
			     .payload = 58,
			     .tos = 3};
	struct cw_sample_run *run;
	const struct cw_sample_bin *b;

	cw_sampler_start(s);
	p.saddr = 0x0a010203, p.daddr = 0x0a020304; /* in from in-region */
	send_pkt(s, IN, &p, 0);
	p.saddr = 0x0a020304, p.daddr = 0x0a010203; /* in from elsewhere */
	send_pkt(s, IN, &p, 0);
	send_pkt(s, IN, &p, 0);
	p.saddr = 0x0a020304, p.daddr = 0x0a010203; /* out to in-region */
	send_pkt(s, OUT, &p, 0);
	p.daddr = 0xc0a80001; /* out to elsewhere */
	send_pkt(s, OUT, &p, 0);
	p.family = 6; /* fd77::... is in-region */
	send_pkt(s, OUT, &p, 0);
	run = collect(s);
	b = &run->bins[0];
	CHECK(b->v[CW_SF_BYTES_IN] == 100 && b->v[CW_SF_BYTES_IN_X] == 200,
	      "region in %lu / %lu", (unsigned long)b->v[CW_SF_BYTES_IN],
	      (unsigned long)b->v[CW_SF_BYTES_IN_X]);
	CHECK(b->v[CW_SF_ECN_IN] == 100 && b->v[CW_SF_ECN_IN_X] == 200,
	      "region ecn");
	CHECK(b->v[CW_SF_BYTES_OUT] == 100 + 120 &&
		      b->v[CW_SF_BYTES_OUT_X] == 100,
	      "region out %lu / %lu", (unsigned long)b->v[CW_SF_BYTES_OUT],
	      (unsigned long)b->v[CW_SF_BYTES_OUT_X]);
	CHECK(b->v[CW_SF_FLOWS_IN] == 1 && b->v[CW_SF_FLOWS_IN_X] == 1,
	      "region flows");
	CHECK(run->flags & CW_RUN_REGIONS, "regions flag");
	printf("regions: in %lu/%lu out %lu/%lu\n",
	       (unsigned long)b->v[CW_SF_BYTES_IN],
	       (unsigned long)b->v[CW_SF_BYTES_IN_X],
	       (unsigned long)b->v[CW_SF_BYTES_OUT],
	       (unsigned long)b->v[CW_SF_BYTES_OUT_X]);
	cw_sample_run_free(run);
	cw_sampler_free(s);
}

static void test_past_end(void)
{
	struct cw_sampler *s =
		open_sampler(CW_SAMPLER_MIN_INTERVAL_NS, 1, NULL, 0);
	struct pkt_spec p = {.family = 4,
			     .proto = 17,
			     .saddr = 1,
			     .daddr = 2,
			     .payload = 10};
	struct cw_sample_run *run;

	cw_sampler_start(s);
	usleep(2000); /* well past the single 10us bin */
	send_pkt(s, IN, &p, 0);
	send_pkt(s, OUT, &p, 0);
	run = collect(s);
	CHECK(run->bins[0].v[CW_SF_BYTES_IN] == 0 &&
		      run->bins[0].v[CW_SF_BYTES_OUT] == 0,
	      "counted past the last bin");
	CHECK(run->past_end == 2, "past_end %lu want 2",
	      (unsigned long)run->past_end);
	printf("past end: %lu packets not counted\n",
	       (unsigned long)run->past_end);
	cw_sample_run_free(run);
	cw_sampler_free(s);
}

static const unsigned int flow_counts[] = {
	1,  2,	3,  4,	5,   6,	  7,   8,   9,	 10,  11,  12,	13,   16,
	20, 30, 50, 75, 100, 150, 200, 300, 400, 500, 600, 800, 1000,
};
#define TRIALS 20

/* n distinct flows (two packets each) in one bin, TRIALS times over. */
static void test_sketch(void)
{
	struct cw_sampler *s = open_sampler(NSEC_PER_SEC, 1, NULL, 0);
	struct pkt_spec p = {.family = 4, .proto = 6, .payload = 0};
	unsigned int k, t, i, seed = 1;
	struct cw_sample_run *run;

	printf("\nflow sketch, %d trials per row (distinct flows in one "
	       "bin):\n",
	       TRIALS);
	printf("| flows | mean est | min | max | mean abs err | worst err | "
	       "exact | saturated |\n");
	printf("|------:|---------:|----:|----:|-------------:|----------:|"
	       "------:|----------:|\n");
	for (k = 0; k < CW_ARRAY_SIZE(flow_counts); k++) {
		unsigned int n = flow_counts[k], exact = 0, sat = 0;
		double sum = 0, err_sum = 0, worst = 0, e;
		uint64_t lo = UINT64_MAX, hi = 0, est;

		for (t = 0; t < TRIALS; t++) {
			if (cw_sampler_reset(s))
				exit(1);
			cw_sampler_start(s);
			for (i = 0; i < 2 * n; i++) {
				unsigned int f = i % n;

				p.saddr = 0x0a000000 | (seed * 7919 + f);
				p.daddr = 0x0a630001;
				p.sport = 1024 + (seed + f * 13) % 60000;
				p.dport = 5201;
				send_pkt(s, IN, &p, 0);
			}
			seed += n + 1;
			run = collect(s);
			est = run->bins[0].v[CW_SF_FLOWS_IN];
			if (run->bins[0].saturated & 1)
				sat++;
			cw_sample_run_free(run);
			exact += est == n;
			sum += est;
			e = fabs((double)est - n) / n;
			err_sum += e;
			if (e > worst)
				worst = e;
			if (est < lo)
				lo = est;
			if (est > hi)
				hi = est;
			if (n <= 12)
				CHECK(est == n, "%u flows: estimate %lu", n,
				      (unsigned long)est);
		}
		printf("| %5u | %8.1f | %3lu | %3lu | %11.1f%% | %8.1f%% | "
		       "%5u | %9u |\n",
		       n, sum / TRIALS, (unsigned long)lo, (unsigned long)hi,
		       100 * err_sum / TRIALS, 100 * worst, exact, sat);
		if (n > 12 && n <= 200)
			CHECK(err_sum / TRIALS <= 0.15,
			      "%u flows: mean error %.1f%% over 15%%", n,
			      100 * err_sum / TRIALS);
		if (n >= 1000)
			CHECK(sat >= TRIALS / 2,
			      "%u flows: saturated only %u of %d", n, sat,
			      TRIALS);
	}
	cw_sampler_free(s);
}

int main(void)
{
	if (geteuid() != 0) {
		printf("SKIP: needs root to load BPF programs\n");
		return 77;
	}
	test_bytes_ecn();
	test_retransmits();
	test_regions();
	test_past_end();
	test_sketch();
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
