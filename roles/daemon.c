/* daemon.c — see daemon.h. */
#define _GNU_SOURCE
#include "roles/daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"

static volatile sig_atomic_t g_stop = 0;

static void on_signal(int sig) {
    (void)sig;
    g_stop = 1;
}

int daemon_stopping(void) {
    return g_stop != 0;
}
void daemon_request_stop(void) {
    g_stop = 1;
}

int daemon_sockopts(const job_config *job, daemon_side side, wire_sockopts *o, char *err,
                    size_t errlen) {
    wire_sockopts_init(o);
    o->max_msg_bytes = job->wire.max_msg_bytes;
    o->linger_ms = job->wire.linger_ms;
    o->sndhwm = o->rcvhwm = job->wire.hwm;
    o->heartbeat_ivl_ms = job->wire.heartbeat_ms;
    o->heartbeat_timeout_ms = job->wire.heartbeat_timeout_ms;
    const char *pub = job->endpoints.curve_public, *sec = job->endpoints.curve_secret;
    if (side == DAEMON_SERVER)
        return sec[0] ? wire_sockopts_curve_server(o, pub, sec, err, errlen) : 0;
    if (!job->endpoints.curve_server_key[0]) return 0;
    char fresh_pub[41], fresh_sec[41];
    if (!sec[0]) {
        if (wire_curve_keypair(fresh_pub, fresh_sec, err, errlen)) return -1;
        pub = fresh_pub;
        sec = fresh_sec;
    }
    return wire_sockopts_curve_client(o, pub, sec, job->endpoints.curve_server_key, err, errlen);
}

int daemon_init(daemon_args *a, const char *role, int argc, char **argv, const char *usage_extra,
                char *err, size_t errlen) {
    memset(a, 0, sizeof *a);
    a->role = role;
    char host[96] = "host";
    gethostname(host, sizeof host - 1);
    snprintf(a->id, sizeof a->id, "%s-%s-%d", role, host, (int)getpid());
    char **over = calloc((size_t)argc + 1, sizeof(char *));
    if (!over) return seed_errf(err, errlen, "out of memory");
    int n_over = 0;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            printf("usage: seed-%s [--job JOB.yaml] [--id NAME] [key=value ...]\n%s", role,
                   usage_extra ? usage_extra : "");
            free(over);
            return 1;
        } else if (!strcmp(arg, "--job") || !strcmp(arg, "--id")) {
            if (i + 1 >= argc) {
                free(over);
                return seed_errf(err, errlen, "%s needs a value", arg);
            }
            if (!strcmp(arg, "--job"))
                snprintf(a->job_path, sizeof a->job_path, "%s", argv[++i]);
            else
                snprintf(a->id, sizeof a->id, "%s", argv[++i]);
        } else if (strchr(arg, '=') && arg[0] != '-') {
            over[n_over++] = argv[i];
        } else {
            free(over);
            return seed_errf(err, errlen,
                             "unknown argument '%s' (expected --job FILE, --id NAME or key=value)",
                             arg);
        }
    }
    int rc = job_build(&a->job, a->job_path[0] ? a->job_path : NULL, n_over, over, err, errlen);
    free(over);
    if (rc) return rc;
    seed_log_set_level(a->job.job.log_level);
    seed_log_set_tag(a->id);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

void *daemon_connect(void *ctx, const job_config *job, int type, const char *name, int hwm,
                     char *err, size_t errlen) {
    wire_sockopts o;
    if (daemon_sockopts(job, DAEMON_CLIENT, &o, err, errlen)) return NULL;
    if (hwm > 0) {
        /* a back-pressure socket: see learner_main.c's bind_socket */
        o.rcvhwm = o.sndhwm = hwm;
        o.sndbuf = o.rcvbuf = 64 << 10;
        o.heartbeat_ivl_ms = 0;
    }
    char ep[JOB_ENDPOINT_LEN];
    if (job_endpoint(job, name, 0, ep, sizeof ep, err, errlen)) return NULL;
    void *s = wire_socket(ctx, type, &o, err, errlen);
    if (s && wire_connect(s, ep, err, errlen)) {
        wire_close(s);
        return NULL;
    }
    return s;
}
