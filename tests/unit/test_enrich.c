// SPDX-License-Identifier: MIT
/*
 * Container ids and pod uids from the cgroup paths that docker,
 * containerd, cri-o and the kubelet (cgroupfs and systemd drivers) write.
 */
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"

#define ID   "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID  "5d3c1f0e-8a7b-4c6d-9e8f-0a1b2c3d4e5f"
#define UID_ "5d3c1f0e_8a7b_4c6d_9e8f_0a1b2c3d4e5f"

static const struct {
	const char *path, *container, *pod;
} cases[] = {
	{"/docker/" ID, ID, ""},
	{"/system.slice/docker-" ID ".scope", ID, ""},
	{"/system.slice/containerd.service/cri-containerd-" ID ".scope", ID,
	 ""},
	{"/machine.slice/crio-" ID ".scope", ID, ""},
	{"/kubepods/burstable/pod" UID "/" ID, ID, UID},
	{"/kubepods.slice/kubepods-besteffort.slice/"
	 "kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	 ID, UID},
	{"/kubepods.slice/kubepods-pod" UID_ ".slice", "", UID},
	{"/user.slice/user-1000.slice/session-2.scope", "", ""},
	{"/", "", ""},
	/* 63 hex digits are not an id; a pod uid outside kubepods is not one */
	{"/docker/"
	 "123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	 "", ""},
	{"/podman/pod" UID, "", ""},
};

int main(void)
{
	char container[CW_CONTAINER_MAX], pod[CW_POD_MAX];
	size_t i, failed = 0;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cw_parse_cgroup_path(cases[i].path, container,
				     sizeof(container), pod, sizeof(pod));
		if (strcmp(container, cases[i].container) ||
		    strcmp(pod, cases[i].pod)) {
			printf("FAIL %s: container '%s' pod '%s', want '%s' "
			       "'%s'\n",
			       cases[i].path, container, pod,
			       cases[i].container, cases[i].pod);
			failed++;
		}
	}
	printf("%zu cgroup paths, %zu wrong\n", i, failed);
	return failed ? 1 : 0;
}
