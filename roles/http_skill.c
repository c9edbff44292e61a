/* http_skill.c — see http_skill.h. One curl easy handle per request, all driven by one
 * multi handle, so a group's requests are in flight together and each keeps its own
 * retry clock. */
#define _GNU_SOURCE
#include "roles/http_skill.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct http_skill {
    char url[JOB_ENDPOINT_LEN + 32];
    char model[JOB_NAME_LEN];
    int timeout_ms, retries, backoff_ms, max_tokens;
    size_t max_bytes; /* a longer answer is refused */
    struct curl_slist *headers;
    CURLM *multi;
    int (*cancel)(void *);
    void *cancel_arg;
};

/* One request and its attempts. */
typedef struct req {
    http_skill *h;
    CURL *easy;
    char *body;
    seed_sbuf in;
    int over, running, done;
    double next_at; /* monotonic time of the next attempt */
    char cerr[CURL_ERROR_SIZE];
    http_skill_result *r;
} req;

const char *http_skill_url(const http_skill *h) {
    return h->url;
}

void http_skill_set_cancel(http_skill *h, int (*cancel)(void *), void *arg) {
    h->cancel = cancel;
    h->cancel_arg = arg;
}

int http_skill_new(http_skill **out, const job_config *job, char *err, size_t errlen) {
    *out = NULL;
    const char *base = job->analyzer.http_endpoint;
    if (strncmp(base, "http://", 7) != 0 && strncmp(base, "https://", 8) != 0)
        return seed_errf(err, errlen,
                         "analyzer.http_endpoint: expected an http:// or https:// base URL "
                         "(e.g. http://127.0.0.1:8000/v1), got '%s'",
                         base);
    /* reference counted, and thread-safe since libcurl 7.84: the learner calls this from
     * its trainer thread */
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return seed_errf(err, errlen, "libcurl failed to initialise");
    http_skill *h = calloc(1, sizeof *h);
    if (!h) {
        curl_global_cleanup();
        return seed_errf(err, errlen, "out of memory");
    }
    size_t bl = strlen(base);
    while (bl > 0 && base[bl - 1] == '/') bl--;
    snprintf(h->url, sizeof h->url, "%.*s/chat/completions", (int)bl, base);
    snprintf(h->model, sizeof h->model, "%s", job->analyzer.http_model);
    h->timeout_ms = job->analyzer.http_timeout_ms;
    h->retries = job->analyzer.http_retries;
    h->backoff_ms = job->analyzer.http_backoff_ms;
    h->max_tokens = job->analyzer.max_skill_tokens;
    /* room for the JSON around the content and for escaped text of max_tokens tokens */
    h->max_bytes = 65536 + 64 * (size_t)h->max_tokens;
    const char *key =
        job->analyzer.http_api_key_env[0] ? getenv(job->analyzer.http_api_key_env) : NULL;
    h->headers = curl_slist_append(NULL, "Content-Type: application/json");
    /* no "Expect: 100-continue" round trip before each body */
    if (h->headers) h->headers = curl_slist_append(h->headers, "Expect:");
    if (h->headers && key && key[0]) {
        size_t n = strlen(key) + 32;
        char *line = malloc(n);
        struct curl_slist *l = NULL;
        if (line) {
            snprintf(line, n, "Authorization: Bearer %s", key);
            l = curl_slist_append(h->headers, line);
            free(line);
        }
        if (!l) curl_slist_free_all(h->headers);
        h->headers = l;
    }
    h->multi = curl_multi_init();
    if (!h->headers || !h->multi) {
        http_skill_free(h);
        return seed_errf(err, errlen, "out of memory setting up the http analyzer");
    }
    *out = h;
    return 0;
}

void http_skill_free(http_skill *h) {
    if (!h) return;
    if (h->multi) curl_multi_cleanup(h->multi);
    curl_slist_free_all(h->headers);
    free(h);
    curl_global_cleanup();
}

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg) {
    req *q = arg;
    size_t n = size * nmemb;
    if (q->in.n + n > q->h->max_bytes) {
        q->over = 1;
        return 0; /* ends the transfer with CURLE_WRITE_ERROR */
    }
    return seed_sbuf_append(&q->in, p, n) ? 0 : n;
}

/* The request body: {model, messages: [system, user], max_tokens, temperature: 0}. */
static char *request_body(const http_skill *h, const char *user) {
    cJSON *j = cJSON_CreateObject();
    cJSON *msgs = cJSON_AddArrayToObject(j, "messages");
    cJSON *sys = cJSON_CreateObject(), *usr = cJSON_CreateObject();
    if (!j || !msgs || !sys || !usr) {
        cJSON_Delete(sys);
        cJSON_Delete(usr);
        cJSON_Delete(j);
        return NULL;
    }
    cJSON_AddItemToArray(msgs, sys);
    cJSON_AddItemToArray(msgs, usr);
    int bad = !cJSON_AddStringToObject(sys, "role", "system") ||
              !cJSON_AddStringToObject(sys, "content", ANALYZER_HTTP_SYSTEM) ||
              !cJSON_AddStringToObject(usr, "role", "user") ||
              !cJSON_AddStringToObject(usr, "content", user) ||
              !cJSON_AddNumberToObject(j, "max_tokens", h->max_tokens) ||
              !cJSON_AddNumberToObject(j, "temperature", 0);
    /* an empty model name leaves the choice to the server (vLLM, llama.cpp: its one model) */
    if (!bad && h->model[0]) bad = !cJSON_AddStringToObject(j, "model", h->model);
    char *s = bad ? NULL : cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* A short, printable excerpt of an answer body for an error sentence. */
static void excerpt(const char *p, size_t n, char *out, size_t len) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 4 < len && i < 160; i++)
        out[k++] = (unsigned char)p[i] < 0x20 ? ' ' : p[i];
    if (n > 160 && k + 4 < len) out[k++] = '.', out[k++] = '.', out[k++] = '.';
    out[k] = 0;
}

/* Judge a finished attempt: 0 with r->content set, or -1 with *why set and *retry saying
 * whether asking again may help. */
static int judge(req *q, CURLcode cc, char *why, size_t wl, int *retry) {
    http_skill *h = q->h;
    char ex[200];
    *retry = 1;
    long code = 0;
    curl_easy_getinfo(q->easy, CURLINFO_RESPONSE_CODE, &code);
    q->r->http_status = code;
    if (cc != CURLE_OK) {
        if (q->over)
            snprintf(why, wl, "answered more than %zu bytes (the bound for max_skill_tokens %d)",
                     h->max_bytes, h->max_tokens);
        else if (cc == CURLE_OPERATION_TIMEDOUT)
            snprintf(why, wl, "no answer within %d ms (analyzer.http_timeout_ms)", h->timeout_ms);
        else if (cc == CURLE_COULDNT_CONNECT)
            snprintf(why, wl, "could not connect (%s)", q->cerr[0] ? q->cerr : "refused");
        else {
            *retry = cc != CURLE_URL_MALFORMAT && cc != CURLE_UNSUPPORTED_PROTOCOL;
            snprintf(why, wl, "%s (%s)", curl_easy_strerror(cc), q->cerr);
        }
        return -1;
    }
    cJSON *j = cJSON_ParseWithLength(q->in.p ? q->in.p : "", q->in.n);
    if (code < 200 || code >= 300) {
        /* OpenAI-style servers explain an error in {"error": {"message": ...}} */
        cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        cJSON *m = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : e;
        if (cJSON_IsString(m))
            excerpt(m->valuestring, strlen(m->valuestring), ex, sizeof ex);
        else
            excerpt(q->in.p ? q->in.p : "", q->in.n, ex, sizeof ex);
        snprintf(why, wl, "answered HTTP %ld: '%s'", code, ex);
        *retry = code >= 500 || code == 408 || code == 429;
        cJSON_Delete(j);
        return -1;
    }
    if (!j) {
        excerpt(q->in.p ? q->in.p : "", q->in.n, ex, sizeof ex);
        snprintf(why, wl, "answered a body that is not JSON: '%s'", ex);
        return -1;
    }
    cJSON *ch = cJSON_GetObjectItemCaseSensitive(j, "choices");
    cJSON *c0 = cJSON_IsArray(ch) ? cJSON_GetArrayItem(ch, 0) : NULL;
    cJSON *msg = cJSON_IsObject(c0) ? cJSON_GetObjectItemCaseSensitive(c0, "message") : NULL;
    cJSON *content = cJSON_IsObject(msg) ? cJSON_GetObjectItemCaseSensitive(msg, "content") : NULL;
    int rc = -1;
    if (!cJSON_IsString(content)) {
        snprintf(why, wl, "answered JSON without a string choices[0].message.content (%s)",
                 !cJSON_IsArray(ch) ? "no choices array"
                 : !c0              ? "choices is empty"
                 : !msg             ? "no message"
                 : content == NULL  ? "no content"
                                    : "content is not a string");
    } else {
        const char *s = content->valuestring;
        size_t n = strlen(s), k = 0;
        while (k < n && (s[k] == ' ' || s[k] == '\n' || s[k] == '\t' || s[k] == '\r')) k++;
        if (k == n) {
            cJSON *fr = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
            snprintf(why, wl, "answered an empty message content (finish_reason %s)",
                     cJSON_IsString(fr) ? fr->valuestring : "none");
        } else if (seed_sbuf_append(&q->r->content, s, n)) {
            snprintf(why, wl, "out of memory keeping the answer");
        } else {
            rc = 0;
        }
    }
    cJSON_Delete(j);
    return rc;
}

static void finish(req *q, const char *why) {
    q->done = 1;
    q->r->status = why ? -1 : 0;
    if (why)
        snprintf(q->r->err, sizeof q->r->err, "http analyzer %s: %s, after %d attempt%s", q->h->url,
                 why, q->r->attempts, q->r->attempts == 1 ? "" : "s");
}

static int start(req *q) {
    q->in.n = 0;
    q->over = 0;
    q->cerr[0] = 0;
    q->r->attempts++;
    if (curl_multi_add_handle(q->h->multi, q->easy) != CURLM_OK) return -1;
    q->running = 1;
    return 0;
}

int http_skill_chat(http_skill *h, int n, const char *const *user, http_skill_result *res) {
    req *qs = calloc((size_t)n + 1, sizeof *qs);
    int pending = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        req *q = qs ? &qs[i] : NULL;
        http_skill_result *r = &res[i];
        r->status = -1;
        r->attempts = 0;
        r->http_status = 0;
        r->content.n = 0;
        r->err[0] = 0;
        if (!q) {
            snprintf(r->err, sizeof r->err, "http analyzer %s: out of memory", h->url);
            continue;
        }
        q->h = h;
        q->r = r;
        if (!user[i]) {
            snprintf(r->err, sizeof r->err, "http analyzer %s: no request text (out of memory)",
                     h->url);
            q->done = 1;
            continue;
        }
        q->body = request_body(h, user[i]);
        q->easy = curl_easy_init();
        if (!q->body || !q->easy) {
            snprintf(r->err, sizeof r->err, "http analyzer %s: out of memory", h->url);
            q->done = 1;
            continue;
        }
        curl_easy_setopt(q->easy, CURLOPT_URL, h->url);
        curl_easy_setopt(q->easy, CURLOPT_HTTPHEADER, h->headers);
        curl_easy_setopt(q->easy, CURLOPT_POSTFIELDS, q->body);
        curl_easy_setopt(q->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(q->body));
        curl_easy_setopt(q->easy, CURLOPT_WRITEFUNCTION, on_data);
        curl_easy_setopt(q->easy, CURLOPT_WRITEDATA, q);
        curl_easy_setopt(q->easy, CURLOPT_TIMEOUT_MS, (long)h->timeout_ms);
        curl_easy_setopt(q->easy, CURLOPT_NOSIGNAL, 1L); /* timeouts without SIGALRM: threads */
        curl_easy_setopt(q->easy, CURLOPT_ERRORBUFFER, q->cerr);
        curl_easy_setopt(q->easy, CURLOPT_PRIVATE, q);
        pending++;
    }
    while (pending > 0) {
        double now = seed_now();
        if (h->cancel && h->cancel(h->cancel_arg)) {
            for (int i = 0; i < n; i++) {
                if (qs[i].done) continue;
                if (qs[i].running) curl_multi_remove_handle(h->multi, qs[i].easy);
                qs[i].running = 0;
                finish(&qs[i], "cancelled (the process is stopping)");
            }
            break;
        }
        double wake = now + 0.1; /* poll cancel at least every 100 ms */
        for (int i = 0; i < n; i++) {
            req *q = &qs[i];
            if (q->done || q->running) continue;
            if (q->next_at <= now) {
                if (start(q)) {
                    finish(q, "libcurl refused the request");
                    pending--;
                }
            } else if (q->next_at < wake) {
                wake = q->next_at;
            }
        }
        int still = 0;
        curl_multi_perform(h->multi, &still);
        CURLMsg *m;
        int left;
        while ((m = curl_multi_info_read(h->multi, &left))) {
            if (m->msg != CURLMSG_DONE) continue;
            req *q = NULL;
            curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&q);
            CURLcode cc = m->data.result;
            curl_multi_remove_handle(h->multi, q->easy);
            q->running = 0;
            char why[SEED_ERRLEN];
            int retry = 0;
            if (judge(q, cc, why, sizeof why, &retry) == 0) {
                finish(q, NULL);
                pending--;
            } else if (retry && q->r->attempts <= h->retries) {
                /* back-off doubles per attempt: backoff_ms, 2x, 4x, ... */
                double wait =
                    h->backoff_ms / 1000.0 * (double)(1ULL << SEED_MIN(q->r->attempts - 1, 20));
                q->next_at = seed_now() + wait;
                if (q->next_at < wake) wake = q->next_at;
            } else {
                finish(q, why);
                pending--;
            }
        }
        if (pending <= 0) break;
        int wait_ms = (int)((wake - seed_now()) * 1000.0);
        if (wait_ms > 0) curl_multi_poll(h->multi, NULL, 0, wait_ms, NULL);
    }
    for (int i = 0; i < n && qs; i++) {
        if (qs[i].easy) curl_easy_cleanup(qs[i].easy);
        cJSON_free(qs[i].body);
        seed_sbuf_free(&qs[i].in);
    }
    free(qs);
    for (int i = 0; i < n; i++) failed += res[i].status != 0;
    return failed;
}

int http_skill_ask(http_skill *h, int n, const skill_traj *t, int max_obs_chars,
                   http_skill_result *res) {
    seed_sbuf *text = calloc((size_t)n + 1, sizeof *text);
    const char **user = calloc((size_t)n + 1, sizeof *user);
    int failed = 0;
    if (!text || !user) {
        for (int i = 0; i < n; i++) {
            res[i].status = -1;
            snprintf(res[i].err, sizeof res[i].err, "http analyzer %s: out of memory", h->url);
        }
        failed = n;
    } else {
        char err[SEED_ERRLEN];
        for (int i = 0; i < n; i++)
            if (skill_request(&t[i], max_obs_chars, &text[i], err, sizeof err) == 0)
                user[i] = text[i].p;
        failed = http_skill_chat(h, n, user, res);
    }
    for (int i = 0; text && i < n; i++) seed_sbuf_free(&text[i]);
    free(text);
    free(user);
    return failed;
}
