/* seedctl_launch.c — `seedctl launch`, the supervisor.
 *
 * Contract of `launch` (the supervisor):
 *  - Starts seed-learner, roles.actors x seed-actor and roles.analyzers x seed-analyzer as
 *    child processes, each `BIN [--job JOB.yaml] --id ID [key=value ...]`, in its own
 *    process group with PR_SET_PDEATHSIG (a killed seedctl takes its children with it),
 *    stdout+stderr appended to <run_dir>/logs/<id>.log.
 *  - The learner exiting 0 means the job is complete: the others are stopped and seedctl
 *    exits 0. Any other exit of any child is a crash: restarted after a back-off that
 *    doubles per consecutive crash (roles.restart_backoff_s .. _max_s), at most
 *    roles.max_restarts times per slot; a restarted learner gets checkpoint.resume=true.
 *  - Stop (Ctrl-C, SIGTERM, `seedctl stop`): SIGTERM to the learner (it checkpoints),
 *    wait for it, then SIGTERM to the others; SIGKILL whoever outlives
 *    roles.stop_timeout_s. A second Ctrl-C kills at once. Every child is reaped.
 *  - <run_dir>/seedctl.json names seedctl's pid and its control endpoint (a ROUTER
 *    socket) that answers Control{SCALE, STOP} and StatusRequest{what="children"};
 *    <run_dir>/seedctl.lock keeps a second launch out. The control socket is ipc:// in a
 *    private directory (mkdtemp under /tmp, 0700; short, whatever the run dir's length)
 *    and its ZAP handler (proto/zap.h) admits only peers of seedctl's own uid, as the
 *    kernel reports them (SO_PEERCRED): never an unauthenticated channel.
 * */
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
 * seedctl launch: the supervisor
 * ==================================================================================== */

enum { R_LEARNER = 0, R_ACTOR = 1, R_ANALYZER = 2 };
static const char *const ROLE_NAME[3] = {"learner", "actor", "analyzer"};
static const char *const ROLE_BIN[3] = {"seed-learner", "seed-actor", "seed-analyzer"};

typedef struct child {
    int role, index;
    char id[32];
    pid_t pid;          /* 0: not running */
    int wanted;         /* should be running */
    int restarts;       /* restarts done in this slot */
    int crashes_in_row; /* for the back-off */
    int gave_up;        /* hit roles.max_restarts */
    int term_sent, kill_sent;
    double started, next_start, term_at;
    char last_exit[96];
} child;

enum { S_RUNNING, S_STOP_LEARNER, S_STOP_OTHERS, S_DONE };

typedef struct launcher {
    job_config job;
    const char *job_path; /* NULL: the embedded default */
    int n_over;
    char **over;
    char bin[3][PATH_MAX];  /* the role binaries */
    char bin_dir[PATH_MAX]; /* --bin-dir or $SEED_BIN_DIR; "" : next to seedctl */
    char run_abs[PATH_MAX], logs[PATH_MAX + 16];
    int quiet;
    int finished;                     /* the learner exited 0: the job ran to its end */
    child kids[1 + 2 * MAX_PER_ROLE]; /* [0] learner, then actors, then analyzers */
    int want[3];
    int state, exit_code, force;
    char stop_reason[128];
    int total_restarts;
    void *ctx, *ctl, *status_sock;
    char ctl_ep[600];
    char ctl_dir[64]; /* the control socket's private directory ("" : none made) */
    zap *zap;         /* admits the control socket's peers of our uid only */
    wire_rx ctl_rx, status_rx;
    wire_sockopts status_opts;
    double status_sent, next_status, started;
    int status_fails;
    /* the first evaluation the status showed: success, training-pool success (NAN: none) */
    double eval0, pool0;
    int eval0_set;
    int sfd, lock_fd;
    double last_step;
    char json_path[PATH_MAX + 32];
} launcher;

static child *kid(launcher *L, int role, int index) {
    return role == R_LEARNER ? &L->kids[0]
           : role == R_ACTOR ? &L->kids[1 + index]
                             : &L->kids[1 + MAX_PER_ROLE + index];
}
enum { N_KIDS = 1 + 2 * MAX_PER_ROLE };

static void say(const launcher *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const launcher *L, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    double t = seed_now() - L->started;
    printf("[%02d:%02d:%02d] %s\n", (int)(t / 3600), (int)fmod(t / 60, 60), (int)fmod(t, 60), msg);
    fflush(stdout);
}

/* Find a role binary: --bin-dir/$SEED_BIN_DIR only, else next to seedctl, else in the
 * build tree's role folder beside seedctl's (build/deploy/seedctl, build/learner/...). */
static int find_bin(const char *bin_dir, const char *name, const char *role_dir, char *out,
                    size_t n, char *err, size_t errlen) {
    char self[PATH_MAX], cands[3][PATH_MAX + 64];
    int nc = 0;
    if (bin_dir) {
        snprintf(cands[nc++], sizeof cands[0], "%s/%s", bin_dir, name);
    } else {
        seedctl_exe_dir(self, sizeof self);
        snprintf(cands[nc++], sizeof cands[0], "%s/%s", self, name);
        snprintf(cands[nc++], sizeof cands[0], "%s/../%s/%s", self, role_dir, name);
    }
    for (int i = 0; i < nc; i++)
        if (access(cands[i], X_OK) == 0) {
            if (!realpath(cands[i], out)) snprintf(out, n, "%.*s", (int)(n - 1), cands[i]);
            return 0;
        }
    return seed_errf(err, errlen,
                     "cannot find %s (looked for %s%s%s); build it, or point seedctl at the "
                     "role programs with --bin-dir DIR or SEED_BIN_DIR",
                     name, cands[0], nc > 1 ? " and " : "", nc > 1 ? cands[1] : "");
}

/* CPU milliseconds each role spends per trained token, measured by bench/loop on the
 * default job with demand-driven actors (docs/DESIGN.md "Measured": the roles' CPU time
 * from /proc over 480 s of RL): the learner (training and the KL reference's scoring),
 * all actors together (decode and prefill), all analyzers together (skills and q). Only
 * their ratios matter; three runs on busy and quiet machines and the cluster layout
 * agreed within 4 points of share. */
#define LAUNCH_DEMAND_LEARNER 1.09
#define LAUNCH_DEMAND_ACTORS 0.12
#define LAUNCH_DEMAND_ANALYZERS 0.29

/* model.threads for one process of `role` in a local launch: the cores split among the
 * roles in proportion to their demand, a role's share split evenly among its processes,
 * at least one thread each and at most every core. The learner's share is rounded up
 * (it must never be the one that waits for CPU: with demand-driven actors the others
 * idle once the learner's next step is covered), the others' to the nearest. */
static int launch_threads(int role, int actors, int analyzers, long cores) {
    const double d[3] = {LAUNCH_DEMAND_LEARNER, actors > 0 ? LAUNCH_DEMAND_ACTORS : 0.0,
                         analyzers > 0 ? LAUNCH_DEMAND_ANALYZERS : 0.0};
    const int procs[3] = {1, SEED_MAX(actors, 1), SEED_MAX(analyzers, 1)};
    double share = d[role] / (d[0] + d[1] + d[2]) * (double)cores / procs[role];
    long t = role == R_LEARNER ? (long)ceil(share) : lround(share);
    return (int)SEED_MAX(1, SEED_MIN(t, SEED_MAX(cores, 1)));
}

/* The cores this launch may use: its CPU affinity (taskset, a container's cpuset), else
 * the cores online. */
static long launch_cores(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    return sysconf(_SC_NPROCESSORS_ONLN);
}

/* Start one child: fork, own process group, parent-death signal, log file, exec. */
static int spawn(launcher *L, child *k, char *err, size_t errlen) {
    const char *argv[16 + 2 * 1024];
    int n = 0;
    if (L->n_over > 2 * 1024) return seed_errf(err, errlen, "too many overrides");
    argv[n++] = L->bin[k->role];
    if (L->job_path) {
        argv[n++] = "--job";
        argv[n++] = L->job_path;
    }
    argv[n++] = "--id";
    argv[n++] = k->id;
    for (int i = 0; i < L->n_over; i++) argv[n++] = L->over[i];
    /* a restarted learner continues from its checkpoint whatever the job says */
    if (k->role == R_LEARNER && k->restarts > 0) argv[n++] = "checkpoint.resume=true";
    /* On one machine the roles share the cores: unless the job sets model.threads, each
     * role gets threads in proportion to its measured demand (launch_threads). */
    char threads[48];
    if (L->job.model.threads == 0) {
        snprintf(threads, sizeof threads, "model.threads=%d",
                 launch_threads(k->role, L->want[R_ACTOR], L->want[R_ANALYZER], launch_cores()));
        argv[n++] = threads;
    }
    argv[n] = NULL;

    char logp[PATH_MAX + 64];
    snprintf(logp, sizeof logp, "%s/%s.log", L->logs, k->id);
    int logfd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (logfd < 0) return seed_errf(err, errlen, "cannot open %s: %s", logp, strerror(errno));
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        close(logfd);
        return seed_errf(err, errlen, "pipe: %s", strerror(errno));
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        close(logfd);
        close(pfd[0]);
        close(pfd[1]);
        return seed_errf(err, errlen, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        /* child: only async-signal-safe calls until exec */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1); /* seedctl died before prctl */
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(SIGPIPE, &dfl, NULL);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, STDIN_FILENO);
        dup2(logfd, STDOUT_FILENO);
        dup2(logfd, STDERR_FILENO);
        execv(argv[0], (char *const *)argv);
        int e = errno;
        ssize_t w = write(pfd[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    setpgid(pid, pid); /* also here: no window where a signal to the group misses it */
    close(pfd[1]);
    int e = 0;
    ssize_t r;
    do r = read(pfd[0], &e, sizeof e);
    while (r < 0 && errno == EINTR);
    close(pfd[0]);
    if (r == (ssize_t)sizeof e) {
        close(logfd);
        waitpid(pid, NULL, 0);
        return seed_errf(err, errlen, "cannot run %s: %s", argv[0], strerror(e));
    }
    char line[PATH_MAX + 256];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    int l = snprintf(line, sizeof line,
                     "==== seedctl %04d-%02d-%02d %02d:%02d:%02d UTC: started %s as pid %d%s\n",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     k->id, (int)pid, k->restarts ? " (restart)" : "");
    ssize_t w = write(logfd, line, (size_t)SEED_MIN(l, (int)sizeof line - 1));
    (void)w;
    close(logfd);
    k->pid = pid;
    k->started = seed_now();
    k->term_sent = k->kill_sent = 0;
    return 0;
}

static void signal_child(child *k, int sig) {
    if (k->pid > 0) kill(-k->pid, sig); /* the group: anything the role started too */
}

static void term_child(child *k) {
    if (k->pid <= 0 || k->term_sent) return;
    signal_child(k, SIGTERM);
    k->term_sent = 1;
    k->term_at = seed_now();
}

static void describe_exit(int st, char *buf, size_t n) {
    if (WIFEXITED(st))
        snprintf(buf, n, "exit code %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, n, "signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
    else
        snprintf(buf, n, "status %d", st);
}

/* The last lines of a child's log, for a crash message. */
static void log_tail(const launcher *L, const child *k, char *buf, size_t n) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/%s.log", L->logs, k->id);
    buf[0] = 0;
    FILE *f = fopen(p, "r");
    if (!f) return;
    long want = (long)n - 1;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        fseek(f, size > want ? size - want : 0, SEEK_SET);
    }
    size_t got = fread(buf, 1, (size_t)want, f);
    fclose(f);
    buf[got] = 0;
    /* keep the last 4 lines */
    int lines = 0;
    for (char *p2 = buf + (got ? got - 1 : 0); p2 > buf; p2--)
        if (*p2 == '\n' && p2[1] && ++lines == 4) {
            memmove(buf, p2 + 1, strlen(p2 + 1) + 1);
            break;
        }
}

static void begin_stop(launcher *L, const char *reason, int code) {
    if (L->state != S_RUNNING) return;
    snprintf(L->stop_reason, sizeof L->stop_reason, "%s", reason);
    L->exit_code = code;
    for (int i = 0; i < N_KIDS; i++) L->kids[i].wanted = 0;
    child *lr = &L->kids[0];
    if (lr->pid > 0) {
        say(L, "stopping (%s): SIGTERM to the learner first, it checkpoints", reason);
        term_child(lr);
        L->state = S_STOP_LEARNER;
    } else {
        say(L, "stopping (%s)", reason);
        L->state = S_STOP_OTHERS;
        for (int i = 1; i < N_KIDS; i++) term_child(&L->kids[i]);
    }
}

static void force_kill(launcher *L) {
    for (int i = 0; i < N_KIDS; i++)
        if (L->kids[i].pid > 0) {
            signal_child(&L->kids[i], SIGKILL);
            L->kids[i].kill_sent = 1;
        }
}

static void on_child_exit(launcher *L, pid_t pid, int st) {
    child *k = NULL;
    for (int i = 0; i < N_KIDS && !k; i++)
        if (L->kids[i].pid == pid) k = &L->kids[i];
    if (!k) return;
    /* whatever the role left in its group goes with it */
    kill(-pid, SIGKILL);
    char how[96];
    describe_exit(st, how, sizeof how);
    snprintf(k->last_exit, sizeof k->last_exit, "%s", how);
    double ran = seed_now() - k->started;
    k->pid = 0;
    if (L->state != S_RUNNING || !k->wanted || k->term_sent) {
        if (!L->quiet || L->state == S_RUNNING) say(L, "%s exited (%s)", k->id, how);
        /* scaled down and up again while it was stopping: start it afresh */
        if (L->state == S_RUNNING && k->wanted) k->next_start = seed_now();
        return;
    }
    if (k->role == R_LEARNER && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        say(L, "learner finished (exit 0 after %.1f s)", ran);
        L->finished = 1;
        begin_stop(L, "the learner reached job.total_steps", 0);
        return;
    }
    /* a crash */
    char tail[1024];
    log_tail(L, k, tail, sizeof tail);
    if (ran > L->job.roles.restart_backoff_max_s + 10) k->crashes_in_row = 0;
    k->crashes_in_row++;
    const job_config *j = &L->job;
    if (j->roles.max_restarts > 0 && k->restarts >= j->roles.max_restarts) {
        k->gave_up = 1;
        k->wanted = 0;
        say(L, "%s crashed (%s) and has used its %d restarts (roles.max_restarts); log %s/%s.log",
            k->id, how, j->roles.max_restarts, L->logs, k->id);
        if (k->role == R_LEARNER) begin_stop(L, "the learner keeps crashing", 1);
        return;
    }
    double delay = j->roles.restart_backoff_s * pow(2.0, SEED_MIN(k->crashes_in_row - 1, 30));
    delay = SEED_MIN(delay, j->roles.restart_backoff_max_s);
    k->next_start = seed_now() + delay;
    k->restarts++;
    L->total_restarts++;
    say(L, "%s (pid %d) crashed after %.1f s: %s; restart %d in %.1f s%s; log %s/%s.log%s%s", k->id,
        (int)pid, ran, how, k->restarts, delay, k->role == R_LEARNER ? " from its checkpoint" : "",
        L->logs, k->id, tail[0] ? "\n" : "", tail);
}

static void reap(launcher *L) {
    int st;
    pid_t pid;
    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) on_child_exit(L, pid, st);
}

static const char *child_state(const launcher *L, const child *k) {
    if (k->pid > 0) return k->term_sent ? "stopping" : "running";
    if (k->gave_up) return "gave_up";
    if (k->wanted && L->state == S_RUNNING) return k->restarts ? "backoff" : "starting";
    return "stopped";
}

static cJSON *children_json(const launcher *L) {
    cJSON *r = cJSON_CreateObject();
    static const char *states[] = {"running", "stopping", "stopping", "done"};
    cJSON_AddBoolToObject(r, "ok", 1);
    cJSON_AddStringToObject(r, "job", L->job.job.name);
    cJSON_AddStringToObject(r, "run_dir", L->run_abs);
    cJSON_AddStringToObject(r, "state", states[L->state]);
    cJSON_AddNumberToObject(r, "seedctl_pid", (double)getpid());
    cJSON_AddStringToObject(r, "status_endpoint", L->job.endpoints.status);
    cJSON_AddNumberToObject(r, "restarts", L->total_restarts);
    cJSON *w = cJSON_AddObjectToObject(r, "want");
    cJSON_AddNumberToObject(w, "actors", L->want[R_ACTOR]);
    cJSON_AddNumberToObject(w, "analyzers", L->want[R_ANALYZER]);
    cJSON *arr = cJSON_AddArrayToObject(r, "children");
    double now = seed_now();
    for (int i = 0; i < N_KIDS; i++) {
        const child *k = &L->kids[i];
        if (!k->id[0] || (!k->pid && !k->wanted && !k->restarts && !k->last_exit[0])) continue;
        cJSON *c = cJSON_CreateObject();
        cJSON_AddStringToObject(c, "id", k->id);
        cJSON_AddStringToObject(c, "role", ROLE_NAME[k->role]);
        cJSON_AddNumberToObject(c, "pid", k->pid);
        cJSON_AddStringToObject(c, "state", child_state(L, k));
        cJSON_AddNumberToObject(c, "restarts", k->restarts);
        cJSON_AddNumberToObject(c, "uptime_s", k->pid ? now - k->started : -1);
        cJSON_AddStringToObject(c, "last_exit", k->last_exit);
        char lp[PATH_MAX + 64];
        snprintf(lp, sizeof lp, "%s/%s.log", L->logs, k->id);
        cJSON_AddStringToObject(c, "log", lp);
        cJSON_AddItemToArray(arr, c);
    }
    return r;
}

/* Scale a role to n: slots below n are wanted (started by the loop), the rest stopped. */
static int scale_role(launcher *L, int role, int n, char *err, size_t errlen) {
    if (n < 0 || n > MAX_PER_ROLE)
        return seed_errf(err, errlen, "%ss: expected a count in [0, %d], got %d", ROLE_NAME[role],
                         MAX_PER_ROLE, n);
    if (n > 0 && !L->bin[role][0]) {
        char e2[SEED_ERRLEN];
        if (find_bin(L->bin_dir[0] ? L->bin_dir : NULL, ROLE_BIN[role], ROLE_NAME[role],
                     L->bin[role], sizeof L->bin[role], e2, sizeof e2))
            return seed_errf(err, errlen, "%s", e2);
    }
    for (int i = 0; i < MAX_PER_ROLE; i++) {
        child *k = kid(L, role, i);
        if (i < n && !k->wanted) {
            if (k->pid == 0) { /* a fresh slot; one still stopping restarts when it exits */
                memset(k, 0, sizeof *k);
                k->role = role;
                k->index = i;
                snprintf(k->id, sizeof k->id, "%s-%d", ROLE_NAME[role], i);
            }
            k->wanted = 1;
            k->next_start = seed_now();
        } else if (i >= n && k->wanted) {
            k->wanted = 0;
            term_child(k);
        }
    }
    L->want[role] = n;
    return 0;
}

static void reply_json(launcher *L, cJSON *j) {
    char *text = cJSON_PrintUnformatted(j);
    Seed__Envelope envl;
    Seed__StatusReply sr = SEED__STATUS_REPLY__INIT;
    wire_envelope_init(&envl, "seedctl");
    envl.body_case = SEED__ENVELOPE__BODY_STATUS_REPLY;
    envl.status_reply = &sr;
    sr.json = text ? text : "{}";
    char err[SEED_ERRLEN];
    if (wire_send_to(L->ctl, &L->ctl_rx.from, &envl, ZMQ_DONTWAIT, err, sizeof err) < 0)
        say(L, "control reply failed: %s", err);
    free(text);
}

static void reply_error(launcher *L, const char *msg) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddBoolToObject(j, "ok", 0);
    cJSON_AddStringToObject(j, "error", msg);
    reply_json(L, j);
    cJSON_Delete(j);
}

static void handle_control(launcher *L) {
    for (;;) {
        Seed__Envelope *m = NULL;
        char err[SEED_ERRLEN];
        int r = wire_recv(&L->ctl_rx, L->ctl, &m, ZMQ_DONTWAIT, err, sizeof err);
        if (r <= 0) {
            if (r < 0) say(L, "control socket: %s", err);
            return;
        }
        if (m->body_case == SEED__ENVELOPE__BODY_STATUS_REQUEST) {
            cJSON *j = children_json(L);
            reply_json(L, j);
            cJSON_Delete(j);
        } else {
            const Seed__Control *c = m->control;
            if (c->kind == SEED__CONTROL__KIND__STOP) {
                cJSON *j = cJSON_CreateObject();
                cJSON_AddBoolToObject(j, "ok", 1);
                reply_json(L, j);
                cJSON_Delete(j);
                begin_stop(L, "seedctl stop", 0);
            } else if (c->kind == SEED__CONTROL__KIND__SCALE) {
                int role = c->role && !strcmp(c->role, "actor")      ? R_ACTOR
                           : c->role && !strcmp(c->role, "analyzer") ? R_ANALYZER
                                                                     : -1;
                if (role < 0) {
                    snprintf(err, sizeof err, "scale: expected role actor or analyzer, got '%s'",
                             c->role ? c->role : "");
                    reply_error(L, err);
                } else if (L->state != S_RUNNING) {
                    reply_error(L, "scale: the launch is stopping");
                } else {
                    int from = L->want[role];
                    if (scale_role(L, role, c->count, err, sizeof err)) {
                        reply_error(L, err);
                    } else {
                        say(L, "scale: %ss %d -> %d", ROLE_NAME[role], from, c->count);
                        cJSON *j = cJSON_CreateObject();
                        cJSON_AddBoolToObject(j, "ok", 1);
                        cJSON_AddStringToObject(j, "role", ROLE_NAME[role]);
                        cJSON_AddNumberToObject(j, "from", from);
                        cJSON_AddNumberToObject(j, "to", c->count);
                        reply_json(L, j);
                        cJSON_Delete(j);
                    }
                }
            } else {
                reply_error(L, "seedctl launch takes SCALE and STOP; pause, resume and "
                               "checkpoint go to the learner");
            }
        }
        wire_free(m);
    }
}

/* Progress: ask the learner every status.interval_s; one line per answer. */
static void status_poll_send(launcher *L) {
    char err[SEED_ERRLEN];
    if (!L->status_sock) {
        L->status_sock = wire_socket(L->ctx, ZMQ_REQ, &L->status_opts, err, sizeof err);
        if (!L->status_sock ||
            wire_connect(L->status_sock, L->job.endpoints.status, err, sizeof err)) {
            say(L, "status client: %s", err);
            wire_close(L->status_sock);
            L->status_sock = NULL;
            return;
        }
    }
    Seed__Envelope envl;
    Seed__StatusRequest sr = SEED__STATUS_REQUEST__INIT;
    wire_envelope_init(&envl, "seedctl");
    envl.body_case = SEED__ENVELOPE__BODY_STATUS_REQUEST;
    envl.status_request = &sr;
    sr.what = "";
    if (wire_send(L->status_sock, &envl, ZMQ_DONTWAIT, err, sizeof err) < 0) {
        wire_close(L->status_sock);
        L->status_sock = NULL;
        return;
    }
    L->status_sent = seed_now();
}

static void progress_line(launcher *L, const cJSON *j) {
    char line[512], b[48];
    int n = 0;
    double v, t, step = -1;
    line[0] = 0;
    if (seedctl_jnum(j, "step", &step)) {
        n += snprintf(line + n, sizeof line - n, "step %.0f", step);
        if (seedctl_jnum(j, "total_steps", &t))
            n += snprintf(line + n, sizeof line - n, "/%.0f", t);
    }
    if (seedctl_jstr(j, "stage"))
        n += snprintf(line + n, sizeof line - n, " (%s)", seedctl_jstr(j, "stage"));
    if (seedctl_jnum(j, "version", &v)) n += snprintf(line + n, sizeof line - n, "  v%.0f", v);
    /* success: the learner's overall figure, else the episode-weighted mean over envs */
    int have = seedctl_jnum(j, "success", &v);
    if (!have) {
        double num = 0, den = 0, s, e;
        const cJSON *env_json;
        cJSON_ArrayForEach(env_json, seedctl_jget(j, "envs")) {
            if (!seedctl_jnum(env_json, "success", &s)) continue;
            if (!seedctl_jnum(env_json, "episodes", &e)) e = 1;
            num += s * e;
            den += e;
        }
        if (den > 0) v = num / den, have = 1;
    }
    if (have) n += snprintf(line + n, sizeof line - n, "  success %.3f", v);
    if (seedctl_jnum(j, "throughput.tokens_per_s.rollout", &v))
        n += snprintf(line + n, sizeof line - n, "  tok/s %s", seedctl_human(v, b, sizeof b));
    else if (seedctl_jnum(j, "throughput.tokens_per_s", &v))
        n += snprintf(line + n, sizeof line - n, "  tok/s %s", seedctl_human(v, b, sizeof b));
    if (seedctl_jnum(j, "throughput.tokens_per_s.training", &v))
        n += snprintf(line + n, sizeof line - n, " (train %s)", seedctl_human(v, b, sizeof b));
    /* the periodic evaluation: the first one seen -> the latest, and on the training pool */
    double es, estep;
    if (seedctl_jnum(j, "eval.success", &es) && seedctl_jnum(j, "eval.step", &estep)) {
        double ps = NAN;
        if (!seedctl_jnum(j, "eval.pool.success", &ps)) ps = NAN;
        if (!L->eval0_set) L->eval0 = es, L->pool0 = ps, L->eval0_set = 1;
        n += snprintf(line + n, sizeof line - n, "  eval %.3f->%.3f", L->eval0, es);
        if (!isnan(ps) && !isnan(L->pool0))
            n += snprintf(line + n, sizeof line - n, " pool %.3f->%.3f", L->pool0, ps);
        n += snprintf(line + n, sizeof line - n, " @%.0f", estep);
    }
    int run[3] = {0, 0, 0};
    for (int i = 0; i < N_KIDS; i++)
        if (L->kids[i].pid > 0) run[L->kids[i].role]++;
    snprintf(line + n, sizeof line - n, "  | actors %d/%d analyzers %d/%d restarts %d",
             run[R_ACTOR], L->want[R_ACTOR], run[R_ANALYZER], L->want[R_ANALYZER],
             L->total_restarts);
    say(L, "%s", line);
}

static void status_poll_recv(launcher *L) {
    Seed__Envelope *m = NULL;
    char err[SEED_ERRLEN];
    int r = wire_recv(&L->status_rx, L->status_sock, &m, ZMQ_DONTWAIT, err, sizeof err);
    if (r <= 0) return;
    L->status_sent = 0;
    L->status_fails = 0;
    cJSON *j = cJSON_Parse(m->status_reply && m->status_reply->json ? m->status_reply->json : "");
    wire_free(m);
    if (!j) {
        say(L, "the learner's status is not JSON");
        return;
    }
    if (!L->quiet) progress_line(L, j);
    cJSON_Delete(j);
}

static int write_launch_record(launcher *L, char *err, size_t errlen) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "pid", (double)getpid());
    cJSON_AddStringToObject(j, "control", L->ctl_ep);
    cJSON_AddStringToObject(j, "status", L->job.endpoints.status);
    cJSON_AddStringToObject(j, "job", L->job.job.name);
    cJSON_AddStringToObject(j, "run_dir", L->run_abs);
    cJSON_AddStringToObject(j, "logs", L->logs);
    cJSON_AddNumberToObject(j, "started", seed_wall());
    char *text = cJSON_Print(j);
    cJSON_Delete(j);
    if (!text) return seed_errf(err, errlen, "out of memory");
    int rc = seed_write_file_atomic(L->json_path, text, strlen(text), err, errlen);
    free(text);
    return rc;
}

/* Are the learner's ports free? A second job on the same ports would crash-loop. */
static int check_ports(launcher *L, char *err, size_t errlen) {
    static const char *names[] = {"groups_in", "groups_out", "scored_in",
                                  "weights",   "telemetry",  "status"};
    for (int i = 0; i < 6; i++) {
        char ep[JOB_ENDPOINT_LEN];
        if (job_endpoint(&L->job, names[i], 1, ep, sizeof ep, err, errlen)) return -1;
        if (strncmp(ep, "tcp://", 6)) continue;
        void *s = zmq_socket(L->ctx, ZMQ_PULL);
        int zero = 0;
        zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
        int rc = zmq_bind(s, ep);
        int e = errno;
        zmq_close(s);
        if (rc != 0)
            return seed_errf(err, errlen,
                             "endpoints.%s: cannot bind %s: %s (another job on this machine? "
                             "set endpoints.base_port)",
                             names[i], ep, zmq_strerror(e));
    }
    return 0;
}

/* Control directories of this user's launches that were killed outright (SIGKILL skips the
 * cleanup): /tmp/seedctl-PID-XXXXXX whose PID is gone. */
static void sweep_control_dirs(void) {
    glob_t g;
    if (glob("/tmp/seedctl-*-*", GLOB_ONLYDIR, NULL, &g) != 0) return;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *d = g.gl_pathv[i];
        struct stat st;
        char *end;
        long pid = strtol(d + strlen("/tmp/seedctl-"), &end, 10);
        if (*end != '-' || pid <= 0 || lstat(d, &st) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid() || seedctl_pid_alive((pid_t)pid))
            continue;
        char sock[PATH_MAX];
        snprintf(sock, sizeof sock, "%s/control", d);
        unlink(sock);
        rmdir(d);
    }
    globfree(&g);
}

static int launcher_setup(launcher *L, const char *bin_dir, char *err, size_t errlen) {
    job_config *j = &L->job;
    for (int r = 0; r < 3; r++) {
        int need = r == R_LEARNER || (r == R_ACTOR ? j->roles.actors : j->roles.analyzers) > 0;
        if (need &&
            find_bin(bin_dir, ROLE_BIN[r], ROLE_NAME[r], L->bin[r], sizeof L->bin[r], err, errlen))
            return -1;
    }
    if (seed_mkdir_p(j->job.run_dir, err, errlen)) return -1;
    if (!realpath(j->job.run_dir, L->run_abs))
        return seed_errf(err, errlen, "cannot resolve %s: %s", j->job.run_dir, strerror(errno));
    snprintf(L->logs, sizeof L->logs, "%s/logs", L->run_abs);
    if (seed_mkdir_p(L->logs, err, errlen)) return -1;
    char lockp[PATH_MAX + 32];
    snprintf(lockp, sizeof lockp, "%s/seedctl.lock", L->run_abs);
    L->lock_fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (L->lock_fd < 0) return seed_errf(err, errlen, "cannot open %s: %s", lockp, strerror(errno));
    if (flock(L->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        launch_ref r;
        char e2[SEED_ERRLEN];
        int pid = seedctl_read_launch(L->run_abs, &r, e2, sizeof e2) == 0 ? (int)r.pid : 0;
        return seed_errf(err, errlen,
                         "a launch is already running in %s%s%.0d%s; stop it with `seedctl stop "
                         "--run %s`, or give this one its own job.name or job.run_dir",
                         j->job.run_dir, pid ? " (seedctl pid " : "", pid, pid ? ")" : "",
                         j->job.run_dir);
    }
    snprintf(L->json_path, sizeof L->json_path, "%s/seedctl.json", L->run_abs);
    if (check_ports(L, err, errlen)) return -1;

    /* The control socket changes a running job: ipc in a private directory (a short path
     * whatever run_dir is; nobody else can even reach it), and a ZAP handler that admits
     * only this uid (root passes directory modes; the kernel's peer credentials do not
     * lie). Never a TCP fallback. */
    sweep_control_dirs();
    snprintf(L->ctl_dir, sizeof L->ctl_dir, "/tmp/seedctl-%d-XXXXXX", (int)getpid());
    if (!mkdtemp(L->ctl_dir)) {
        int e = errno;
        L->ctl_dir[0] = 0;
        return seed_errf(err, errlen, "cannot make the control socket's directory under /tmp: %s",
                         strerror(e));
    }
    zap_policy zp = {NULL, NULL, (long)geteuid()};
    if (zap_create(&L->zap, &zp, err, errlen) || zap_attach(L->zap, L->ctx, err, errlen)) return -1;
    wire_sockopts o;
    wire_sockopts_init(&o);
    o.linger_ms = 0;
    o.max_msg_bytes = 1 << 20;
    L->ctl = wire_socket(L->ctx, ZMQ_ROUTER, &o, err, errlen);
    if (!L->ctl) return -1;
    static const char domain[] = "seedctl-control"; /* a NULL socket asks ZAP only with one */
    if (zmq_setsockopt(L->ctl, ZMQ_ZAP_DOMAIN, domain, strlen(domain)) != 0)
        return seed_errf(err, errlen, "control socket: ZMQ_ZAP_DOMAIN: %s", zmq_strerror(errno));
    char want[128];
    snprintf(want, sizeof want, "ipc://%s/control", L->ctl_dir);
    if (wire_bind(L->ctl, want, L->ctl_ep, sizeof L->ctl_ep, err, errlen)) return -1;
    wire_rx_init(&L->ctl_rx, "seedctl-control",
                 WIRE_ACCEPT(SEED__ENVELOPE__BODY_CONTROL) |
                     WIRE_ACCEPT(SEED__ENVELOPE__BODY_STATUS_REQUEST),
                 1 << 20, 1);
    wire_rx_init(&L->status_rx, "status", WIRE_ACCEPT(SEED__ENVELOPE__BODY_STATUS_REPLY),
                 (size_t)j->wire.max_msg_bytes, 0);
    if (seedctl_sockopts(j, &L->status_opts, err, errlen)) return -1;
    return write_launch_record(L, err, errlen);
}

static void launcher_banner(const launcher *L) {
    const job_config *j = &L->job;
    printf("seedctl: job %s \u2014 1 learner, %d actor%s, %d analyzer%s (seedctl pid %d)\n",
           j->job.name, L->want[R_ACTOR], L->want[R_ACTOR] == 1 ? "" : "s", L->want[R_ANALYZER],
           L->want[R_ANALYZER] == 1 ? "" : "s", (int)getpid());
    if (j->model.threads == 0) {
        long c = launch_cores();
        printf("  threads   learner %d, actor %d, analyzer %d on %ld cores (demand per trained "
               "token: learner %.2f, actors %.2f, analyzers %.2f)\n",
               launch_threads(R_LEARNER, L->want[R_ACTOR], L->want[R_ANALYZER], c),
               launch_threads(R_ACTOR, L->want[R_ACTOR], L->want[R_ANALYZER], c),
               launch_threads(R_ANALYZER, L->want[R_ACTOR], L->want[R_ANALYZER], c), c,
               LAUNCH_DEMAND_LEARNER, LAUNCH_DEMAND_ACTORS, LAUNCH_DEMAND_ANALYZERS);
    } else {
        printf("  threads   %d per process (model.threads)\n", j->model.threads);
    }
    printf("  run dir   %s\n", L->run_abs);
    printf("  logs      %s/{learner,actor-N,analyzer-N}.log\n", L->logs);
    printf("  programs  %s\n", L->bin[R_LEARNER]);
    printf("  status    seedctl status %s\n", j->endpoints.status);
    printf("  scale     seedctl scale actors=N analyzers=M --run %s\n", j->job.run_dir);
    printf("  stop      seedctl stop --run %s   (or Ctrl-C)\n", j->job.run_dir);
    fflush(stdout);
}

static int launcher_loop(launcher *L) {
    while (L->state != S_DONE) {
        double now = seed_now();
        const job_config *j = &L->job;
        /* start what should run */
        if (L->state == S_RUNNING) {
            for (int i = 0; i < N_KIDS; i++) {
                child *k = &L->kids[i];
                if (!k->wanted || k->pid > 0 || now < k->next_start) continue;
                char err[SEED_ERRLEN];
                if (spawn(L, k, err, sizeof err)) {
                    say(L, "%s", err);
                    k->gave_up = 1;
                    k->wanted = 0;
                    if (k->role == R_LEARNER) begin_stop(L, "the learner cannot start", 1);
                }
            }
        }
        /* stopping: learner first, then the rest; SIGKILL after roles.stop_timeout_s */
        if (L->state == S_STOP_LEARNER && L->kids[0].pid == 0) {
            L->state = S_STOP_OTHERS;
            for (int i = 1; i < N_KIDS; i++) term_child(&L->kids[i]);
        }
        if (L->state == S_STOP_OTHERS) {
            int left = 0;
            for (int i = 0; i < N_KIDS; i++) left += L->kids[i].pid > 0;
            if (!left) L->state = S_DONE;
        }
        for (int i = 0; i < N_KIDS; i++) {
            child *k = &L->kids[i];
            if (k->pid > 0 && k->term_sent && !k->kill_sent &&
                now - k->term_at > j->roles.stop_timeout_s) {
                say(L, "%s did not stop within %.0f s (roles.stop_timeout_s): SIGKILL", k->id,
                    j->roles.stop_timeout_s);
                signal_child(k, SIGKILL);
                k->kill_sent = 1;
            }
        }
        if (L->state == S_DONE) break;
        /* progress */
        if (L->state == S_RUNNING && L->kids[0].pid > 0) {
            if (L->status_sent > 0 &&
                now - L->status_sent >
                    SEED_MAX(j->status.interval_s, j->wire.request_timeout_ms / 1000.0)) {
                wire_close(L->status_sock); /* a REQ without its reply cannot send again */
                L->status_sock = NULL;
                L->status_sent = 0;
                if (++L->status_fails == 3 && !L->quiet)
                    say(L, "the learner does not answer on %s yet", j->endpoints.status);
            }
            if (L->status_sent == 0 && now >= L->next_status) {
                status_poll_send(L);
                L->next_status = now + j->status.interval_s;
            }
        }
        zmq_pollitem_t items[3] = {{L->ctl, 0, ZMQ_POLLIN, 0},
                                   {NULL, L->sfd, ZMQ_POLLIN, 0},
                                   {L->status_sock, 0, ZMQ_POLLIN, 0}};
        int n_items = L->status_sock ? 3 : 2;
        int rc = zmq_poll(items, n_items, 100);
        if (rc < 0 && errno != EINTR) {
            say(L, "poll: %s", zmq_strerror(errno));
            begin_stop(L, "internal error", 1);
            force_kill(L);
        }
        if (rc > 0 && (items[1].revents & ZMQ_POLLIN)) {
            struct signalfd_siginfo si;
            while (read(L->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (si.ssi_signo == SIGCHLD) continue; /* reaped below */
                if (L->state == S_RUNNING) {
                    begin_stop(L, strsignal((int)si.ssi_signo), 0);
                    if (!L->quiet) say(L, "press Ctrl-C again to kill everything at once");
                } else if (!L->force) {
                    L->force = 1;
                    say(L, "second signal: SIGKILL to every child");
                    force_kill(L);
                }
            }
        }
        reap(L);
        if (rc > 0 && (items[0].revents & ZMQ_POLLIN)) handle_control(L);
        if (rc > 0 && n_items == 3 && (items[2].revents & ZMQ_POLLIN)) status_poll_recv(L);
    }
    return L->exit_code;
}

int seedctl_launch(int argc, char **argv) {
    /* Several OpenMP processes on few cores: threads that spin while they wait steal the
     * cores the others need, so the children wait passively unless told otherwise. */
    setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    const char *bin_dir = getenv("SEED_BIN_DIR"), *path = NULL;
    int quiet = 0;
    launcher *L = calloc(1, sizeof *L);
    char **over = calloc((size_t)argc + 1, sizeof *over);
    if (!L || !over) return free(L), free(over), seedctl_fail("out of memory");
    int n_over = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--bin-dir")) {
            if (i + 1 >= argc)
                return free(L), free(over), seedctl_usage_error("--bin-dir needs a value");
            bin_dir = argv[++i];
        } else if (!strcmp(a, "--quiet")) {
            quiet = 1;
        } else if (a[0] == '-') {
            return free(L), free(over), seedctl_usage_error("launch: unknown option '%s'", a);
        } else if (strchr(a, '=')) {
            over[n_over++] = argv[i];
        } else if (!path) {
            path = a;
        } else {
            return free(L), free(over),
                   seedctl_usage_error("launch: one JOB.yaml only, got '%s' too", a);
        }
    }
    if (bin_dir && !*bin_dir) bin_dir = NULL;
    char err[SEED_ERRLEN];
    if (job_build(&L->job, path, n_over, over, err, sizeof err))
        return free(L), free(over), seedctl_fail(err);
    L->job_path = path;
    snprintf(L->bin_dir, sizeof L->bin_dir, "%s", bin_dir ? bin_dir : "");
    L->n_over = n_over;
    L->over = over;
    L->quiet = quiet;
    L->lock_fd = -1;
    L->sfd = -1;
    L->started = seed_now();

    /* signals arrive on a signalfd, polled with the sockets; blocked before the ZeroMQ
     * threads start so that they inherit the mask */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    L->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    L->ctx = zmq_ctx_new();
    int code;
    if (L->sfd < 0 || !L->ctx) {
        code = seedctl_fail("cannot set up signals or ZeroMQ");
    } else if (launcher_setup(L, bin_dir, err, sizeof err)) {
        code = seedctl_fail(err);
    } else {
        kid(L, R_LEARNER, 0)->role = R_LEARNER;
        snprintf(kid(L, R_LEARNER, 0)->id, sizeof L->kids[0].id, "learner");
        kid(L, R_LEARNER, 0)->wanted = 1;
        scale_role(L, R_ACTOR, L->job.roles.actors, err, sizeof err);
        scale_role(L, R_ANALYZER, L->job.roles.analyzers, err, sizeof err);
        launcher_banner(L);
        code = launcher_loop(L);
        say(L, "%s: %s; %d restart%s; logs in %s", code == 0 ? "done" : "failed", L->stop_reason,
            L->total_restarts, L->total_restarts == 1 ? "" : "s", L->logs);
        unlink(L->json_path);
        /* a job that ran to its end shows where it got */
        if (code == 0 && L->finished) seedctl_eval_print_run(L->run_abs);
    }
    wire_close(L->ctl);
    wire_close(L->status_sock);
    if (L->ctx) zmq_ctx_term(L->ctx);
    zap_free(L->zap);    /* its thread ended with the context */
    if (L->ctl_dir[0]) { /* the socket file, then its private directory */
        if (!strncmp(L->ctl_ep, "ipc://", 6)) unlink(L->ctl_ep + 6);
        rmdir(L->ctl_dir);
    }
    if (L->sfd >= 0) close(L->sfd);
    if (L->lock_fd >= 0) close(L->lock_fd);
    free(over);
    free(L);
    return code;
}
