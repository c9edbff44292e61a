/* status.h — the learner's status document: the one JSON object the status socket
 * answers with (ARCHITECTURE section 2) and /metrics renders (learner/prometheus.h).
 *
 * Contract: learner_status_json takes l->mu itself (the caller must not hold it), reads
 * a consistent snapshot of the learner's counters, queues, peers and the publisher's and
 * ZAP handler's stats, and returns a malloc'd compact JSON text (NULL when out of
 * memory). Each section of the document is built by a function of its own in status.c,
 * in the document's key order. */
#ifndef SEED_LEARNER_STATUS_H
#define SEED_LEARNER_STATUS_H

#include <stdint.h>

#include "learner/learner.h"

char *learner_status_json(learner *l);

/* Messages dropped as malformed on the hub's sockets by the wire layer, plus malformed
 * groups and the count kept from the run before a restart; the weights socket's are the
 * publisher's (weights_pub_stats) and not included. Caller holds mu. */
uint64_t learner_malformed(const learner *l);

/* A peer's role (Seed__Role) as the status document names it ("unknown" for others). */
const char *learner_role_name(int role);

#endif
