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

/* One colour per run, all PLOT_MAX_RUNS of them distinct: gnuplot's own eight (so run 1
 * is #9400D3 and run 2 #009E73, as ever), then eight more; its default cycles after 8. */
static const char *const COLOURS[PLOT_MAX_RUNS] = {
    "#9400D3", "#009E73", "#56B4E9", "#E69F00", "#F0E442", "#0072B2", "#E51E10", "#000000",
    "#8C564B", "#AA4499", "#44AA99", "#882255", "#999933", "#6699CC", "#CC6677", "#888888"};

/* One series of run r: column ycol against xcol as points joined by a dashed line, in
 * the run's colour; the legend names runs only (the title says what each style is). */
static void eval_series(FILE *g, const plot_run *r, int idx, int xcol, int ycol, int dash, int pt) {
    fputs(", ", g);
    put_quoted(g, r->data);
    fprintf(g, " using %d:%d with linespoints dt %d pt %d lc %d notitle", xcol, ycol, dash, pt,
            idx + 1);
}

/* One panel between screen x0 and x1: column xcol of every run against train (col 3),
 * eval (col 4) and the training-pool eval (col 5); the legend (one entry a run) only
 * where key is set. */
static void panel(FILE *g, const plot_run *runs, int n, int xcol, const char *xlabel, double x0,
                  double x1, int key) {
    fprintf(g,
            "set lmargin at screen %.3f\nset rmargin at screen %.3f\nset tmargin at screen 0.9\n",
            x0, x1);
    fputs(key ? "set key outside right top vertical Left reverse samplen 2\n" : "unset key\n", g);
    fprintf(g, "set xlabel '%s'\nplot ", xlabel);
    for (int i = 0; i < n; i++) {
        const char *name = strrchr(runs[i].dir, '/');
        name = name && name[1] ? name + 1 : runs[i].dir;
        if (i) fputs(", ", g);
        put_quoted(g, runs[i].data);
        fprintf(g, " using %d:3 with lines lw 2 lc %d title ", xcol, i + 1);
        put_quoted(g, name);
        if (runs[i].evals) eval_series(g, &runs[i], i, xcol, 4, 2, 7);
        if (runs[i].pools) eval_series(g, &runs[i], i, xcol, 5, 3, 5);
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
            /* noenhanced: run names are literal (static_skills has no subscript) */
            fputs("set terminal pngcairo noenhanced size 1600,560 font ',11'\nset output ", g);
            put_quoted(g, outpng);
            for (int i = 0; i < PLOT_MAX_RUNS; i++)
                fprintf(g, "\nset linetype %d lc rgb '%s'", i + 1, COLOURS[i]);
            fputs("\nset datafile missing '?'\nset grid\nset yrange [0:1]\n"
                  "set ylabel 'success'\nset multiplot title 'success rate: line = rolling "
                  "training success, dashed with circles = periodic evaluation, dotted with "
                  "squares = evaluation on the training pool'\n",
                  g);
            panel(g, runs, n, 1, "env steps", 0.05, 0.39, 0);
            panel(g, runs, n, 2, "wall time (minutes)", 0.45, 0.79, 1);
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
