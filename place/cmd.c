// SPDX-License-Identifier: MIT
/* `causeway place` past its options (place/cmd.h). */
#include <stdio.h>

#include "common/log.h"
#include "common/util.h"
#include "place/cmd.h"
#include "place/place.h"

int cw_place_inputs(struct cw_place_input *in, int n, char **paths)
{
	int i;

	if (in->since_ns && in->until_ns && in->since_ns >= in->until_ns)
		return cw_error("--since is not before --until");
	if (in->brokers)
		return n ? cw_error("--kafka reads the topics: it takes no "
				    "INPUT")
			 : 0;
	if (!n)
		return cw_error("no input: give a GRAPH.json, record files or "
				"--kafka (see 'causeway place --help')");
	if (n == 1 && !cw_place_is_records(paths[0])) {
		in->graph_path = paths[0];
		return 0;
	}
	for (i = 0; i < n; i++)
		if (!cw_place_is_records(paths[i]))
			return cw_error("'%s' is not a record file (JSON lines "
					"or wire): give one graph, or record "
					"files",
					paths[i]);
	in->records = paths;
	in->nrecords = (size_t)n;
	return 0;
}

int cw_place_run(struct cw_place_input *in, struct cw_place_result *res,
		 enum cw_place_format format, const char *out)
{
	struct cw_outfile of = {0};
	FILE *fp = stdout;

	if (cw_place_input_load(in) || cw_place_choose(in, res))
		return -1;
	if (out) {
		if (cw_outfile_open(&of, out))
			return -1;
		fp = of.fp;
	}
	cw_place_write(in, res, format, fp);
	if (out)
		return cw_outfile_commit(&of) ? -1 : 0;
	if (fflush(stdout) || ferror(stdout))
		return cw_error("unable to write to standard output");
	return 0;
}
