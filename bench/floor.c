// SPDX-License-Identifier: MIT
/*
 * Loads bench/floor.bpf.o, attaches its empty programs, prints "attached"
 * and holds them until SIGINT or SIGTERM.
 *
 *	floor build/bench/floor.bpf.o
 */
#include <bpf/libbpf.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_link *links[2] = {0};
	int n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: floor OBJ\n");
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "floor: unable to load '%s'\n", argv[1]);
		return 1;
	}
	bpf_object__for_each_program(prog, obj)
	{
		if (n == 2)
			break;
		links[n] = bpf_program__attach(prog);
		if (!links[n++]) {
			fprintf(stderr, "floor: unable to attach '%s'\n",
				bpf_program__name(prog));
			return 1;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	printf("attached\n");
	fflush(stdout);
	while (!stop)
		pause();
	while (n-- > 0)
		bpf_link__destroy(links[n]);
	bpf_object__close(obj);
	return 0;
}
