// SPDX-License-Identifier: MIT
/*
 * Privilege drop.  Loading and attaching need root; the steady state needs
 * three capabilities, so after attaching the agent keeps only those, may
 * become an unprivileged user, empties its bounding set (no exec can
 * regain a capability) and sets NO_NEW_PRIVS (no set-uid or file
 * capability either).
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "agent/agent.h"
#include "common/log.h"
#include "common/util.h"

/*
 * What the running agent still does, and needs:
 *  CAP_BPF       map reads, the iterators, the sampler's programs loaded
 *                every run, timing programs attached per window;
 *  CAP_PERFMON   attaching tracing programs (tp_btf) for windows;
 *  CAP_NET_ADMIN the sampler's tc (clsact) hooks and conntrack queries.
 */
static const cap_value_t steady[] = {CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN};

int cw_drop_caps(const int *keep, int n)
{
	cap_value_t vals[16];
	cap_t caps = cap_init();
	int i, err = 0;

	if (!caps || n > 16)
		return cw_error("unable to build capability set");
	for (i = 0; i < n; i++)
		vals[i] = keep[i];
	if (cap_set_flag(caps, CAP_PERMITTED, n, vals, CAP_SET) ||
	    cap_set_flag(caps, CAP_EFFECTIVE, n, vals, CAP_SET) ||
	    cap_set_proc(caps))
		err = cw_error("unable to drop capabilities: %m");
	cap_free(caps);
	return err;
}

/* Empty the bounding set: needs CAP_SETPCAP, so before the caps go. */
static int clear_bounding_set(void)
{
	cap_value_t c;

	for (c = 0; c <= CAP_LAST_CAP; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return cw_error("unable to clear the capability "
					"bounding set: %m");
	return 0;
}

/* Become user, keeping the permitted capabilities across the switch. */
static int switch_user(const struct passwd *pw)
{
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0))
		return cw_error("unable to keep capabilities: %m");
	if (setgroups(0, NULL) ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid))
		return cw_error("unable to become user '%s': %m", pw->pw_name);
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	return 0;
}

static struct passwd *find_user(const char *user)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(user);
	if (!pw)
		cw_error("user '%s': %s", user,
			 errno ? strerror(errno) : "no such user");
	return pw;
}

int cw_user_lookup(const char *user, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = find_user(user);

	if (!pw)
		return -1;
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	return 0;
}

/* The steady set, less what this process does not have to begin with. */
static int keep_steady(void)
{
	cap_t now = cap_get_proc(), caps = cap_init();
	cap_flag_value_t has;
	size_t i;
	int err = 0;

	if (!now || !caps) {
		err = cw_error("unable to read capabilities: %m");
		goto out;
	}
	for (i = 0; i < CW_ARRAY_SIZE(steady) && !err; i++) {
		if (cap_get_flag(now, steady[i], CAP_PERMITTED, &has) ||
		    has != CAP_SET)
			continue;
		if (cap_set_flag(caps, CAP_PERMITTED, 1, &steady[i], CAP_SET) ||
		    cap_set_flag(caps, CAP_EFFECTIVE, 1, &steady[i], CAP_SET))
			err = cw_error("unable to build capability set: %m");
	}
	if (!err && cap_set_proc(caps))
		err = cw_error("unable to drop capabilities: %m");
out:
	cap_free(now);
	cap_free(caps);
	return err;
}

int cw_drop_privileges(const char *user)
{
	struct passwd *pw = NULL;
	int err;

	if (user && !(pw = find_user(user)))
		return -1;
	/* Each step that can be done is, so a failure leaves the least. */
	err = clear_bounding_set();
	if (pw && switch_user(pw))
		return -1;
	if (keep_steady())
		err = -1;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) &&
	    errno != EINVAL)
		err = cw_error("unable to clear ambient capabilities: %m");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		err = cw_error("unable to set no_new_privs: %m");
	return err;
}
