/* SPDX-License-Identifier: MIT */
/* A connection record with every field set, for the wire codec's tests. */
#ifndef CW_TESTS_WIRE_FILL_H
#define CW_TESTS_WIRE_FILL_H

#include <string.h>

#include "common/hist.h"
#include "common/record.h"

static void fill(struct cw_conn_record *r)
{
	memset(r, 0, sizeof(*r));
	strcpy(r->host, "host-a.example");
	r->netns = 4026531992U;
	r->cookie = 0x1122334455667788ULL;
	r->protocol = 6;
	r->role = CW_REC_ROLE_CLIENT;
	r->flags = CW_REC_CLOSED | CW_REC_NAT;
	cw_addr_parse(&r->laddr, "10.77.0.1");
	cw_addr_parse(&r->raddr, "fd77::2");
	r->lport = 41234;
	r->rport = 443;
	r->bytes_out = UINT64_MAX;
	r->bytes_in = 1;
	r->calls_out = 3;
	r->calls_in = 4;
	r->msgs_out = 5;
	r->msgs_in = 6;
	r->first_ns = 1700000000123456789ULL;
	r->last_ns = 1700000001123456789ULL;
	r->retrans = 7;
	r->srtt_us = UINT32_MAX;
	r->seq = 99;
	r->proc.tgid = 4242;
	r->proc.start_ns = 123456789;
	r->proc.cgroup_id = 777;
	strcpy(r->proc.comm, "curl-long-name!"); /* 15 bytes: the maximum */
	memset(r->proc.cmdline, 'x', sizeof(r->proc.cmdline) - 1);
	strcpy(r->proc.container, "0123456789abcdef");
	strcpy(r->proc.pod, "pod-uid-1");
	/* The estimate block (fields 24-26). */
	r->flags |= CW_REC_MSGS_EST;
	r->sampled_msgs_out = 2;
	r->sampled_msgs_in = UINT64_MAX;
	r->sampled_ppm = CW_PPM;
	/* The edge-health block (fields 30-37). */
	r->connect_us = 1234;
	r->fail = CW_REC_FAIL_TIMEOUT;
	r->resets_in = 2;
	r->resets_out = UINT32_MAX;
	r->xchg_pipelined = 17;
	{
		struct cw_hist h = CW_HIST_INIT;

		cw_hist_add(&h, 250000, 3);
		cw_hist_add(&h, 1000000, 1);
		cw_rec_hist_set(&r->rtt, &h);
		cw_hist_add(&h, 5000000, UINT64_MAX);
		cw_rec_hist_set(&r->xchg, &h);
		cw_hist_reset(&h);
		cw_hist_add(&h, 0, 1);
		cw_rec_hist_set(&r->xchg_first, &h);
		cw_hist_release(&h);
	}
}


#endif
