#!/bin/bash
# Wire codec and Kafka transport throughput: encode and decode records/s on
# one core, and produce -> consume through the embedded broker (librdkafka's
# mock cluster: same client code as real brokers, loopback TCP), with lz4
# and zstd side by side.  Prints a markdown section on stdout.
#
#   bench/run.sh bench_wire         (N=... to change the record count)
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${N:-1000000}	# codec records
K=${K:-200000}	# kafka records
OUT=$BUILD/bench
LOAD=$(cut -d" " -f1 /proc/loadavg)
mkdir -p "$OUT"
make -s "$BUILD/libcauseway-core.a" >&2

cat >"$OUT/bench_wire.c" <<'EOF'
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/kafka.h"
#include "common/log.h"
#include "common/util.h"
#include "common/wire.h"

static void make_rec(struct cw_conn_record *r, uint64_t i)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->host, sizeof(r->host), "host-%03d", (int)(i % 100));
	r->netns = 4026531992U;
	r->cookie = 1000000 + i;
	r->protocol = 6;
	r->role = 1 + i % 2;
	cw_addr_parse(&r->laddr, "10.77.0.1");
	cw_addr_parse(&r->raddr, "10.77.1.2");
	r->lport = (uint16_t)(32768 + i % 20000);
	r->rport = 443;
	r->bytes_out = i * 1460;
	r->bytes_in = i * 512;
	r->calls_out = r->calls_in = i;
	r->msgs_out = r->msgs_in = i / 2;
	r->first_ns = 1700000000000000000ULL + i;
	r->last_ns = r->first_ns + 1000000000;
	r->srtt_us = 250;
	r->seq = i;
	r->proc.tgid = 4242;
	r->proc.start_ns = 123456789;
	r->proc.cgroup_id = 777;
	strcpy(r->proc.comm, "nginx");
	strcpy(r->proc.cmdline, "nginx: worker process");
}

static double secs(uint64_t a, uint64_t b)
{
	return (double)(b - a) / 1e9;
}

static int codec(uint64_t n)
{
	struct cw_conn_record r;
	static struct cw_wire_msg m;
	uint8_t **bufs = calloc(n, sizeof(*bufs));
	size_t *lens = calloc(n, sizeof(*lens));
	uint64_t i, t0, t1, t2, total = 0;

	make_rec(&r, 0);
	t0 = cw_now_mono_ns();
	for (i = 0; i < n; i++) {
		r.seq = i, r.bytes_out = i * 1460, r.cookie = 1000000 + i;
		if (cw_wire_encode_conn(&r, &bufs[i], &lens[i]))
			return 1;
	}
	t1 = cw_now_mono_ns();
	for (i = 0; i < n; i++) {
		if (cw_wire_decode(bufs[i], lens[i], &m, NULL, 0) !=
		    CW_WIRE_CONN || m.conn.seq != i)
			return 1;
		total += lens[i];
	}
	t2 = cw_now_mono_ns();
	printf("codec %" PRIu64 " %.0f %.0f %.1f %zu\n", n,
	       n / secs(t0, t1), n / secs(t1, t2), (double)total / n,
	       sizeof(struct cw_conn_record));
	for (i = 0; i < n; i++)
		free(bufs[i]);
	free(bufs);
	free(lens);
	return 0;
}

static int kafka(uint64_t n, const char *compression)
{
	char boot[256], topic[64], prefix[32];
	const char *topics[1] = { topic };
	struct cw_kafka_conf conf = { 0 };
	struct cw_kafka_producer *p;
	struct cw_kafka_consumer *c;
	struct cw_kafka_msg m;
	struct cw_conn_record r;
	uint64_t i, got = 0, t0, t1, t2 = 0, t3;

	snprintf(prefix, sizeof(prefix), "bench-%s", compression);
	snprintf(topic, sizeof(topic), "%s.conns", prefix);
	if (cw_kafka_mock_start(1, boot, sizeof(boot)) ||
	    cw_kafka_mock_topic_create(topic, 4))
		return 1;
	conf.brokers = boot;
	conf.topic_prefix = prefix;
	conf.compression = compression;
	conf.group = prefix;
	conf.from_beginning = true;
	p = cw_kafka_producer_new(&conf);
	if (!p)
		return 1;
	t0 = cw_now_mono_ns();
	for (i = 0; i < n; i++) {
		make_rec(&r, i);
		if (cw_kafka_produce_conn(p, &r))
			return 1;
		cw_kafka_producer_poll(p, 0);
	}
	if (cw_kafka_producer_flush(p, 60000))
		return 1;
	t1 = cw_now_mono_ns();
	cw_kafka_producer_free(p);
	c = cw_kafka_consumer_new(&conf, topics, 1);
	if (!c)
		return 1;
	t3 = cw_now_mono_ns();
	while (got < n && cw_now_mono_ns() - t3 < 60 * NSEC_PER_SEC) {
		int rc = cw_kafka_consume(c, 100, &m);

		if (rc < 0)
			return 1;
		if (rc == 0)
			continue;
		if (!got++)
			t2 = cw_now_mono_ns(); /* after the group join */
		cw_kafka_msg_applied(c, &m);
	}
	t3 = cw_now_mono_ns();
	cw_kafka_consumer_free(c);
	cw_kafka_mock_stop();
	if (got != n)
		return 1;
	printf("kafka %s %" PRIu64 " %.0f %.0f\n", compression, n,
	       n / secs(t0, t1), (n - 1) / secs(t2, t3));
	return 0;
}

int main(int argc, char **argv)
{
	cw_log_level = CW_LOG_WARN;
	if (argc == 3 && !strcmp(argv[1], "codec"))
		return codec(strtoull(argv[2], NULL, 10));
	if (argc == 4 && !strcmp(argv[1], "kafka"))
		return kafka(strtoull(argv[2], NULL, 10), argv[3]);
	return 2;
}
EOF
# shellcheck disable=SC2046
${CC:-cc} -O2 -g -std=gnu11 -D_GNU_SOURCE -I"$BUILD" -I. -o "$OUT/bench_wire" \
	"$OUT/bench_wire.c" "$BUILD/libcauseway-core.a" \
	$(pkg-config --cflags --libs libbpf libelf zlib json-c fftw3 libpcap \
		rdkafka libprotobuf-c) -lcap -lm -lpthread

read -r _ n enc dec size rec <<<"$(taskset -c 0 "$OUT/bench_wire" codec "$N")"
read -r _ _ kn lz4_p lz4_c <<<"$("$OUT/bench_wire" kafka "$K" lz4)"
read -r _ _ _ zstd_p zstd_c <<<"$("$OUT/bench_wire" kafka "$K" zstd)"

fmt() { awk -v v="$1" 'BEGIN { printf "%.0f", v }'; }
echo "<!-- bench_wire -->"
echo "## Wire codec and Kafka transport"
echo
echo "Command: \`N=$N K=$K bench/run.sh bench_wire\` ($(date -u +%Y-%m-%d),"
echo "$(nproc) cores, load average $LOAD at the start,"
echo "librdkafka $(pkg-config --modversion rdkafka),"
echo "protobuf-c $(pkg-config --modversion libprotobuf-c))."
echo
echo "Codec, one core (\`taskset -c 0\`), $(fmt "$n") typical TCP connection"
echo "records (addresses, counters, times, process; no container or pod):"
echo
echo "| step | records/s |"
echo "|---|---:|"
echo "| encode (\`cw_wire_encode_conn\`) | $(fmt "$enc") |"
echo "| decode (\`cw_wire_decode\`) | $(fmt "$dec") |"
echo
echo "Encoded size: $size bytes per record on average (the C struct is $rec"
echo "bytes); decode/encode ratio $(awk -v a="$dec" -v b="$enc" 'BEGIN { printf "%.2f", a / b }')."
echo
echo "Kafka through the embedded broker (1 mock broker, 4 partitions, loopback"
echo "TCP, idempotent producer, delivery reports checked), $(fmt "$kn") records"
echo "each way.  Produce = first produce to last delivery report; consume ="
echo "first to last record in a consumer group, offsets stored per record:"
echo
echo "| compression | produce records/s | consume records/s |"
echo "|---|---:|---:|"
echo "| lz4 (default) | $(fmt "$lz4_p") | $(fmt "$lz4_c") |"
echo "| zstd | $(fmt "$zstd_p") | $(fmt "$zstd_c") |"
echo
echo "The mock broker shares the machine with the clients; real brokers differ."
echo "<!-- /bench_wire -->"
