/* seedctl.h — what the files of seedctl share: seedctl.c (the command table, config,
 * keygen and these helpers), seedctl_client.c (status, scale, stop, ps: clients of a
 * running job) and seedctl_launch.c (launch: the supervisor). Internal to the seedctl
 * program; eval.h and plot.h are its other commands.
 *
 * Contract: the commands take the arguments after their name and return the process's
 * exit status (0, 1 on failure, EXIT_USAGE on a bad command line, which seedctl_usage_error
 * prints). Helpers that can fail return 0 or -1 with a sentence in err. */
#ifndef SEED_DEPLOY_SEEDCTL_H
#define SEED_DEPLOY_SEEDCTL_H

#include <cjson/cJSON.h>
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "common/job.h"
#include "proto/wire.h"

enum { EXIT_USAGE = 2, MAX_PER_ROLE = 1024, RPC_TIMEOUT_MS = 5000 };

/* the commands */
int seedctl_launch(int argc, char **argv);
int seedctl_status(int argc, char **argv);
int seedctl_scale(int argc, char **argv);
int seedctl_stop(int argc, char **argv);
int seedctl_ps(int argc, char **argv);

/* "seedctl: <sentence>" and the usage hint on stderr; returns EXIT_USAGE */
int seedctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "seedctl: <err>" on stderr; returns 1 */
int seedctl_fail(const char *err);
/* A path into a JSON object: "throughput.tokens_per_s.rollout"; NULL when absent. */
const cJSON *seedctl_jget(const cJSON *o, const char *path);
int seedctl_jnum(const cJSON *o, const char *path, double *out); /* 1 when a number is there */
const char *seedctl_jstr(const cJSON *o, const char *path);      /* NULL unless a string */
/* A number for people: 12, 3.46, 1.2e-05, 12.3k. */
const char *seedctl_human(double v, char *buf, size_t n);
/* Alive and not a zombie. */
int seedctl_pid_alive(pid_t pid);
/* The directory of the running executable ("." when /proc cannot say). */
void seedctl_exe_dir(char *buf, size_t n);
/* The job's client socket options (roles/daemon.h), with linger 0: seedctl never has
 * anything worth waiting for on close. */
int seedctl_sockopts(const job_config *job, wire_sockopts *o, char *err, size_t errlen);

/* A running launch, as its <run_dir>/seedctl.json names it. */
typedef struct launch_ref {
    char run_dir[PATH_MAX];
    char control[512];
    char status[512];
    char job[JOB_NAME_LEN];
    pid_t pid;
} launch_ref;
/* Read <run_dir>/seedctl.json. */
int seedctl_read_launch(const char *run_dir, launch_ref *r, char *err, size_t errlen);
/* The launch of run_dir, or (run_dir NULL) the one running launch under ./runs. */
int seedctl_find_launch(const char *run_dir, launch_ref *r, char *err, size_t errlen);

#endif
