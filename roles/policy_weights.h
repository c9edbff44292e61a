/* policy_weights.h — the model side of the weight broadcast: the tensor table of a
 * model's parameter blob (what the learner publishes and receivers check against), and
 * swapping a complete received version into a model between two forward passes. */
#ifndef SEED_ROLES_POLICY_WEIGHTS_H
#define SEED_ROLES_POLICY_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "proto/weights.h"

/* The fp32 tensor table of model_params(m) (malloc'd, *n rows); NULL when out of memory. */
weights_tensor *policy_weights_table(const model *m, int *n);

struct job_config;
/* A receiver connected to the job's weights endpoint that accepts only versions whose
 * tensor table matches m (a learner serving another model is refused, naming the
 * tensor). */
int policy_weights_connect(weights_rx **out, const struct job_config *job, const model *m,
                           const char *id, char *err, size_t errlen);

/* Wait up to wait_ms for a newer complete version and copy it into m. 1: applied
 * (*version updated), 0: none newer, -1: refused or unusable (logged). */
int policy_weights_apply(weights_rx *rx, model *m, int wait_ms, uint64_t *version);

#endif
