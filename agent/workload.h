/* SPDX-License-Identifier: MIT */
/*
 * What a process uses and which workload it belongs to, read from what the
 * node itself holds: cgroups (v1 and v2) and /proc for CPU time and
 * resident memory; the container runtime's state (docker, containerd,
 * cri-o) and the kubelet's log folders for container, pod, namespace and
 * owning workload.  No API server.  Every path is under `root` ("/" on a
 * host, a folder in tests).
 *
 *	struct cw_usage u;
 *	if (cw_task_usage("/", pid, &u) == 0)
 *		publish(u.cpu_ns, u.rss_bytes, u.from_cgroup);
 *	struct cw_workload w;
 *	if (cw_workload_lookup("/", container_id, &w) == 0)
 *		label(w.container, w.pod, w.ns, w.owner_kind, w.owner);
 */
#ifndef CW_AGENT_WORKLOAD_H
#define CW_AGENT_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/record.h"

struct cw_usage {
	uint64_t cpu_ns;    /* CPU time used, cumulative */
	uint64_t rss_bytes; /* resident (anonymous + file mapped) memory now */
	bool from_cgroup;   /* the container's cgroup, else the process */
	/* The highest rss_bytes the kernel saw: memory.peak (v2),
	 * memory.max_usage_in_bytes (v1), VmHWM; 0 when it keeps none. */
	uint64_t rss_hwm_bytes;
};

/*
 * Usage of the cgroup that /proc/PID/cgroup names: v2 (cpu.stat
 * usage_usec, memory.current) where the unified hierarchy has the files,
 * else v1 (cpuacct.usage, memory.usage_in_bytes); only for a cgroup other
 * than the root.  Else the process alone: utime + stime of /proc/PID/stat
 * and VmRSS of /proc/PID/status.  0, or -1 with no message (the process
 * went away, or nothing readable).
 */
int cw_task_usage(const char *root, uint32_t pid, struct cw_usage *u);

struct cw_workload {
	char runtime[16];    /* "docker", "containerd", "cri-o", "kubelet" */
	char container[128]; /* container name */
	char pod[256];	     /* pod name, "" outside Kubernetes */
	char ns[64];	     /* pod namespace */
	char owner_kind[32]; /* Deployment, StatefulSet, DaemonSet or Job, or ""
			      */
	char owner[256];     /* owning workload's name, else the pod's */
};

/*
 * Names for a container id (64 hex): the runtime's state under root
 * (docker's containers/ID/config.v2.json, containerd's k8s.io task
 * bundle config.json, cri-o's overlay-containers/ID/userdata/config.json),
 * else the kubelet's /var/log/containers/POD_NS_CONTAINER-ID.log link.
 * The owner comes from the pod's name (see cw_workload_owner).  0, or -1
 * with no message when no source names it.
 */
int cw_workload_lookup(const char *root, const char *container_id,
		       struct cw_workload *w);

/*
 * The owning workload from a pod's name, as controllers name pods:
 * NAME-<pod-template-hash>-<5 chars> a Deployment NAME (hash and suffix of
 * the characters Kubernetes generates them from: no vowels, no 0, 1, 3),
 * NAME-<ordinal> a StatefulSet NAME, NAME-<5 chars> a DaemonSet or Job
 * NAME (kind "": it cannot tell which), else the pod is its own owner
 * (kind "").
 */
void cw_workload_owner(const char *pod, char *kind, size_t klen, char *owner,
		       size_t olen);

/*
 * Where cw_workload_fill() looks for the runtime's state: root (copied),
 * or NULL for $CAUSEWAY_RUNTIME_ROOT, else "/".  Set once, before the
 * agent starts (the agent's --runtime-root).
 */
void cw_workload_set_root(const char *root);
const char *cw_workload_root(void);
/*
 * p's container name, pod name, namespace and owning workload from its
 * container id (p->container) under cw_workload_root(); left "" when p
 * has no container or nothing names it.  Cheap to call again: looked up
 * once per container id.
 */
void cw_workload_fill(struct cw_process *p);

#endif
