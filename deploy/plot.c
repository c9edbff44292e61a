/* plot.c — see plot.h. */
#define _GNU_SOURCE
#include "deploy/plot.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

enum { PLOT_MAX_RUNS = 16 };

/* One run's points, written to a gnuplot data file: env_steps minutes train eval pool. */
typedef struct plot_run {
    const char *dir;
    char data[1200];
    int points, evals, pools, skipped;
} plot_run;

/* The mean of the record's "success/..." values (NAN when it has none). */
static double train_success(const cJSON *rec) {
    double sum = 0;
    int n = 0;
    for (const cJSON *x = rec->child; x; x = x->next)
        if (x->string && !strncmp(x->string, "success/", 8) && cJSON_IsNumber(x)) {
            sum += x->valuedouble;
            n++;
        }
    return n ? sum / n : NAN;
}

static double num(const cJSON *rec, const char *key) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(rec, key);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* metrics.jsonl of r->dir -> the data file r->data (in tmp). */
static int read_run(plot_run *r, const char *tmp, int idx, char *err, size_t errlen) {
    char path[1100];
    snprintf(path, sizeof path, "%s/metrics.jsonl", r->dir);
    FILE *in = fopen(path, "r");
    if (!in) return seed_errf(err, errlen, "%s: cannot read it (is %s a run dir?)", path, r->dir);
    snprintf(r->data, sizeof r->data, "%s/run%d.dat", tmp, idx);
    FILE *out = fopen(r->data, "w");
    if (!out) {
        fclose(in);
        return seed_errf(err, errlen, "%s: cannot write a temporary file", r->data);
    }
    char *line = NULL;
    size_t cap = 0;
    double t0 = NAN;
    while (getline(&line, &cap, in) > 0) {
        cJSON *rec = cJSON_Parse(line);
        if (!cJSON_IsObject(rec)) {
            if (line[strspn(line, " \t\r\n")]) r->skipped++;
            cJSON_Delete(rec);
            continue;
        }
        double steps = num(rec, "env_steps_seen"), t = num(rec, "time");
        double tr = train_success(rec), ev = num(rec, "eval_success");
        double pl = num(rec, "eval_pool_success");
        cJSON_Delete(rec);
        if (isnan(steps) || isnan(t) || (isnan(tr) && isnan(ev) && isnan(pl))) continue;
        if (isnan(t0)) t0 = t;
        /* "?" is gnuplot's missing value: a line skips it, points are not drawn */
        char a[32] = "?", b[32] = "?", c[32] = "?";
        if (!isnan(tr)) snprintf(a, sizeof a, "%.6g", tr);
        if (!isnan(ev)) snprintf(b, sizeof b, "%.6g", ev);
        if (!isnan(pl)) snprintf(c, sizeof c, "%.6g", pl);
        fprintf(out, "%.0f %.4f %s %s %s\n", steps, (t - t0) / 60.0, a, b, c);
        r->points++;
        r->evals += !isnan(ev);
        r->pools += !isnan(pl);
    }
    free(line);
    fclose(in);
    if (fclose(out) != 0) return seed_errf(err, errlen, "%s: write failed", r->data);
    if (r->points == 0)
        return seed_errf(err, errlen, "%s: no record with env_steps_seen, time and a success value",
                         path);
    return 0;
}

/* gnuplot's string quoting: single quotes, a quote doubled. */
static void put_quoted(FILE *f, const char *s) {
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputc('\'', f);
        fputc(*s, f);
    }
    fputc('\'', f);
}

/* One series of run r: column ycol against xcol as points joined by a dashed line. */
static void eval_series(FILE *g, const plot_run *r, int idx, const char *name, int xcol, int ycol,
                        int dash, int pt, const char *what) {
    fputs(", ", g);
    put_quoted(g, r->data);
    fprintf(g, " using %d:%d with linespoints dt %d pt %d lc %d title ", xcol, ycol, dash, pt,
            idx + 1);
    char t[300];
    snprintf(t, sizeof t, "%s (%s)", name, what);
    put_quoted(g, t);
}

/* One panel: column xcol of every run against train (col 3), eval (col 4) and the
 * training-pool eval (col 5). */
static void panel(FILE *g, const plot_run *runs, int n, int xcol, const char *xlabel) {
    fprintf(g, "set xlabel '%s'\nplot ", xlabel);
    for (int i = 0; i < n; i++) {
        const char *name = strrchr(runs[i].dir, '/');
        name = name && name[1] ? name + 1 : runs[i].dir;
        if (i) fputs(", ", g);
        put_quoted(g, runs[i].data);
        fprintf(g, " using %d:3 with lines lw 2 lc %d title ", xcol, i + 1);
        put_quoted(g, name);
        if (runs[i].evals) eval_series(g, &runs[i], i, name, xcol, 4, 2, 7, "eval");
        if (runs[i].pools) eval_series(g, &runs[i], i, name, xcol, 5, 3, 5, "eval, training pool");
    }
    fputc('\n', g);
}

static int usage(const char *msg) {
    fprintf(stderr, "seedctl plot: %s\nusage: seedctl plot RUN [RUN...] [-o FILE.png]\n", msg);
    return 2;
}

int seedctl_plot(int argc, char **argv) {
    plot_run runs[PLOT_MAX_RUNS];
    int n = 0;
    const char *outpng = "curves.png";
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
            if (++i >= argc) return usage("-o needs a file name");
            outpng = argv[i];
        } else if (argv[i][0] == '-') {
            char m[300];
            snprintf(m, sizeof m, "unknown option '%s'", argv[i]);
            return usage(m);
        } else if (n == PLOT_MAX_RUNS) {
            return usage("at most 16 runs in one plot");
        } else {
            memset(&runs[n], 0, sizeof runs[n]);
            runs[n++].dir = argv[i];
        }
    }
    if (n == 0) return usage("expected at least one RUN directory");
    char tmp[] = "/tmp/seedctl-plot-XXXXXX";
    if (!mkdtemp(tmp)) {
        fprintf(stderr, "seedctl plot: cannot make a temporary directory\n");
        return 1;
    }
    char err[SEED_ERRLEN];
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if (read_run(&runs[i], tmp, i, err, sizeof err)) {
            fprintf(stderr, "seedctl plot: %s\n", err);
            rc = 1;
        } else if (runs[i].skipped) {
            fprintf(stderr, "seedctl plot: %s: %d line(s) that are not JSON objects skipped\n",
                    runs[i].dir, runs[i].skipped);
        }
    }
    if (!rc) {
        /* gnuplot's own errors reach stderr; its exit status says whether it drew */
        FILE *g = popen("gnuplot", "w");
        if (!g) {
            fprintf(stderr, "seedctl plot: cannot run gnuplot\n");
            rc = 1;
        } else {
            fputs("set terminal pngcairo size 1400,520 font ',11'\nset output ", g);
            put_quoted(g, outpng);
            fputs("\nset datafile missing '?'\nset key bottom right\nset grid\n"
                  "set yrange [0:1]\nset ylabel 'success'\n"
                  "set multiplot layout 1,2 title 'seed: success rate'\n",
                  g);
            panel(g, runs, n, 1, "env steps");
            panel(g, runs, n, 2, "wall time (minutes)");
            fputs("unset multiplot\nset output\n", g);
            int st = pclose(g);
            if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                fprintf(stderr,
                        "seedctl plot: gnuplot failed%s (Debian's gnuplot-nox provides it; "
                        "deploy/install.sh installs it)\n",
                        WIFEXITED(st) && WEXITSTATUS(st) == 127 ? ": not found" : "");
                rc = 1;
            }
        }
    }
    for (int i = 0; i < n; i++)
        if (runs[i].data[0]) unlink(runs[i].data);
    rmdir(tmp);
    if (!rc) printf("%s: %d run(s)\n", outpng, n);
    return rc;
}
