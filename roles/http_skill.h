/* http_skill.h — the external analyzer over HTTP: a client of an OpenAI-compatible
 * chat-completions endpoint (vLLM, SGLang, llama.cpp, OpenAI, ...) that writes hindsight
 * skills (analyzer.skill_source: http, stage 2; and the stage-1 SFT labels).
 *
 * One request per trajectory: POST {analyzer.http_endpoint}/chat/completions with
 * {model, messages: [system, user], max_tokens, temperature: 0}; the user message is
 * skill_request()'s text (the same analysis prompt the policy answers, without
 * a chat template: the server applies its own). The key, when the environment variable
 * named by analyzer.http_api_key_env is set and not empty, goes as
 * "Authorization: Bearer KEY". The answer is choices[0].message.content.
 *
 * Each request has analyzer.http_timeout_ms, and is tried again up to
 * analyzer.http_retries times, waiting analyzer.http_backoff_ms, then twice that, ...
 * between attempts. Every failure is retried (refused connection, timeout, HTTP 5xx,
 * 408 and 429, a body that is not JSON, missing fields, empty content, an answer over
 * the size bound) except the client errors that asking again cannot fix (other 4xx, a
 * malformed URL). A batch sends its requests concurrently. A failure ends as one
 * sentence naming the endpoint, what was wrong and how many attempts were made. */
#ifndef SEED_ROLES_HTTP_SKILL_H
#define SEED_ROLES_HTTP_SKILL_H

#include <stddef.h>

#include "roles/skill.h"
#include "common/job.h"
#include "common/util.h"

/* The system message of every request. */
#define ANALYZER_HTTP_SYSTEM                                                                       \
    "You are an expert reviewer of AI agent trajectories. You write short, reusable "              \
    "hindsight skills: concrete workflows and rules an agent can follow next time."

typedef struct http_skill http_skill;

/* The outcome of one request. content is the answer (NUL-terminated) when status is 0;
 * err holds the sentence when status is -1. */
typedef struct http_skill_result {
    int status;
    int attempts;     /* requests sent */
    long http_status; /* of the last attempt; 0 when none came back */
    seed_sbuf content;
    char err[SEED_ERRLEN];
} http_skill_result;

/* A client for the job's analyzer.http_* keys (endpoint, model, key variable, timeout,
 * retries, back-off) and analyzer.max_skill_tokens. The key is read from the
 * environment here. Fails on an endpoint that is not an http(s) URL. */
int http_skill_new(http_skill **out, const job_config *job, char *err, size_t errlen);
void http_skill_free(http_skill *h);
/* cancel(arg) is polled while requests are in flight or waiting to be retried; once it
 * returns non-zero the unfinished requests fail at once ("cancelled"). */
void http_skill_set_cancel(http_skill *h, int (*cancel)(void *), void *arg);
/* The URL requests go to ({endpoint}/chat/completions). */
const char *http_skill_url(const http_skill *h);

/* Send n user messages concurrently; res[i] gets request i's outcome (zero-initialise
 * res; free each content with seed_sbuf_free). Returns how many failed. */
int http_skill_chat(http_skill *h, int n, const char *const *user, http_skill_result *res);

/* The skill for each of n trajectories: renders each as skill_request (long
 * observations cut to max_obs_chars) and asks. Returns how many failed. */
int http_skill_ask(http_skill *h, int n, const skill_traj *t, int max_obs_chars,
                   http_skill_result *res);

#endif
