// SPDX-License-Identifier: MIT
/*
 * Resources and workload identity from the node's own files.  Fleets run
 * cgroup v1, v2 or both (hybrid: v1 controllers, a v2 tree with no
 * controllers), so each value is looked for in v2 first, then v1.
 */
#include <ctype.h>
#include <dirent.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/workload.h"
#include "common/htab.h"
#include "common/util.h"

#define PATH_LEN 1024

static int read_under(const char *root, const char *rel, char *buf, size_t len)
{
	char path[PATH_LEN];

	if (snprintf(path, sizeof(path), "%s/%s", root, rel) >=
	    (int)sizeof(path))
		return -1;
	return cw_read_file(path, buf, len) > 0 ? 0 : -1;
}

static int read_u64_under(const char *root, const char *rel, uint64_t *out)
{
	char buf[64], *end;

	if (read_under(root, rel, buf, sizeof(buf)))
		return -1;
	*out = strtoull(buf, &end, 10);
	return end == buf ? -1 : 0;
}

/* The value after "key " in a flat keyed file (cpu.stat, memory.stat). */
static int keyed(const char *text, const char *key, uint64_t *out)
{
	size_t n = strlen(key);
	const char *s = text;

	for (; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
		if (!strncmp(s, key, n) && s[n] == ' ') {
			*out = strtoull(s + n + 1, NULL, 10);
			return 0;
		}
	return -1;
}

struct cg_paths {
	char v2[PATH_LEN / 2], cpu[PATH_LEN / 2], mem[PATH_LEN / 2];
};

/* The v2 path and the v1 cpuacct and memory paths of /proc/PID/cgroup. */
static int cgroup_paths(const char *root, uint32_t pid, struct cg_paths *cg)
{
	char rel[64], buf[4096], *line, *save = NULL, *ctl, *path;

	memset(cg, 0, sizeof(*cg));
	snprintf(rel, sizeof(rel), "proc/%u/cgroup", pid);
	if (read_under(root, rel, buf, sizeof(buf)))
		return -1;
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		ctl = strchr(line, ':');
		path = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		ctl++;
		if (!*ctl)
			snprintf(cg->v2, sizeof(cg->v2), "%s", path);
		else if (strstr(ctl, "cpuacct"))
			snprintf(cg->cpu, sizeof(cg->cpu), "%s", path);
		else if (!strcmp(ctl, "memory"))
			snprintf(cg->mem, sizeof(cg->mem), "%s", path);
	}
	return 0;
}

/* v2 at sys/fs/cgroup or, hybrid, sys/fs/cgroup/unified. */
static void usage_v2(const char *root, const char *p, struct cw_usage *u,
		     bool *cpu, bool *mem)
{
	static const char *const mounts[] = {"sys/fs/cgroup",
					     "sys/fs/cgroup/unified"};
	char rel[PATH_LEN], buf[2048];
	uint64_t v;
	size_t i;

	for (i = 0; i < 2 && (!*cpu || !*mem); i++) {
		snprintf(rel, sizeof(rel), "%s%s/cpu.stat", mounts[i], p);
		if (!*cpu && !read_under(root, rel, buf, sizeof(buf)) &&
		    !keyed(buf, "usage_usec", &v)) {
			u->cpu_ns = v * 1000;
			*cpu = true;
		}
		snprintf(rel, sizeof(rel), "%s%s/memory.current", mounts[i], p);
		if (!*mem && !read_u64_under(root, rel, &u->rss_bytes)) {
			*mem = true;
			/* memory.peak: kernels from 5.19 */
			snprintf(rel, sizeof(rel), "%s%s/memory.peak",
				 mounts[i], p);
			read_u64_under(root, rel, &u->rss_hwm_bytes);
		}
	}
}

static void usage_v1(const char *root, const struct cg_paths *cg,
		     struct cw_usage *u, bool *cpu, bool *mem)
{
	static const char *const cpudirs[] = {"cpu,cpuacct", "cpuacct"};
	char rel[PATH_LEN];
	size_t i;

	for (i = 0; i < 2 && !*cpu && cg->cpu[0] && strcmp(cg->cpu, "/"); i++) {
		snprintf(rel, sizeof(rel), "sys/fs/cgroup/%s%s/cpuacct.usage",
			 cpudirs[i], cg->cpu);
		*cpu = !read_u64_under(root, rel, &u->cpu_ns);
	}
	if (!*mem && cg->mem[0] && strcmp(cg->mem, "/")) {
		snprintf(rel, sizeof(rel),
			 "sys/fs/cgroup/memory%s/memory.usage_in_bytes",
			 cg->mem);
		*mem = !read_u64_under(root, rel, &u->rss_bytes);
		snprintf(rel, sizeof(rel),
			 "sys/fs/cgroup/memory%s/memory.max_usage_in_bytes",
			 cg->mem);
		if (*mem)
			read_u64_under(root, rel, &u->rss_hwm_bytes);
	}
}

/* utime + stime (fields 14, 15 of stat, after the comm) and VmRSS. */
static int usage_proc(const char *root, uint32_t pid, struct cw_usage *u)
{
	char rel[64], buf[4096], *s;
	unsigned long long ut, st;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t kb;

	snprintf(rel, sizeof(rel), "proc/%u/stat", pid);
	if (read_under(root, rel, buf, sizeof(buf)))
		return -1;
	s = strrchr(buf, ')');
	if (!s || sscanf(s + 1,
			 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
			 "%llu %llu",
			 &ut, &st) != 2)
		return -1;
	u->cpu_ns = (ut + st) * (NSEC_PER_SEC / (uint64_t)(hz > 0 ? hz : 100));
	snprintf(rel, sizeof(rel), "proc/%u/status", pid);
	if (read_under(root, rel, buf, sizeof(buf)))
		return -1;
	s = strstr(buf, "\nVmRSS:");
	kb = s ? strtoull(s + 7, NULL, 10) : 0; /* kernel threads: none */
	u->rss_bytes = kb * 1024;
	s = strstr(buf, "\nVmHWM:");
	u->rss_hwm_bytes = s ? strtoull(s + 7, NULL, 10) * 1024 : 0;
	u->from_cgroup = false;
	return 0;
}

int cw_task_usage(const char *root, uint32_t pid, struct cw_usage *u)
{
	struct cg_paths cg;
	bool cpu = false, mem = false;

	memset(u, 0, sizeof(*u));
	if (cgroup_paths(root, pid, &cg))
		return -1;
	if (cg.v2[0] && strcmp(cg.v2, "/"))
		usage_v2(root, cg.v2, u, &cpu, &mem);
	usage_v1(root, &cg, u, &cpu, &mem);
	if (cpu && mem) {
		u->from_cgroup = true;
		return 0;
	}
	/* Half from a cgroup is no one's figure: the process's, whole. */
	u->rss_hwm_bytes = 0;
	return usage_proc(root, pid, u);
}

static bool all_of(const char *s, size_t n, int (*cls)(int))
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!cls((unsigned char)s[i]))
			return false;
	return n > 0;
}

/* Kubernetes names generated suffixes from these: no vowels, no 0, 1, 3. */
static int is_k8s_suffix(int c)
{
	return c && strchr("bcdfghjklmnpqrstvwxz2456789", c) != NULL;
}

void cw_workload_owner(const char *pod, char *kind, size_t klen, char *owner,
		       size_t olen)
{
	const char *d1 = strrchr(pod, '-'), *d2 = NULL;
	size_t n = strlen(pod);

	snprintf(kind, klen, "%s", "");
	snprintf(owner, olen, "%s", pod);
	if (!d1 || d1 == pod)
		return;
	for (d2 = d1 - 1; d2 > pod && *d2 != '-'; d2--)
		;
	if (all_of(d1 + 1, n - (size_t)(d1 + 1 - pod), isdigit)) {
		snprintf(kind, klen, "StatefulSet");
		snprintf(owner, olen, "%.*s", (int)(d1 - pod), pod);
	} else if (n - (size_t)(d1 + 1 - pod) == 5 &&
		   all_of(d1 + 1, 5, is_k8s_suffix)) {
		/* NAME-<hash>-xxxxx: a ReplicaSet's pod, hash 6 to 10 */
		size_t hl = (size_t)(d1 - d2 - 1);

		if (*d2 == '-' && hl >= 6 && hl <= 10 &&
		    all_of(d2 + 1, hl, is_k8s_suffix)) {
			snprintf(kind, klen, "Deployment");
			snprintf(owner, olen, "%.*s", (int)(d2 - pod), pod);
		} else {
			snprintf(owner, olen, "%.*s", (int)(d1 - pod), pod);
		}
	}
}

static const char *jstr(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static struct json_object *jobj(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_object))
		return NULL;
	return v;
}

static struct json_object *read_json(const char *root, const char *rel)
{
	char path[PATH_LEN];

	if (snprintf(path, sizeof(path), "%s/%s", root, rel) >=
	    (int)sizeof(path))
		return NULL;
	return json_object_from_file(path);
}

/* Fill w from a map of labels or annotations under the given keys. */
static int from_map(struct json_object *m, const char *ckey, const char *pkey,
		    const char *nkey, struct cw_workload *w)
{
	const char *c = jstr(m, ckey), *p = jstr(m, pkey), *n = jstr(m, nkey);

	if (!c && !p)
		return -1;
	snprintf(w->container, sizeof(w->container), "%s", c ? c : "");
	snprintf(w->pod, sizeof(w->pod), "%s", p ? p : "");
	snprintf(w->ns, sizeof(w->ns), "%s", n ? n : "");
	return 0;
}

static int from_docker(const char *root, const char *id, struct cw_workload *w)
{
	char rel[PATH_LEN];
	struct json_object *o;
	const char *name;
	int ret = -1;

	snprintf(rel, sizeof(rel),
		 "var/lib/docker/containers/%s/config.v2.json", id);
	o = read_json(root, rel);
	if (!o)
		return -1;
	if (!from_map(jobj(jobj(o, "Config"), "Labels"),
		      "io.kubernetes.container.name", "io.kubernetes.pod.name",
		      "io.kubernetes.pod.namespace", w)) {
		ret = 0;
	} else if ((name = jstr(o, "Name"))) {
		snprintf(w->container, sizeof(w->container), "%s",
			 name[0] == '/' ? name + 1 : name);
		ret = 0;
	}
	if (!ret)
		snprintf(w->runtime, sizeof(w->runtime), "docker");
	json_object_put(o);
	return ret;
}

/* containerd (CRI) and cri-o: an OCI config.json with annotations. */
static int from_oci(const char *root, const char *fmt, const char *id,
		    const char *runtime, const char *ckey, const char *pkey,
		    const char *nkey, struct cw_workload *w)
{
	char rel[PATH_LEN];
	struct json_object *o;
	int ret;

	snprintf(rel, sizeof(rel), fmt, id);
	o = read_json(root, rel);
	if (!o)
		return -1;
	ret = from_map(jobj(o, "annotations"), ckey, pkey, nkey, w);
	if (!ret)
		snprintf(w->runtime, sizeof(w->runtime), "%s", runtime);
	json_object_put(o);
	return ret;
}

/* var/log/containers/POD_NS_CONTAINER-ID.log, the kubelet's links. */
static int from_kubelet(const char *root, const char *id, struct cw_workload *w)
{
	char path[PATH_LEN], want[160];
	struct dirent *e;
	DIR *d;
	int ret = -1;

	snprintf(path, sizeof(path), "%s/var/log/containers", root);
	snprintf(want, sizeof(want), "-%s.log", id);
	d = opendir(path);
	if (!d)
		return -1;
	while (ret && (e = readdir(d))) {
		size_t n = strlen(e->d_name), wl = strlen(want);
		char *a, *b;

		if (n <= wl || strcmp(e->d_name + n - wl, want))
			continue;
		e->d_name[n - wl] = '\0';
		a = strchr(e->d_name, '_');
		b = a ? strchr(a + 1, '_') : NULL;
		if (!b)
			continue;
		snprintf(w->pod, sizeof(w->pod), "%.*s", (int)(a - e->d_name),
			 e->d_name);
		snprintf(w->ns, sizeof(w->ns), "%.*s", (int)(b - a - 1), a + 1);
		snprintf(w->container, sizeof(w->container), "%s", b + 1);
		snprintf(w->runtime, sizeof(w->runtime), "kubelet");
		ret = 0;
	}
	closedir(d);
	return ret;
}

int cw_workload_lookup(const char *root, const char *container_id,
		       struct cw_workload *w)
{
	memset(w, 0, sizeof(*w));
	if (!all_of(container_id, strlen(container_id), isxdigit))
		return -1; /* never a path component from elsewhere */
	if (from_docker(root, container_id, w) &&
	    from_oci(root,
		     "run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/"
		     "config.json",
		     container_id, "containerd",
		     "io.kubernetes.cri.container-name",
		     "io.kubernetes.cri.sandbox-name",
		     "io.kubernetes.cri.sandbox-namespace", w) &&
	    from_oci(
		    root,
		    "var/lib/containers/storage/overlay-containers/%s/userdata/"
		    "config.json",
		    container_id, "cri-o", "io.kubernetes.container.name",
		    "io.kubernetes.pod.name", "io.kubernetes.pod.namespace",
		    w) &&
	    from_kubelet(root, container_id, w))
		return -1;
	if (w->pod[0])
		cw_workload_owner(w->pod, w->owner_kind, sizeof(w->owner_kind),
				  w->owner, sizeof(w->owner));
	return 0;
}

/* ---- the agent's lookups ---------------------------------------------- */

#define WORKLOAD_CACHE_MAX 4096

static char runtime_root[PATH_LEN / 2];
static bool root_set;

struct id_key {
	char id[72]; /* 64 hex digits, zero-padded: hashed 8 bytes a time */
};

struct id_val {
	bool found;
	struct cw_workload w;
};

static struct cw_htab id_cache;
static bool id_cache_ready;

void cw_workload_set_root(const char *root)
{
	const char *env = getenv("CAUSEWAY_RUNTIME_ROOT");

	if (!root)
		root = env && *env ? env : "/";
	snprintf(runtime_root, sizeof(runtime_root), "%s", root);
	root_set = true;
	/* What was found under another root is not this root's. */
	if (id_cache_ready)
		cw_htab_release(&id_cache);
	id_cache_ready = false;
}

const char *cw_workload_root(void)
{
	if (!root_set)
		cw_workload_set_root(NULL);
	return runtime_root;
}

/* The lookup of id, remembered (found or not); NULL when out of memory. */
static const struct id_val *lookup_cached(const char *id)
{
	struct id_key k;
	struct id_val *v;
	bool created;

	if (!id_cache_ready || id_cache.len >= WORKLOAD_CACHE_MAX) {
		if (id_cache_ready)
			cw_htab_release(&id_cache);
		cw_htab_init(&id_cache, sizeof(k), sizeof(*v));
		id_cache_ready = true;
	}
	memset(&k, 0, sizeof(k));
	snprintf(k.id, sizeof(k.id), "%s", id);
	v = cw_htab_upsert(&id_cache, &k, &created);
	if (v && created)
		v->found = !cw_workload_lookup(cw_workload_root(), k.id, &v->w);
	return v;
}

static void copy_cut(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%.*s", (int)len - 1, src);
}

void cw_workload_fill(struct cw_process *p)
{
	const struct id_val *v;

	if (!p->container[0] || strlen(p->container) >= sizeof(struct id_key))
		return;
	v = lookup_cached(p->container);
	if (!v || !v->found)
		return;
	/* Cut to the record's room (the wire carries at most that). */
	copy_cut(p->container_name, sizeof(p->container_name), v->w.container);
	copy_cut(p->pod_name, sizeof(p->pod_name), v->w.pod);
	copy_cut(p->pod_ns, sizeof(p->pod_ns), v->w.ns);
	copy_cut(p->workload_kind, sizeof(p->workload_kind), v->w.owner_kind);
	copy_cut(p->workload, sizeof(p->workload), v->w.owner);
}
