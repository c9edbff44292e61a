/* prom_server_test — learner/prometheus.c's HTTP side over real loopback HTTP (libcurl):
 * 503 before the first status document, 200 with the rendered text after it, the newest
 * document wins, 404 off /metrics, 405 for other methods, HEAD, scrapes from several
 * threads while the document changes, 503 for a stale document, and the errors of a port
 * in use and a bad host. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "learner/prometheus.h"

#include "tests/check.h"

typedef struct body {
    char *p;
    size_t n;
} body;

static size_t on_data(char *d, size_t sz, size_t nm, void *u) {
    body *b = u;
    char *q = realloc(b->p, b->n + sz * nm + 1);
    if (!q) return 0;
    memcpy(q + b->n, d, sz * nm);
    b->n += sz * nm;
    q[b->n] = 0;
    b->p = q;
    return sz * nm;
}

/* One request; the status code (-1: no answer), body and Content-Type. */
static long fetch(int port, const char *path, const char *method, body *b, char *ctype,
                  size_t ctlen) {
    CURL *c = curl_easy_init();
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    b->p = NULL;
    b->n = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else if (strcmp(method, "GET"))
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    long code = -1;
    if (curl_easy_perform(c) == CURLE_OK) {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        char *ct = NULL;
        curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
        if (ctype) snprintf(ctype, ctlen, "%s", ct ? ct : "");
    }
    curl_easy_cleanup(c);
    return code;
}

static char *render(const char *json) {
    cJSON *d = cJSON_Parse(json);
    char *out = NULL, err[SEED_ERRLEN];
    if (!d || learner_prom_render(d, &out, err, sizeof err)) out = NULL;
    cJSON_Delete(d);
    return out;
}

typedef struct scraper {
    int port, ok, bad;
} scraper;

static void *scrape(void *u) {
    scraper *s = u;
    for (int i = 0; i < 20; i++) {
        body b;
        long code = fetch(s->port, "/metrics", "GET", &b, NULL, 0);
        if (code == 200 && b.p && strstr(b.p, "# TYPE seed_steps_total counter"))
            s->ok++;
        else
            s->bad++;
        free(b.p);
    }
    return NULL;
}

int main(void) {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char err[SEED_ERRLEN];
    learner_prom *p = NULL;
    int rc = learner_prom_start(&p, "127.0.0.1", 0, 0, err, sizeof err);
    CHECK(rc == 0 && p, "start on 127.0.0.1:0: %s", err);
    if (!p) return 1;
    int port = learner_prom_port(p);
    CHECK(port > 0, "a free port was chosen (got %d)", port);

    body b;
    char ct[128] = "";
    long code = fetch(port, "/metrics", "GET", &b, ct, sizeof ct);
    CHECK(code == 503, "before any status: 503, got %ld", code);
    free(b.p);

    const char *doc1 = "{\"job\":\"j\",\"step\":3,\"envs\":{\"sokoban\":{\"success\":0.5}}}";
    const char *doc2 = "{\"job\":\"j\",\"step\":4,\"envs\":{\"sokoban\":{\"success\":0.75}}}";
    CHECK(learner_prom_publish(p, doc1) == 0, "publish");
    code = fetch(port, "/metrics", "GET", &b, ct, sizeof ct);
    char *want = render(doc1);
    CHECK(code == 200, "GET /metrics: 200, got %ld", code);
    CHECK(!strcmp(ct, "text/plain; version=0.0.4; charset=utf-8"), "content type: got '%s'", ct);
    CHECK(b.p && want && !strcmp(b.p, want), "the body is the rendered document:\n%s",
          b.p ? b.p : "(none)");
    CHECK(b.p && strstr(b.p, "\nseed_steps_total 3\n"), "step 3 in the body");
    free(b.p);
    free(want);

    CHECK(learner_prom_publish(p, doc2) == 0, "publish again");
    code = fetch(port, "/metrics", "GET", &b, NULL, 0);
    CHECK(code == 200 && b.p && strstr(b.p, "\nseed_steps_total 4\n") &&
              strstr(b.p, "seed_env_success{env=\"sokoban\"} 0.75\n"),
          "the newest document is served, got:\n%s", b.p ? b.p : "(none)");
    free(b.p);

    code = fetch(port, "/", "GET", &b, NULL, 0);
    CHECK(code == 404 && b.p && strstr(b.p, "/metrics"), "GET /: 404 naming /metrics, got %ld",
          code);
    free(b.p);
    code = fetch(port, "/metrics", "POST", &b, NULL, 0);
    CHECK(code == 405, "POST /metrics: 405, got %ld", code);
    free(b.p);
    code = fetch(port, "/metrics", "HEAD", &b, NULL, 0);
    CHECK(code == 200 && b.n == 0, "HEAD /metrics: 200 without a body, got %ld (%zu bytes)", code,
          b.n);
    free(b.p);

    /* a status document that is not JSON: 500, and the server goes on */
    CHECK(learner_prom_publish(p, "{not json") == 0, "publish garbage");
    code = fetch(port, "/metrics", "GET", &b, NULL, 0);
    CHECK(code == 500, "unparseable status: 500, got %ld", code);
    free(b.p);

    /* scrapes from four threads while the document keeps changing */
    learner_prom_publish(p, doc1); /* before any scraper asks: never the garbage above */
    scraper s[4];
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        s[i] = (scraper){port, 0, 0};
        pthread_create(&t[i], NULL, scrape, &s[i]);
    }
    for (int i = 0; i < 200; i++) learner_prom_publish(p, i % 2 ? doc1 : doc2);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        CHECK(s[i].ok == 20 && s[i].bad == 0, "scraper %d: %d ok, %d bad", i, s[i].ok, s[i].bad);
    }

    /* the port is taken now: a second server says which address and key */
    learner_prom *q = NULL;
    rc = learner_prom_start(&q, "127.0.0.1", port, 0, err, sizeof err);
    CHECK(rc != 0 && !q && strstr(err, "endpoints.metrics_port") && strstr(err, "127.0.0.1"),
          "a port in use is an error naming the key and address, got rc %d '%s'", rc, err);
    rc = learner_prom_start(&q, "no-such-host.invalid", 0, 0, err, sizeof err);
    CHECK(rc != 0 && !q && strstr(err, "no-such-host.invalid"),
          "an unresolvable host is an error naming it, got rc %d '%s'", rc, err);
    rc = learner_prom_start(&q, "127.0.0.1", 70000, 0, err, sizeof err);
    CHECK(rc != 0 && !q, "port 70000 is refused");

    /* max_age_s: a document older than that (a stuck I/O loop) answers 503, a fresh one
     * 200 again; 5 s of age against a 6 s sleep, so a slow machine cannot flip it */
    rc = learner_prom_start(&q, "127.0.0.1", 0, 5.0, err, sizeof err);
    CHECK(rc == 0 && q, "start with max_age_s: %s", err);
    if (q) {
        int qport = learner_prom_port(q);
        learner_prom_publish(q, doc1);
        code = fetch(qport, "/metrics", "GET", &b, NULL, 0);
        CHECK(code == 200, "fresh document: 200, got %ld", code);
        free(b.p);
        sleep(6);
        code = fetch(qport, "/metrics", "GET", &b, NULL, 0);
        CHECK(code == 503 && b.p && strstr(b.p, "stale"), "stale document: 503, got %ld %s", code,
              b.p ? b.p : "");
        free(b.p);
        learner_prom_publish(q, doc2);
        code = fetch(qport, "/metrics", "GET", &b, NULL, 0);
        CHECK(code == 200, "published again: 200, got %ld", code);
        free(b.p);
        learner_prom_stop(q);
    }

    learner_prom_stop(p);
    learner_prom_stop(NULL);
    code = fetch(port, "/metrics", "GET", &b, NULL, 0);
    CHECK(code == -1, "stopped: nothing answers, got %ld", code);
    free(b.p);
    curl_global_cleanup();
    if (check_failures) {
        fprintf(stderr, "%d check(s) failed\n", check_failures);
        return 1;
    }
    printf("prom_server_test: all checks passed\n");
    return 0;
}
