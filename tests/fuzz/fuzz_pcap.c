// fuzz-sources: common/log.c common/util.c common/htab.c common/pcap.c
// fuzz-sources: paths/trace.c paths/pcap.c
// fuzz-sources: paths/names.c paths/csv.c
// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the pcap/pcapng reader of causeway paths: any file
 * is read (messages rebuilt from TCP payload) or refused with an error;
 * never a crash, a leak or a message naming an unknown node.  The reader
 * takes a path (libpcap opens it), so each input goes to a file first.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths/paths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct cw_msgtrace t;
	size_t i;
	FILE *fp;

	if (!path[0])
		snprintf(path, sizeof(path), "/dev/shm/cw-fuzz-%d.pcap",
			 (int)getpid());
	fp = fopen(path, "w");
	if (!fp)
		return 0;
	fwrite(data, 1, size, fp);
	fclose(fp);
	cw_msgtrace_init(&t);
	if (!cw_msgtrace_read_pcap(&t, path))
		for (i = 0; i < t.n_msgs; i++)
			if (t.msgs[i].node >= t.n_names ||
			    t.msgs[i].peer >= t.n_names)
				abort();
	cw_msgtrace_release(&t);
	unlink(path);
	return 0;
}
