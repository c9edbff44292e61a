/* prometheus.h — the learner's status document as Prometheus text exposition (format
 * 0.0.4), served over HTTP at /metrics by libmicrohttpd from a thread of its own.
 *
 * Contract:
 *  - learner_prom_render turns a status document (the JSON tree learner_status_json
 *    builds, learner/status.h) into exposition text: every number of the document (a
 *    null, which is how cJSON prints a NaN, as NaN; a boolean as 0/1) is one sample of a metric
 *    family with HELP and TYPE lines, counters named *_total, map keys (env, family,
 *    error reason, socket) and peer fields (id, role, host) as labels, escaped as the
 *    format says. A field the table in prometheus.c does not know is left out (it never
 *    breaks a scrape); learner_prom_unmapped lists such fields, for tests.
 *  - The server never touches learner state: the learner's I/O loop hands it a status
 *    document (learner_prom_publish, copied) once a tick, and each request renders the
 *    newest one outside any learner lock. So a scrape shows the state of at most one
 *    tick ago and cannot stall the hub.
 *  - learner_prom_start binds host:port ("*" or "": every interface; port 0: a free port,
 *    see learner_prom_port). Only GET/HEAD of /metrics answer 200; before the first
 *    publish, and when the newest document is older than max_age_s, they answer 503.
 *    Status and error follow STYLE.md (0 ok, -1 + err). */
#ifndef SEED_LEARNER_PROMETHEUS_H
#define SEED_LEARNER_PROMETHEUS_H

#include <cjson/cJSON.h>
#include <stddef.h>

/* Exposition text of the status document, malloc'd into *out (the caller frees). */
int learner_prom_render(const cJSON *status, char **out, char *err, size_t errlen);

/* How many numeric or boolean fields of the document no metric covers; their paths
 * (map keys as {name}, array items as []) go into buf, one per line. */
int learner_prom_unmapped(const cJSON *status, char *buf, size_t buflen);

typedef struct learner_prom learner_prom;

/* max_age_s > 0: a status document older than that (the I/O loop stopped handing new
 * ones) answers 503, so an HTTP liveness probe on /metrics sees a stuck learner. */
int learner_prom_start(learner_prom **out, const char *host, int port, double max_age_s, char *err,
                       size_t errlen);
/* The port the server listens on (the one chosen when started with port 0). */
int learner_prom_port(const learner_prom *p);
/* Hand the server the newest status document (JSON text; copied). */
int learner_prom_publish(learner_prom *p, const char *status_json);
/* Stop the server thread and free everything; NULL is fine. */
void learner_prom_stop(learner_prom *p);

#endif
