/* SPDX-License-Identifier: MIT */
/*
 * TCP messages from a packet capture (pcap or pcapng; Ethernet, Linux
 * cooked or raw IP).  Per connection, a message is a run of payload in one
 * direction: it starts at the run's first packet and ends at its last.  A
 * passive tap sees both ends with one clock, so each message is seen
 * leaving its sender and arriving at its receiver at the same instants.
 *
 *	static int on_msg(void *ctx, const struct cw_pcap_msg *m) { ... }
 *	if (cw_pcap_read_messages(path, CW_PCAP_AT_END, on_msg, ctx))
 *		return -1;	// the error is printed
 *
 * Packets from a host to itself carry no hop and are left out.
 */
#ifndef CW_PCAP_H
#define CW_PCAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cw_pcap_msg {
	uint64_t start_ns, end_ns;   /* first and last packet of the run */
	uint64_t bytes;		     /* payload of the run so far (see when) */
	uint32_t conn;		     /* 1, 2, ... in order of first packet */
	const char *from, *to;	     /* sender and receiver addresses */
	uint16_t from_port, to_port; /* host order */
	/*
	 * The sender opened the connection: it sent the SYN the capture
	 * holds or, with no SYN in the capture, it has the higher port.
	 */
	bool from_client;
};

enum cw_pcap_when {
	/*
	 * At the run's first packet: end_ns = start_ns and bytes is that
	 * packet's payload; from_client is a guess until the run ends.
	 */
	CW_PCAP_AT_START,
	/* When the run ends (the other side sends, or the capture ends). */
	CW_PCAP_AT_END,
};

/* Called per message; a non-zero return stops the read and is returned. */
typedef int (*cw_pcap_msg_fn)(void *ctx, const struct cw_pcap_msg *m);

/* 0, -1 (error printed: unreadable file, link type) or fn's non-zero. */
int cw_pcap_read_messages(const char *path, enum cw_pcap_when when,
			  cw_pcap_msg_fn fn, void *ctx);

/* A pcap or pcapng by its first bytes, or (path not NULL) its extension. */
bool cw_pcap_is_capture(const unsigned char *head, size_t n, const char *path);

#endif
