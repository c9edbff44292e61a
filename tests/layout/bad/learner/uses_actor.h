/* a learner file that reaches into the actor: check_layout must refuse it */
#include "actor/rollout.h"
