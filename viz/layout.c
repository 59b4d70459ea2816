// SPDX-License-Identifier: MIT
/*
 * A layout that can be stopped: DOT source laid out by Graphviz's dot and
 * rendered as SVG in a child process, so that a layout too slow (dot is
 * superlinear in edges with labels: 690 edges take half a minute) or too
 * large is killed instead of holding a thread and its memory for ever.
 * Graphviz cannot be cancelled in-thread; a process can.
 */
#include <errno.h>
#include <fcntl.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "viz/viz.h"

/* Write all of buf to fd; 0 or -1. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n, len -= (size_t)n;
	}
	return 0;
}

/* This process's data segment now (RLIMIT_DATA counts it), or 0. */
static size_t data_bytes(void)
{
	unsigned long size, rss, shared, text, lib, data = 0;
	char buf[256];
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu %lu %lu %lu %lu", &size, &rss, &shared, &text,
		   &lib, &data) != 6)
		return 0;
	return data * (size_t)sysconf(_SC_PAGESIZE);
}

/*
 * The child: lay out, render, write "S" and the SVG (or "E" and why) to
 * fd, and exit.  It never returns, and touches nothing of the parent's but
 * the DOT text.
 */
static void __attribute__((noreturn))
child(int fd, const char *dot, size_t mem_bytes)
{
	unsigned int n = 0;
	char *data = NULL;
	const char *why = "unable to read the DOT source";
	struct rlimit rl;
	GVC_t *gvc;
	Agraph_t *g;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* Keep none of the parent's sockets open (a client's connection
	 * would outlive its answer): only stdio and the pipe, as fd 3. */
	if (fd != 3 && dup2(fd, 3) == 3)
		fd = 3;
	if (fd == 3)
		close_range(4, ~0U, 0);
	/* The bound is on what the layout adds to the copy of the parent. */
	if (mem_bytes) {
		rl.rlim_cur = rl.rlim_max = data_bytes() + mem_bytes;
		setrlimit(RLIMIT_DATA, &rl);
	}
	agseterr(AGMAX);
	gvc = gvContext();
	g = gvc ? agmemread(dot) : NULL;
	if (g) {
		why = "layout failed";
		if (!gvLayout(gvc, g, "dot")) {
			why = "unable to render SVG";
			if (!gvRenderData(gvc, g, "svg", &data, &n) && data &&
			    !write_all(fd, "S", 1) && !write_all(fd, data, n))
				_exit(0);
		}
	}
	if (!write_all(fd, "E", 1))
		write_all(fd, why, strlen(why));
	_exit(1);
}

/* Read what the child says until it closes the pipe, the time is up or
 * the caller gives up.  0, or an enum cw_viz_layout_status. */
static int collect(int fd, const struct cw_viz_layout_opts *o, char **buf,
		   size_t *len)
{
	uint64_t start = cw_now_mono_ns(), now;
	size_t cap = 0;
	char chunk[65536];

	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		now = cw_now_mono_ns();
		if (o->timeout_ms &&
		    now - start >= (uint64_t)o->timeout_ms * 1000000)
			return CW_VIZ_LAYOUT_TIMEOUT;
		if (o->cancelled && o->cancelled(o->arg))
			return CW_VIZ_LAYOUT_CANCELLED;
		if (poll(&p, 1, 100) < 0 && errno != EINTR)
			return CW_VIZ_LAYOUT_FAILED;
		if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return CW_VIZ_LAYOUT_FAILED;
		if (!n)
			return 0;
		if (o->max_svg_bytes && *len + (size_t)n > o->max_svg_bytes)
			return CW_VIZ_LAYOUT_TOO_LARGE;
		if (CW_GROW(*buf, cap, *len + (size_t)n + 1, 65536))
			return CW_VIZ_LAYOUT_FAILED;
		memcpy(*buf + *len, chunk, (size_t)n);
		*len += (size_t)n;
	}
}

static const char *status_text(int st)
{
	switch (st) {
	case CW_VIZ_LAYOUT_TIMEOUT:
		return "took longer than its time bound and was stopped";
	case CW_VIZ_LAYOUT_CANCELLED:
		return "was stopped: nobody waits for it any more";
	case CW_VIZ_LAYOUT_TOO_LARGE:
		return "made an SVG larger than its size bound and was stopped";
	default:
		return "failed";
	}
}

int cw_viz_layout_svg(const char *dot, const struct cw_viz_layout_opts *o,
		      char **svg, size_t *svglen, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int fds[2], st, ret, wst = 0;
	pid_t pid;

	*svg = NULL, *svglen = 0;
	if (pipe2(fds, O_CLOEXEC)) {
		snprintf(err, errlen, "unable to make a pipe: %s",
			 strerror(errno));
		return CW_VIZ_LAYOUT_FAILED;
	}
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "unable to start the layout: %s",
			 strerror(errno));
		close(fds[0]), close(fds[1]);
		return CW_VIZ_LAYOUT_FAILED;
	}
	if (!pid) {
		close(fds[0]);
		child(fds[1], dot, o->mem_bytes);
	}
	close(fds[1]);
	st = collect(fds[0], o, &buf, &len);
	close(fds[0]);
	if (st)
		kill(pid, SIGKILL);
	while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
		;
	ret = st;
	if (!st && len > 1 && buf[0] == 'S' && WIFEXITED(wst) &&
	    !WEXITSTATUS(wst)) {
		memmove(buf, buf + 1, len - 1);
		buf[len - 1] = '\0';
		*svg = buf, *svglen = len - 1;
		return 0;
	}
	if (!st && len > 1 && buf[0] == 'E')
		snprintf(err, errlen, "graphviz: %.*s", (int)(len - 1),
			 buf + 1);
	else if (!st && WIFSIGNALED(wst))
		snprintf(err, errlen, "the layout died of signal %d%s",
			 WTERMSIG(wst),
			 o->mem_bytes ? " (out of its memory bound?)" : "");
	else
		snprintf(err, errlen, "the layout %s", status_text(st));
	free(buf);
	return ret ? ret : CW_VIZ_LAYOUT_FAILED;
}
