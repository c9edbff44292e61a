/* seedctl.c — the operator's command: run a whole job on this machine and watch it.
 *
 *   seedctl launch [JOB.yaml] [key=value ...] [--bin-dir DIR] [--quiet]
 *   seedctl status [ENDPOINT] [--run DIR | --job JOB.yaml] [key=value ...] [--json]
 *                  [--watch SECONDS] [--timeout MS]
 *   seedctl scale actors=N [analyzers=M] [--run DIR] [--timeout MS]
 *   seedctl stop [--run DIR] [--timeout SECONDS]
 *   seedctl ps [--run DIR] [--json]
 *   seedctl config [JOB.yaml] [key=value ...] [--json | --defaults | --keys]
 *   seedctl plot RUN [RUN...] [-o FILE.png]   (deploy/plot.c)
 *   seedctl eval [MODEL_DIR] [--env NAME] [--split S] [--episodes N] ...   (deploy/eval.c)
 *   seedctl keygen NAME [--force]
 *
 *
 * This file: the command table, the helpers every command shares (seedctl.h), config and
 * keygen. The clients of a running job are in seedctl_client.c, the supervisor in
 * seedctl_launch.c. */
#define _GNU_SOURCE
#include "deploy/seedctl.h"

#include "roles/daemon.h"
#include "common/job.h"
#include "common/util.h"
#include "deploy/eval.h"
#include "deploy/plot.h"
#include "proto/zap.h"
#include "proto/wire.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static const char USAGE[] =
    "usage:\n"
    "  seedctl launch [JOB.yaml] [key=value ...] [--bin-dir DIR] [--quiet]\n"
    "      run every role of the job on this machine and supervise them\n"
    "  seedctl status [ENDPOINT] [--run DIR | --job JOB.yaml] [key=value ...] [--json]\n"
    "                 [--watch SECONDS] [--timeout MS]\n"
    "      ask the learner for its status (default: the running launch, else the job's\n"
    "      status endpoint)\n"
    "  seedctl scale actors=N [analyzers=M] [--run DIR] [--timeout MS]\n"
    "      start or stop actors/analyzers of a running launch\n"
    "  seedctl stop [--run DIR] [--timeout SECONDS]\n"
    "      stop a running launch cleanly (learner first, it checkpoints)\n"
    "  seedctl ps [--run DIR] [--json]\n"
    "      the processes a running launch supervises\n"
    "  seedctl config [JOB.yaml] [key=value ...] [--json | --defaults | --keys]\n"
    "      print the effective job config, the embedded defaults, or every key\n"
    "  seedctl plot RUN [RUN...] [-o FILE.png]\n"
    "      success against env steps and wall time of runs, overlaid (gnuplot)\n"
    "  seedctl eval [MODEL_DIR] [--env NAME] [--split train|seen|unseen] [--episodes N]\n"
    "               [--seed S] [--temperature T] [--batch B] [--expert] [--skills] [--json]\n"
    "               [--trace FILE]\n"
    "      a checkpoint on a fixed seeded task set, without skills: success per family\n"
    "      (--trace: every episode's observations, replies and actions as JSON lines)\n"
    "  seedctl keygen NAME [--force]\n"
    "      write a CURVE key pair: NAME.key (secret) and NAME.pub (public), mode 0600\n"
    "Without JOB.yaml the embedded default job runs (deploy/jobs/default.yaml).\n"
    "--run DIR defaults to the one running launch under ./runs.\n";

/* ====================================================================================
 * Small helpers
 * ==================================================================================== */

int seedctl_usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "seedctl: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(seedctl --help for usage)\n");
    va_end(ap);
    return EXIT_USAGE;
}

int seedctl_fail(const char *err) {
    fprintf(stderr, "seedctl: %s\n", err);
    return 1;
}

/* A path into a JSON object: "throughput.tokens_per_s.rollout". */
const cJSON *seedctl_jget(const cJSON *o, const char *path) {
    char key[128];
    while (o && *path) {
        const char *dot = strchr(path, '.');
        size_t l = dot ? (size_t)(dot - path) : strlen(path);
        if (l >= sizeof key) return NULL;
        memcpy(key, path, l);
        key[l] = 0;
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        path += l + (dot ? 1 : 0);
    }
    return o;
}

int seedctl_jnum(const cJSON *o, const char *path, double *out) {
    const cJSON *v = seedctl_jget(o, path);
    if (!cJSON_IsNumber(v)) return 0;
    *out = v->valuedouble;
    return 1;
}

const char *seedctl_jstr(const cJSON *o, const char *path) {
    const cJSON *v = seedctl_jget(o, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A number for people: 12, 3.46, 1.2e-05, 12.3k. */
const char *seedctl_human(double v, char *buf, size_t n) {
    double a = fabs(v);
    if (v == floor(v) && a < 1e6)
        snprintf(buf, n, "%.0f", v);
    else if (a >= 1e6)
        snprintf(buf, n, "%.3gM", v / 1e6);
    else if (a >= 1e4)
        snprintf(buf, n, "%.1fk", v / 1e3);
    else if (a >= 0.01 || a == 0)
        snprintf(buf, n, "%.3g", v);
    else
        snprintf(buf, n, "%.2e", v);
    return buf;
}

/* Alive and not a zombie (a launcher whose parent has not reaped it is gone for us). */
int seedctl_pid_alive(pid_t pid) {
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) return 0;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *rp = strrchr(buf, ')');
    return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

void seedctl_exe_dir(char *buf, size_t n) {
    ssize_t l = readlink("/proc/self/exe", buf, n - 1);
    if (l <= 0) {
        snprintf(buf, n, ".");
        return;
    }
    buf[l] = 0;
    char *s = strrchr(buf, '/');
    if (s) *s = 0;
}

int seedctl_sockopts(const job_config *job, wire_sockopts *o, char *err, size_t errlen) {
    if (daemon_sockopts(job, DAEMON_CLIENT, o, err, errlen)) return -1;
    o->linger_ms = 0; /* seedctl never has anything worth waiting for on close */
    return 0;
}

/* ====================================================================================
 * seedctl config
 * ==================================================================================== */

static int cmd_config(int argc, char **argv) {
    const char *path = NULL;
    int mode = 0; /* 0 yaml, 1 json, 2 defaults, 3 keys */
    char **over = calloc((size_t)argc + 1, sizeof *over);
    int n_over = 0;
    if (!over) return seedctl_fail("out of memory");
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            mode = 1;
        else if (!strcmp(argv[i], "--defaults"))
            mode = 2;
        else if (!strcmp(argv[i], "--keys"))
            mode = 3;
        else if (argv[i][0] == '-')
            return free(over), seedctl_usage_error("config: unknown option '%s'", argv[i]);
        else if (strchr(argv[i], '='))
            over[n_over++] = argv[i];
        else if (!path)
            path = argv[i];
        else
            return free(over),
                   seedctl_usage_error("config: one JOB.yaml only, got '%s' too", argv[i]);
    }
    if (mode == 3) {
        free(over);
        for (int i = 0; i < job_key_count(); i++) {
            const char *name, *doc;
            char exp[256];
            job_key_info(i, &name, exp, sizeof exp, &doc);
            printf("%-34s %s\n%-34s   accepts %s\n", name, doc, "", exp);
        }
        return 0;
    }
    job_config *job = malloc(sizeof *job);
    char err[SEED_ERRLEN];
    if (!job) return free(over), seedctl_fail("out of memory");
    int rc = 0;
    if (mode == 2)
        job_defaults(job);
    else
        rc = job_build(job, path, n_over, over, err, sizeof err);
    free(over);
    if (rc) return free(job), seedctl_fail(err);
    char *out = mode == 1 ? job_to_json(job, 1) : job_to_yaml(job, JOB_YAML_COMMENTS);
    free(job);
    if (!out) return seedctl_fail("out of memory");
    printf("%s%s", out, mode == 1 ? "\n" : "");
    free(out);
    return 0;
}

/* ====================================================================================
 * seedctl keygen
 * ==================================================================================== */

/* One line into a new file of mode 0600 (O_EXCL unless force: a key is never silently
 * replaced), synced. */
static int write_key_file(const char *path, const char *line, int force, char *err, size_t errlen) {
    if (force) unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return seed_errf(err, errlen, "cannot create %s: %s%s", path, strerror(errno),
                         errno == EEXIST ? " (--force replaces it)" : "");
    size_t n = strlen(line);
    int ok = write(fd, line, n) == (ssize_t)n && write(fd, "\n", 1) == 1 && fchmod(fd, 0600) == 0 &&
             fsync(fd) == 0;
    int e = errno;
    close(fd);
    if (!ok) return seed_errf(err, errlen, "cannot write %s: %s", path, strerror(e));
    return 0;
}

static int cmd_keygen(int argc, char **argv) {
    const char *name = NULL;
    int force = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--force"))
            force = 1;
        else if (argv[i][0] == '-')
            return seedctl_usage_error("keygen: unknown option '%s'", argv[i]);
        else if (!name)
            name = argv[i];
        else
            return seedctl_usage_error("keygen: one NAME only, got '%s' too", argv[i]);
    }
    if (!name || !*name)
        return seedctl_usage_error("keygen: expected NAME (writes NAME.key and NAME.pub)");
    char pub[41], sec[41], err[SEED_ERRLEN], kpath[PATH_MAX], ppath[PATH_MAX];
    snprintf(kpath, sizeof kpath, "%s.key", name);
    snprintf(ppath, sizeof ppath, "%s.pub", name);
    if (wire_curve_keypair(pub, sec, err, sizeof err)) return seedctl_fail(err);
    if (write_key_file(kpath, sec, force, err, sizeof err) ||
        write_key_file(ppath, pub, force, err, sizeof err))
        return seedctl_fail(err);
    printf("CURVE key pair: %s (secret, 0600) and %s (public)\n", kpath, ppath);
    printf("public key: %s\n", pub);
    printf("learner:  endpoints.curve_public: \"%s\" and endpoints.curve_secret: the line of %s\n",
           pub, kpath);
    printf("clients:  endpoints.curve_server_key: the learner's public key; their own pair's "
           "public key goes into the learner's endpoints.curve_allowed_keys file\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        fputs(USAGE, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_USAGE : 0;
    }
    const char *cmd = argv[1];
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(USAGE, stdout);
            return 0;
        }
    if (!strcmp(cmd, "launch")) return seedctl_launch(argc - 2, argv + 2);
    if (!strcmp(cmd, "status")) return seedctl_status(argc - 2, argv + 2);
    if (!strcmp(cmd, "scale")) return seedctl_scale(argc - 2, argv + 2);
    if (!strcmp(cmd, "stop")) return seedctl_stop(argc - 2, argv + 2);
    if (!strcmp(cmd, "ps")) return seedctl_ps(argc - 2, argv + 2);
    if (!strcmp(cmd, "config")) return cmd_config(argc - 2, argv + 2);
    if (!strcmp(cmd, "plot")) return seedctl_plot(argc - 2, argv + 2);
    if (!strcmp(cmd, "eval")) return seedctl_eval(argc - 2, argv + 2);
    if (!strcmp(cmd, "keygen")) return cmd_keygen(argc - 2, argv + 2);
    return seedctl_usage_error(
        "unknown command '%s' (launch, status, scale, stop, ps, config, plot, keygen)", cmd);
}
