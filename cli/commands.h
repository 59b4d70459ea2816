/* SPDX-License-Identifier: MIT */
/*
 * Subcommands of the causeway binary.  Each takes argc/argv with argv[0] the
 * subcommand's name and returns the process exit status: 0 success, 1 a
 * runtime failure, 2 bad usage.
 */
#ifndef CW_CLI_COMMANDS_H
#define CW_CLI_COMMANDS_H

#define CW_VERSION "0.1.0"

int cmd_probe(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_correlate(int argc, char **argv);
int cmd_broker(int argc, char **argv);
int cmd_paths(int argc, char **argv);
int cmd_traces(int argc, char **argv);
int cmd_samples(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_place(int argc, char **argv);

#endif
