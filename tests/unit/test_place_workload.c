// SPDX-License-Identifier: MIT
/*
 * Resources and workload identity over a test root laid out like a node:
 * cgroup v2, hybrid (v2 tree without controllers beside v1), v1 only and
 * /proc alone; docker, containerd, cri-o and the kubelet's log links.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/workload.h"
#include "check.h"
#include "common/util.h"

static char root[256];

/* Write text to root/rel, making the folders. */
static void put(const char *rel, const char *text)
{
	char path[1024], *slash;
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	slash = strrchr(path, '/');
	*slash = '\0';
	CHECK(cw_mkdir_p(path) == 0);
	*slash = '/';
	fp = fopen(path, "w");
	CHECK(fp != NULL);
	if (!fp)
		return;
	fputs(text, fp);
	fclose(fp);
}

#define ID(c)                                                                  \
	c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c c  \
		c c c c c c c c c c c c c c c c c c c c c c c c c c c c c

static void test_usage(void)
{
	struct cw_usage u;
	long hz = sysconf(_SC_CLK_TCK);

	/* v2 only: a containerd pod's scope */
	put("proc/100/cgroup", "0::/kubepods.slice/cri-containerd-a.scope\n");
	put("sys/fs/cgroup/kubepods.slice/cri-containerd-a.scope/cpu.stat",
	    "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n");
	put("sys/fs/cgroup/kubepods.slice/cri-containerd-a.scope/"
	    "memory.current",
	    "4096\n");
	CHECK(cw_task_usage(root, 100, &u) == 0);
	CHECK(u.from_cgroup && u.cpu_ns == 1500000 && u.rss_bytes == 4096);
	CHECK(u.rss_hwm_bytes == 0); /* no memory.peak: unknown */
	put("sys/fs/cgroup/kubepods.slice/cri-containerd-a.scope/memory.peak",
	    "6144\n");
	CHECK(cw_task_usage(root, 100, &u) == 0 && u.rss_hwm_bytes == 6144);

	/* hybrid: cpu.stat in the unified tree, memory in v1 */
	put("proc/101/cgroup", "12:memory:/docker/b\n4:cpu,cpuacct:/docker/b\n"
			       "1:name=systemd:/docker/b\n0::/docker/b\n");
	put("sys/fs/cgroup/unified/docker/b/cpu.stat", "usage_usec 2000\n");
	put("sys/fs/cgroup/memory/docker/b/memory.usage_in_bytes", "8192\n");
	CHECK(cw_task_usage(root, 101, &u) == 0);
	CHECK(u.from_cgroup && u.cpu_ns == 2000000 && u.rss_bytes == 8192);

	/* v1 only, cpuacct mounted alone */
	put("proc/102/cgroup", "5:cpuacct:/kubepods/podx/c\n"
			       "9:memory:/kubepods/podx/c\n");
	put("sys/fs/cgroup/cpuacct/kubepods/podx/c/cpuacct.usage", "777\n");
	put("sys/fs/cgroup/memory/kubepods/podx/c/memory.usage_in_bytes",
	    "999\n");
	put("sys/fs/cgroup/memory/kubepods/podx/c/memory.max_usage_in_bytes",
	    "1999\n");
	CHECK(cw_task_usage(root, 102, &u) == 0);
	CHECK(u.from_cgroup && u.cpu_ns == 777 && u.rss_bytes == 999);
	CHECK(u.rss_hwm_bytes == 1999);

	/* the root cgroup: the process's own numbers */
	put("proc/103/cgroup", "0::/\n");
	put("proc/103/stat", "103 (a (b) c) S 1 103 103 0 -1 4194304 10 0 0 0 "
			     "30 12 0 0 20 0 1 0 500 1000 100\n");
	put("proc/103/status", "Name:\tx\nVmPeak:\t 9 kB\nVmHWM:\t    2000 "
			       "kB\nVmRSS:\t    1234 kB\n");
	CHECK(cw_task_usage(root, 103, &u) == 0);
	CHECK(!u.from_cgroup && u.rss_bytes == 1234 * 1024);
	CHECK(u.rss_hwm_bytes == 2000 * 1024);
	CHECK(u.cpu_ns == 42 * (NSEC_PER_SEC / (uint64_t)hz));

	CHECK(cw_task_usage(root, 104, &u) == -1); /* gone */
}

static void test_workloads(void)
{
	struct cw_workload w;

	put("var/lib/docker/containers/" ID("1") "/config.v2.json",
	    "{\"Name\":\"/k8s_web\",\"Config\":{\"Labels\":{"
	    "\"io.kubernetes.container.name\":\"web\","
	    "\"io.kubernetes.pod.name\":\"web-7c9f8d6b5-x2k4q\","
	    "\"io.kubernetes.pod.namespace\":\"shop\"}}}");
	CHECK(cw_workload_lookup(root, ID("1"), &w) == 0);
	CHECK(!strcmp(w.runtime, "docker") && !strcmp(w.container, "web"));
	CHECK(!strcmp(w.ns, "shop") && !strcmp(w.owner_kind, "Deployment"));
	CHECK(!strcmp(w.owner, "web"));

	put("var/lib/docker/containers/" ID("2") "/config.v2.json",
	    "{\"Name\":\"/redis\",\"Config\":{\"Labels\":{}}}");
	CHECK(cw_workload_lookup(root, ID("2"), &w) == 0);
	CHECK(!strcmp(w.container, "redis") && !w.pod[0] && !w.owner[0]);

	put("run/containerd/io.containerd.runtime.v2.task/k8s.io/" ID(
		    "3") "/config.json",
	    "{\"ociVersion\":\"1.0.2\",\"annotations\":{"
	    "\"io.kubernetes.cri.container-type\":\"container\","
	    "\"io.kubernetes.cri.container-name\":\"cassandra\","
	    "\"io.kubernetes.cri.sandbox-name\":\"cassandra-2\","
	    "\"io.kubernetes.cri.sandbox-namespace\":\"data\"}}");
	CHECK(cw_workload_lookup(root, ID("3"), &w) == 0);
	CHECK(!strcmp(w.runtime, "containerd") &&
	      !strcmp(w.pod, "cassandra-2"));
	CHECK(!strcmp(w.owner_kind, "StatefulSet") &&
	      !strcmp(w.owner, "cassandra"));

	put("var/lib/containers/storage/overlay-containers/" ID(
		    "4") "/userdata/config.json",
	    "{\"annotations\":{\"io.kubernetes.container.name\":\"spark\","
	    "\"io.kubernetes.pod.name\":\"spark-exec-5d8f9c7b8d-bcd2f\","
	    "\"io.kubernetes.pod.namespace\":\"jobs\"}}");
	CHECK(cw_workload_lookup(root, ID("4"), &w) == 0);
	CHECK(!strcmp(w.runtime, "cri-o") && !strcmp(w.owner, "spark-exec"));
	CHECK(!strcmp(w.ns, "jobs") && !strcmp(w.container, "spark"));

	put("var/log/containers/node-exporter-x7t2p_monitoring_exporter-" ID(
		    "5") ".log",
	    "");
	CHECK(cw_workload_lookup(root, ID("5"), &w) == 0);
	CHECK(!strcmp(w.runtime, "kubelet") &&
	      !strcmp(w.pod, "node-exporter-x7t2p"));
	CHECK(!strcmp(w.ns, "monitoring") && !strcmp(w.container, "exporter"));
	CHECK(!strcmp(w.owner, "node-exporter") && !w.owner_kind[0]);

	CHECK(cw_workload_lookup(root, ID("6"), &w) == -1);
	CHECK(cw_workload_lookup(root, "../../etc", &w) == -1);
}

/* The agent's path: a process's container id filled with names. */
static void test_fill(void)
{
	struct cw_process p;

	memset(&p, 0, sizeof(p));
	cw_workload_set_root(root);
	CHECK(!strcmp(cw_workload_root(), root));
	snprintf(p.container, sizeof(p.container), "%s", ID("3"));
	cw_workload_fill(&p);
	CHECK(!strcmp(p.container_name, "cassandra"));
	CHECK(!strcmp(p.pod_name, "cassandra-2") && !strcmp(p.pod_ns, "data"));
	CHECK(!strcmp(p.workload_kind, "StatefulSet") &&
	      !strcmp(p.workload, "cassandra"));
	/* Nothing names it, or no container: left empty. */
	memset(&p, 0, sizeof(p));
	snprintf(p.container, sizeof(p.container), "%s", ID("6"));
	cw_workload_fill(&p);
	CHECK(!p.container_name[0] && !p.pod_name[0] && !p.workload[0]);
	memset(&p, 0, sizeof(p));
	cw_workload_fill(&p);
	CHECK(!p.container_name[0]);
	/* Another root: the names found under the first are forgotten. */
	setenv("CAUSEWAY_RUNTIME_ROOT", "/nonexistent-root", 1);
	cw_workload_set_root(NULL);
	CHECK(!strcmp(cw_workload_root(), "/nonexistent-root"));
	snprintf(p.container, sizeof(p.container), "%s", ID("3"));
	cw_workload_fill(&p);
	CHECK(!p.container_name[0]);
	unsetenv("CAUSEWAY_RUNTIME_ROOT");
	cw_workload_set_root(NULL);
	CHECK(!strcmp(cw_workload_root(), "/"));
}

static void test_owner(void)
{
	char kind[32], owner[64];

	cw_workload_owner("api-6d4cf56db6-2xjkq", kind, sizeof(kind), owner,
			  sizeof(owner));
	CHECK(!strcmp(kind, "Deployment") && !strcmp(owner, "api"));
	cw_workload_owner("db-10", kind, sizeof(kind), owner, sizeof(owner));
	CHECK(!strcmp(kind, "StatefulSet") && !strcmp(owner, "db"));
	cw_workload_owner("standalone", kind, sizeof(kind), owner,
			  sizeof(owner));
	CHECK(!kind[0] && !strcmp(owner, "standalone"));
	cw_workload_owner("my-app-v2", kind, sizeof(kind), owner,
			  sizeof(owner));
	CHECK(!kind[0] && !strcmp(owner, "my-app-v2"));
}

int main(void)
{
	char cmd[300];

	snprintf(root, sizeof(root), "/tmp/cw-test-workload.XXXXXX");
	if (!mkdtemp(root))
		return 1;
	test_usage();
	test_workloads();
	test_fill();
	test_owner();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		failures++;
	return failures ? 1 : 0;
}
