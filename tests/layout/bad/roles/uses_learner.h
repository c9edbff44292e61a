/* shared code that depends on a role: check_layout must refuse it */
#include "common/util.h"
#include "learner/loss.h"
