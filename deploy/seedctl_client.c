/* seedctl_client.c — the commands that talk to a running job: status (the learner's
 * status socket), scale, stop and ps (a launch's control socket).
 *
 * The learner's status reply is one JSON document; the readable summary uses these
 * fields when present and prints any other top-level field as it is: job, run_dir,
 * stage, step, total_steps, version, uptime_s, success, throughput{samples_per_s,
 * tokens_per_s{rollout,scoring,training}}, envs{NAME{success,return,episodes,
 * families{...}}}, loss{total,pg,opd,kl,entropy,abs_qs,clipfrac}, queues{...},
 * counts{...}, peers[{role,id,host,pid,heartbeat_age_s,version}]. */
#define _GNU_SOURCE
#include "deploy/seedctl.h"

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

/* ====================================================================================
 * Request / reply clients (status, control)
 * ==================================================================================== */

/* Send req on a fresh REQ socket to endpoint and wait up to timeout_ms for a StatusReply;
 * its JSON text goes to *json (malloc'd). Returns 0, or -1 with a sentence in err; a
 * silent peer gives "no answer from EP within N ms" (the caller adds the hint). */
static int rpc(void *ctx, const char *endpoint, const wire_sockopts *o, Seed__Envelope *req,
               int timeout_ms, char **json, char *err, size_t errlen) {
    *json = NULL;
    void *s = wire_socket(ctx, ZMQ_REQ, o, err, errlen);
    if (!s) return -1;
    int rc = -1;
    if (wire_connect(s, endpoint, err, errlen)) goto out;
    int r = wire_send(s, req, ZMQ_DONTWAIT, err, errlen);
    if (r == WIRE_AGAIN) {
        seed_errf(err, errlen, "no answer from %s within %d ms", endpoint, timeout_ms);
        goto out;
    }
    if (r < 0) goto out;
    wire_rx rx;
    wire_rx_init(&rx, "reply", WIRE_ACCEPT(SEED__ENVELOPE__BODY_STATUS_REPLY), 0, 0);
    rx.max_bytes = (size_t)(o ? o->max_msg_bytes : WIRE_MAXMSG_DEFAULT);
    double deadline = seed_now() + timeout_ms / 1000.0;
    for (;;) {
        double left = deadline - seed_now();
        if (left <= 0) {
            seed_errf(err, errlen, "no answer from %s within %d ms", endpoint, timeout_ms);
            goto out;
        }
        zmq_pollitem_t it = {s, 0, ZMQ_POLLIN, 0};
        int pr = zmq_poll(&it, 1, (long)(left * 1000) + 1);
        if (pr < 0) {
            if (errno == EINTR) continue;
            seed_errf(err, errlen, "waiting for %s: %s", endpoint, zmq_strerror(errno));
            goto out;
        }
        if (pr == 0) continue;
        Seed__Envelope *rep = NULL;
        int g = wire_recv(&rx, s, &rep, ZMQ_DONTWAIT, err, errlen);
        if (g < 0) goto out;
        if (g == 0) {
            if (rx.c.received) { /* counted, logged and dropped by wire */
                seed_errf(err, errlen, "%s answered with a message that is not a StatusReply",
                          endpoint);
                goto out;
            }
            continue;
        }
        const char *text =
            rep->status_reply && rep->status_reply->json ? rep->status_reply->json : "";
        *json = strdup(text);
        wire_free(rep);
        rc = *json ? 0 : seed_errf(err, errlen, "out of memory");
        goto out;
    }
out:
    wire_close(s);
    return rc;
}

static int status_query(void *ctx, const char *endpoint, const wire_sockopts *o, int timeout_ms,
                        char **json, char *err, size_t errlen) {
    Seed__Envelope envl;
    Seed__StatusRequest sr = SEED__STATUS_REQUEST__INIT;
    wire_envelope_init(&envl, "seedctl");
    envl.body_case = SEED__ENVELOPE__BODY_STATUS_REQUEST;
    envl.status_request = &sr;
    sr.what = "";
    if (rpc(ctx, endpoint, o, &envl, timeout_ms, json, err, errlen) == 0) return 0;
    if (strstr(err, "no answer from")) {
        size_t l = strlen(err);
        snprintf(err + l, errlen > l ? errlen - l : 0, " \u2014 is the learner running?");
    }
    return -1;
}

/* ====================================================================================
 * Finding a running launch (scale, stop, ps, status)
 * ==================================================================================== */

int seedctl_read_launch(const char *run_dir, launch_ref *r, char *err, size_t errlen) {
    char path[PATH_MAX + 32], *text;
    snprintf(path, sizeof path, "%s/seedctl.json", run_dir);
    if (access(path, F_OK) != 0)
        return seed_errf(err, errlen, "no launch in %s (no seedctl.json there)", run_dir);
    if (seed_read_file(path, &text, NULL, err, errlen)) return -1;
    cJSON *j = cJSON_Parse(text);
    free(text);
    double pid = 0;
    const char *ctl = j ? seedctl_jstr(j, "control") : NULL;
    if (!j || !seedctl_jnum(j, "pid", &pid) || !ctl) {
        cJSON_Delete(j);
        return seed_errf(err, errlen, "%s is not a seedctl launch record", path);
    }
    memset(r, 0, sizeof *r);
    snprintf(r->run_dir, sizeof r->run_dir, "%s", run_dir);
    snprintf(r->control, sizeof r->control, "%s", ctl);
    snprintf(r->status, sizeof r->status, "%s",
             seedctl_jstr(j, "status") ? seedctl_jstr(j, "status") : "");
    snprintf(r->job, sizeof r->job, "%s", seedctl_jstr(j, "job") ? seedctl_jstr(j, "job") : "");
    r->pid = (pid_t)pid;
    cJSON_Delete(j);
    if (!seedctl_pid_alive(r->pid))
        return seed_errf(err, errlen, "the launch in %s is not running (seedctl pid %d is gone)",
                         run_dir, (int)r->pid);
    return 0;
}

/* --run DIR, or the single running launch under ./runs. */
int seedctl_find_launch(const char *run_dir, launch_ref *r, char *err, size_t errlen) {
    if (run_dir) return seedctl_read_launch(run_dir, r, err, errlen);
    glob_t g;
    int found = 0;
    char names[1024] = "";
    if (glob("runs/*/seedctl.json", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++) {
            char dir[PATH_MAX];
            snprintf(dir, sizeof dir, "%s", g.gl_pathv[i]);
            *strrchr(dir, '/') = 0;
            launch_ref t;
            char e2[SEED_ERRLEN];
            if (seedctl_read_launch(dir, &t, e2, sizeof e2) != 0) continue;
            if (found++ == 0) *r = t;
            size_t l = strlen(names);
            if (l + strlen(dir) + 3 < sizeof names)
                snprintf(names + l, sizeof names - l, "%s%.*s", l ? ", " : "",
                         (int)(sizeof names - l - 3), dir);
        }
        globfree(&g);
    }
    if (found == 1) return 0;
    if (found == 0)
        return seed_errf(err, errlen, "no running launch found under runs/ (pass --run RUN_DIR)");
    return seed_errf(err, errlen, "%d launches are running (%s); pass --run RUN_DIR", found, names);
}

/* ====================================================================================
 * seedctl status
 * ==================================================================================== */

static void print_age(double s, char *buf, size_t n) {
    if (s < 120)
        snprintf(buf, n, "%.1f s", s);
    else if (s < 7200)
        snprintf(buf, n, "%.0f min", s / 60);
    else
        snprintf(buf, n, "%.1f h", s / 3600);
}

/* One object's numeric fields as "k v  k v". */
static void print_flat(const char *label, const cJSON *o) {
    if (!cJSON_IsObject(o)) return;
    printf("%-10s", label);
    const cJSON *it;
    const char *sep = " ";
    cJSON_ArrayForEach(it, o) {
        char b[48];
        if (cJSON_IsNumber(it))
            printf("%s%s %s", sep, it->string, seedctl_human(it->valuedouble, b, sizeof b));
        else if (cJSON_IsString(it))
            printf("%s%s %s", sep, it->string, it->valuestring);
        else if (cJSON_IsBool(it))
            printf("%s%s %s", sep, it->string, cJSON_IsTrue(it) ? "true" : "false");
        else
            continue;
        sep = "  ";
    }
    printf("\n");
}

static void print_env_row(const char *indent, const char *name, const cJSON *e) {
    char a[32] = "-", b[32] = "-", c[32] = "-";
    double v;
    if (seedctl_jnum(e, "success", &v)) snprintf(a, sizeof a, "%.3f", v);
    if (seedctl_jnum(e, "return", &v)) snprintf(b, sizeof b, "%.3f", v);
    if (seedctl_jnum(e, "episodes", &v)) seedctl_human(v, c, sizeof c);
    printf("%-10s %s%-*s %8s %8s %9s\n", "", indent, (int)(22 - strlen(indent)), name, a, b, c);
}

/* The learner's status for a person. Unknown top-level fields are printed as they are,
 * so nothing the learner reports is hidden. */
static void print_status(const cJSON *j, const char *endpoint) {
    char b1[48], b2[48], b3[48];
    double v, t;
    const char *name = seedctl_jstr(j, "job");
    if (!name) name = seedctl_jstr(j, "config.job.name");
    printf("%-10s %s", "job", name ? name : "?");
    if (seedctl_jstr(j, "run_dir")) printf("   run_dir %s", seedctl_jstr(j, "run_dir"));
    if (seedctl_jnum(j, "uptime_s", &v)) {
        print_age(v, b1, sizeof b1);
        printf("   up %s", b1);
    }
    printf("   (%s)\n", endpoint);
    printf("%-10s", "progress");
    if (seedctl_jstr(j, "stage")) printf(" stage %s ", seedctl_jstr(j, "stage"));
    if (seedctl_jnum(j, "step", &v)) {
        printf(" step %s", seedctl_human(v, b1, sizeof b1));
        if (seedctl_jnum(j, "total_steps", &t)) printf("/%s", seedctl_human(t, b2, sizeof b2));
        printf(" ");
    }
    if (seedctl_jnum(j, "version", &v)) printf(" version %s", seedctl_human(v, b1, sizeof b1));
    printf("\n");
    const cJSON *tp = seedctl_jget(j, "throughput");
    if (cJSON_IsObject(tp)) {
        printf("%-10s", "rates");
        if (seedctl_jnum(tp, "samples_per_s", &v))
            printf(" samples/s %s ", seedctl_human(v, b1, sizeof b1));
        const cJSON *tokps = seedctl_jget(tp, "tokens_per_s");
        if (cJSON_IsObject(tokps)) {
            printf(" tokens/s");
            const cJSON *it;
            cJSON_ArrayForEach(it, tokps) if (cJSON_IsNumber(it))
                printf(" %s %s", it->string, seedctl_human(it->valuedouble, b1, sizeof b1));
        } else if (cJSON_IsNumber(tokps)) {
            printf(" tokens/s %s", seedctl_human(tokps->valuedouble, b1, sizeof b1));
        }
        const cJSON *it;
        cJSON_ArrayForEach(it, tp) {
            if (!strcmp(it->string, "samples_per_s") || !strcmp(it->string, "tokens_per_s"))
                continue;
            if (cJSON_IsNumber(it))
                printf("  %s %s", it->string, seedctl_human(it->valuedouble, b1, 48));
        }
        printf("\n");
    }
    if (seedctl_jnum(j, "success", &v)) printf("%-10s %.3f\n", "success", v);
    const cJSON *envs = seedctl_jget(j, "envs");
    if (cJSON_IsObject(envs) && cJSON_GetArraySize(envs) > 0) {
        printf("%-10s %-22s %8s %8s %9s\n", "envs", "env / family", "success", "return",
               "episodes");
        const cJSON *e;
        cJSON_ArrayForEach(e, envs) {
            print_env_row("", e->string, e);
            const cJSON *fam = seedctl_jget(e, "families"), *f;
            cJSON_ArrayForEach(f, fam) print_env_row("  ", f->string, f);
        }
    }
    print_flat("loss", seedctl_jget(j, "loss"));
    print_flat("queues", seedctl_jget(j, "queues"));
    print_flat("counts", seedctl_jget(j, "counts"));
    const cJSON *peers = seedctl_jget(j, "peers");
    if (cJSON_IsArray(peers)) {
        printf("%-10s %d\n", "peers", cJSON_GetArraySize(peers));
        if (cJSON_GetArraySize(peers) > 0)
            printf("  %-9s %-28s %-16s %8s %10s %8s\n", "role", "id", "host", "pid", "heartbeat",
                   "version");
        const cJSON *p;
        cJSON_ArrayForEach(p, peers) {
            snprintf(b1, sizeof b1, "-");
            snprintf(b2, sizeof b2, "-");
            snprintf(b3, sizeof b3, "-");
            if (seedctl_jnum(p, "heartbeat_age_s", &v)) print_age(v, b1, sizeof b1);
            if (seedctl_jnum(p, "version", &v)) seedctl_human(v, b2, sizeof b2);
            if (seedctl_jnum(p, "pid", &v)) snprintf(b3, sizeof b3, "%.0f", v);
            printf("  %-9s %-28s %-16s %8s %10s %8s\n",
                   seedctl_jstr(p, "role") ? seedctl_jstr(p, "role") : "?",
                   seedctl_jstr(p, "id") ? seedctl_jstr(p, "id") : "?",
                   seedctl_jstr(p, "host") ? seedctl_jstr(p, "host") : "-", b3, b1, b2);
        }
    }
    static const char *known[] = {"job",     "run_dir",     "uptime_s", "stage",
                                  "step",    "total_steps", "version",  "throughput",
                                  "success", "envs",        "loss",     "queues",
                                  "counts",  "peers",       "config",   NULL};
    const cJSON *it;
    cJSON_ArrayForEach(it, j) {
        int k = 0;
        while (known[k] && strcmp(known[k], it->string)) k++;
        if (known[k]) continue;
        char *s = cJSON_PrintUnformatted(it);
        printf("%-10s %s\n", it->string, s ? s : "?");
        free(s);
    }
}

int seedctl_status(int argc, char **argv) {
    const char *endpoint = NULL, *run = NULL, *job_path = NULL;
    int as_json = 0, timeout_ms = -1;
    double watch = 0;
    char **over = calloc((size_t)argc + 1, sizeof *over);
    int n_over = 0;
    if (!over) return seedctl_fail("out of memory");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            as_json = 1;
        } else if (!strcmp(a, "--watch") || !strcmp(a, "--timeout") || !strcmp(a, "--run") ||
                   !strcmp(a, "--job")) {
            if (i + 1 >= argc) return free(over), seedctl_usage_error("%s needs a value", a);
            const char *v = argv[++i];
            char *end;
            if (!strcmp(a, "--watch")) {
                watch = strtod(v, &end);
                if (*end || !(watch > 0))
                    return free(over),
                           seedctl_usage_error("--watch: expected seconds > 0, got '%s'", v);
            } else if (!strcmp(a, "--timeout")) {
                long t = strtol(v, &end, 10);
                if (*end || t <= 0 || t > 3600000)
                    return free(over),
                           seedctl_usage_error("--timeout: expected milliseconds > 0, got '%s'", v);
                timeout_ms = (int)t;
            } else if (!strcmp(a, "--run")) {
                run = v;
            } else {
                job_path = v;
            }
        } else if (a[0] == '-') {
            return free(over), seedctl_usage_error("status: unknown option '%s'", a);
        } else if (strchr(a, '=') && !strstr(a, "://")) {
            over[n_over++] = argv[i];
        } else if (!endpoint) {
            endpoint = a;
        } else {
            return free(over), seedctl_usage_error("status: one ENDPOINT only, got '%s' too", a);
        }
    }
    job_config *job = malloc(sizeof *job);
    char err[SEED_ERRLEN], ep[512];
    if (!job) return free(over), seedctl_fail("out of memory");
    int rc = job_build(job, job_path, n_over, over, err, sizeof err);
    free(over);
    if (rc) return free(job), seedctl_fail(err);
    if (endpoint) {
        snprintf(ep, sizeof ep, "%s", endpoint);
    } else {
        launch_ref r;
        if (run || (!job_path && !n_over)) {
            if (seedctl_find_launch(run, &r, err, sizeof err) == 0 && r.status[0]) {
                snprintf(ep, sizeof ep, "%s", r.status);
            } else if (run) {
                free(job);
                return seedctl_fail(err);
            } else {
                snprintf(ep, sizeof ep, "%s", job->endpoints.status);
            }
        } else {
            snprintf(ep, sizeof ep, "%s", job->endpoints.status);
        }
    }
    if (timeout_ms < 0) timeout_ms = job->wire.request_timeout_ms;
    wire_sockopts o;
    if (seedctl_sockopts(job, &o, err, sizeof err)) return free(job), seedctl_fail(err);
    free(job);
    void *ctx = zmq_ctx_new();
    int status = 0;
    for (;;) {
        char *text = NULL;
        if (status_query(ctx, ep, &o, timeout_ms, &text, err, sizeof err)) {
            fprintf(stderr, "seedctl: %s\n", err);
            status = 1;
        } else {
            cJSON *j = cJSON_Parse(text);
            if (as_json) {
                printf("%s\n", text);
                status = j ? 0 : 1;
            } else if (!j) {
                fprintf(stderr, "seedctl: %s answered with text that is not JSON: %.200s\n", ep,
                        text);
                status = 1;
            } else {
                if (watch > 0 && isatty(STDOUT_FILENO)) printf("\033[H\033[2J");
                print_status(j, ep);
                status = 0;
            }
            cJSON_Delete(j);
            free(text);
        }
        fflush(stdout);
        if (watch <= 0) break;
        if (watch > 0 && !isatty(STDOUT_FILENO)) printf("\n");
        struct timespec ts = {(time_t)watch, (long)((watch - floor(watch)) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
    zmq_ctx_term(ctx);
    return status;
}

/* ====================================================================================
 * seedctl scale / stop / ps (clients of a launch's control socket)
 * ==================================================================================== */

static int control_rpc(void *ctx, const launch_ref *r, Seed__Envelope *req, int timeout_ms,
                       cJSON **reply, char *err, size_t errlen) {
    char *text = NULL;
    wire_sockopts o;
    wire_sockopts_init(&o);
    o.linger_ms = 0;
    if (rpc(ctx, r->control, &o, req, timeout_ms, &text, err, errlen)) {
        if (strstr(err, "no answer from")) {
            size_t l = strlen(err);
            snprintf(err + l, errlen > l ? errlen - l : 0,
                     " \u2014 is the seedctl launch (pid %d) stuck, or run by another user "
                     "(its control socket admits only that user)?",
                     (int)r->pid);
        }
        return -1;
    }
    *reply = cJSON_Parse(text);
    free(text);
    if (!*reply) return seed_errf(err, errlen, "the launch answered with text that is not JSON");
    if (cJSON_IsFalse(seedctl_jget(*reply, "ok"))) {
        seed_errf(err, errlen, "%s",
                  seedctl_jstr(*reply, "error") ? seedctl_jstr(*reply, "error") : "refused");
        cJSON_Delete(*reply);
        *reply = NULL;
        return -1;
    }
    return 0;
}

static int control_send(void *ctx, const launch_ref *r, Seed__Control__Kind kind, const char *role,
                        int count, int timeout_ms, cJSON **reply, char *err, size_t errlen) {
    Seed__Envelope envl;
    Seed__Control c = SEED__CONTROL__INIT;
    wire_envelope_init(&envl, "seedctl");
    envl.body_case = SEED__ENVELOPE__BODY_CONTROL;
    envl.control = &c;
    c.kind = kind;
    c.role = (char *)(role ? role : "");
    c.count = count;
    return control_rpc(ctx, r, &envl, timeout_ms, reply, err, errlen);
}

/* Parses the options every launch client takes: --run DIR, --timeout N, --json. */
typedef struct client_opts {
    const char *run;
    double timeout; /* -1: the command's default */
    int json;
    int n_rest;
    char *rest[8];
} client_opts;

static int client_args(int argc, char **argv, client_opts *c, const char *cmd) {
    memset(c, 0, sizeof *c);
    c->timeout = -1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            c->json = 1;
        } else if (!strcmp(a, "--run") || !strcmp(a, "--timeout")) {
            if (i + 1 >= argc) return seedctl_usage_error("%s needs a value", a);
            if (!strcmp(a, "--run")) {
                c->run = argv[++i];
            } else {
                char *end;
                c->timeout = strtod(argv[++i], &end);
                if (*end || !(c->timeout > 0))
                    return seedctl_usage_error("--timeout: expected a number > 0, got '%s'",
                                               argv[i]);
            }
        } else if (a[0] == '-') {
            return seedctl_usage_error("%s: unknown option '%s'", cmd, a);
        } else if (c->n_rest < 8) {
            c->rest[c->n_rest++] = argv[i];
        } else {
            return seedctl_usage_error("%s: too many arguments", cmd);
        }
    }
    return 0;
}

int seedctl_scale(int argc, char **argv) {
    client_opts c;
    int rc = client_args(argc, argv, &c, "scale");
    if (rc) return rc;
    if (c.n_rest == 0) return seedctl_usage_error("scale: expected actors=N and/or analyzers=M");
    const char *roles[2] = {NULL, NULL};
    int counts[2] = {0, 0}, n = 0;
    for (int i = 0; i < c.n_rest; i++) {
        const char *a = c.rest[i], *eq = strchr(a, '=');
        char *end = NULL;
        long v = eq ? strtol(eq + 1, &end, 10) : -1;
        const char *role = eq && (size_t)(eq - a) == 6 && !strncmp(a, "actors", 6)      ? "actor"
                           : eq && (size_t)(eq - a) == 9 && !strncmp(a, "analyzers", 9) ? "analyzer"
                                                                                        : NULL;
        if (!role)
            return seedctl_usage_error("scale: expected actors=N or analyzers=M, got '%s'", a);
        if (!eq[1] || *end || v < 0 || v > MAX_PER_ROLE)
            return seedctl_usage_error("scale: %.*s: expected an integer in [0, %d], got '%s'",
                                       (int)(eq - a), a, MAX_PER_ROLE, eq + 1);
        roles[n] = role;
        counts[n++] = (int)v;
    }
    launch_ref r;
    char err[SEED_ERRLEN];
    if (seedctl_find_launch(c.run, &r, err, sizeof err)) return seedctl_fail(err);
    void *ctx = zmq_ctx_new();
    int timeout_ms = c.timeout > 0 ? (int)c.timeout : RPC_TIMEOUT_MS;
    int status = 0;
    for (int i = 0; i < n && !status; i++) {
        cJSON *rep = NULL;
        if (control_send(ctx, &r, SEED__CONTROL__KIND__SCALE, roles[i], counts[i], timeout_ms, &rep,
                         err, sizeof err)) {
            status = seedctl_fail(err);
            break;
        }
        double from = 0, to = 0;
        seedctl_jnum(rep, "from", &from);
        seedctl_jnum(rep, "to", &to);
        printf("%ss: %.0f -> %.0f (%s)\n", roles[i], from, to, r.run_dir);
        cJSON_Delete(rep);
    }
    zmq_ctx_term(ctx);
    return status;
}

int seedctl_stop(int argc, char **argv) {
    client_opts c;
    int rc = client_args(argc, argv, &c, "stop");
    if (rc) return rc;
    if (c.n_rest) return seedctl_usage_error("stop: unexpected argument '%s'", c.rest[0]);
    launch_ref r;
    char err[SEED_ERRLEN];
    if (seedctl_find_launch(c.run, &r, err, sizeof err)) return seedctl_fail(err);
    void *ctx = zmq_ctx_new();
    cJSON *rep = NULL;
    rc = control_send(ctx, &r, SEED__CONTROL__KIND__STOP, "", 0, RPC_TIMEOUT_MS, &rep, err,
                      sizeof err);
    zmq_ctx_term(ctx);
    if (rc) return seedctl_fail(err);
    cJSON_Delete(rep);
    printf("stopping %s (seedctl pid %d): learner first, then the others\n", r.run_dir, (int)r.pid);
    fflush(stdout);
    double limit = c.timeout > 0 ? c.timeout : 300, t0 = seed_now();
    while (seedctl_pid_alive(r.pid)) {
        if (seed_now() - t0 > limit) {
            fprintf(stderr, "seedctl: the launch (pid %d) is still stopping after %.0f s\n",
                    (int)r.pid, limit);
            return 1;
        }
        usleep(50 * 1000);
    }
    printf("stopped\n");
    return 0;
}

int seedctl_ps(int argc, char **argv) {
    client_opts c;
    int rc = client_args(argc, argv, &c, "ps");
    if (rc) return rc;
    if (c.n_rest) return seedctl_usage_error("ps: unexpected argument '%s'", c.rest[0]);
    launch_ref r;
    char err[SEED_ERRLEN];
    if (seedctl_find_launch(c.run, &r, err, sizeof err)) return seedctl_fail(err);
    Seed__Envelope envl;
    Seed__StatusRequest sr = SEED__STATUS_REQUEST__INIT;
    wire_envelope_init(&envl, "seedctl");
    envl.body_case = SEED__ENVELOPE__BODY_STATUS_REQUEST;
    envl.status_request = &sr;
    sr.what = "children";
    void *ctx = zmq_ctx_new();
    cJSON *rep = NULL;
    rc = control_rpc(ctx, &r, &envl, c.timeout > 0 ? (int)c.timeout : RPC_TIMEOUT_MS, &rep, err,
                     sizeof err);
    zmq_ctx_term(ctx);
    if (rc) return seedctl_fail(err);
    if (c.json) {
        char *s = cJSON_Print(rep);
        printf("%s\n", s ? s : "{}");
        free(s);
    } else {
        double v;
        printf("job %s  run_dir %s  seedctl pid %d  state %s",
               seedctl_jstr(rep, "job") ? seedctl_jstr(rep, "job") : "?", r.run_dir, (int)r.pid,
               seedctl_jstr(rep, "state") ? seedctl_jstr(rep, "state") : "?");
        if (seedctl_jnum(rep, "want.actors", &v)) printf("  actors %.0f", v);
        if (seedctl_jnum(rep, "want.analyzers", &v)) printf("  analyzers %.0f", v);
        printf("\n%-14s %8s %-10s %8s %10s  %s\n", "id", "pid", "state", "restarts", "uptime",
               "last exit");
        const cJSON *k;
        cJSON_ArrayForEach(k, seedctl_jget(rep, "children")) {
            char pid[16] = "-", up[32] = "-";
            if (seedctl_jnum(k, "pid", &v) && v > 0) snprintf(pid, sizeof pid, "%.0f", v);
            if (seedctl_jnum(k, "uptime_s", &v) && v >= 0) print_age(v, up, sizeof up);
            double rs = 0;
            seedctl_jnum(k, "restarts", &rs);
            printf("%-14s %8s %-10s %8.0f %10s  %s\n",
                   seedctl_jstr(k, "id") ? seedctl_jstr(k, "id") : "?", pid,
                   seedctl_jstr(k, "state") ? seedctl_jstr(k, "state") : "?", rs, up,
                   seedctl_jstr(k, "last_exit") ? seedctl_jstr(k, "last_exit") : "");
        }
    }
    cJSON_Delete(rep);
    return 0;
}
