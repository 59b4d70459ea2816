// SPDX-License-Identifier: MIT
/*
 * The agent's privilege drop, in a child process: after
 * cw_drop_privileges("nobody") a root-only file can be neither read nor
 * written, and a program it executes starts with no capability at all
 * (empty bounding set, NO_NEW_PRIVS).  Without --user (NULL) the process
 * stays uid 0 but an exec still regains nothing.  Needs root: as another
 * user there is nothing to drop: the test skips (77).
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/util.h"
#include "check.h"

#define STEADY ((1ULL << 39) | (1ULL << 38) | (1ULL << 12))

/* "CapEff:\t000000c000001000" from a status file's text. */
static unsigned long long status_hex(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtoull(p + strlen(key) + 1, NULL, 16) : ~0ULL;
}

/* What an executed program holds: its own /proc/self/status. */
static int exec_status(char *buf, size_t len)
{
	int fd[2];
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(fd[1], 1);
		execl("/bin/cat", "cat", "/proc/self/status", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while ((n = read(fd[0], buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = 0;
	close(fd[0]);
	waitpid(pid, NULL, 0);
	return got > 0 ? 0 : -1;
}

/* In the child: 0 if everything holds, else the number of the check. */
static int child(const char *user, const char *secret)
{
	char self[4096], after[4096];
	int fd;

	if (cw_drop_privileges(user))
		return 1;
	if (cw_read_file("/proc/self/status", self, sizeof(self)) <= 0)
		return 2;
	if (status_hex(self, "CapEff:") != STEADY ||
	    status_hex(self, "CapPrm:") != STEADY ||
	    status_hex(self, "CapBnd:") != 0 || !strstr(self, "NoNewPrivs:\t1"))
		return 3;
	if (user) {
		fd = open(secret, O_RDWR);
		if (fd >= 0 || errno != EACCES)
			return 4;
	}
	if (exec_status(after, sizeof(after)) ||
	    status_hex(after, "CapEff:") != 0 ||
	    status_hex(after, "CapPrm:") != 0)
		return 5;
	return 0;
}

static int run_child(const char *user, const char *secret)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(child(user, secret));
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	if (WEXITSTATUS(status))
		fprintf(stderr, "%s: check %d failed\n", user ? user : "root",
			WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

int main(void)
{
	char secret[] = "/tmp/cw-root-only.XXXXXX";
	int fd;

	if (geteuid() != 0 || !getpwnam("nobody")) {
		printf("SKIP: needs root and a user 'nobody'\n");
		return 77;
	}
	fd = mkstemp(secret);
	CHECK(fd >= 0);
	CHECK(fchmod(fd, 0600) == 0);
	close(fd);
	/* Root itself opens it: the check below is about the drop. */
	fd = open(secret, O_RDWR);
	CHECK(fd >= 0);
	close(fd);
	CHECK(run_child("nobody", secret) == 0);
	CHECK(run_child(NULL, secret) == 0);
	/* An unknown user is refused before anything is dropped. */
	CHECK(run_child("no-such-user-cw", secret) == 1);
	unlink(secret);
	return failures ? 1 : 0;
}
