/* sokoban.h — read access to a sokoban env's level, for tests, benchmarks and tools.
 *
 * Contract: the cells use gym-sokoban's codes (0 wall, 1 floor, 2 target, 3 box on
 * target, 4 box off target, 5 player), row-major, rows x cols. `fixed` is gym-sokoban's
 * room_fixed (walls, floors, targets), `state` its room_state. */
#ifndef SEED_ENV_SOKOBAN_H
#define SEED_ENV_SOKOBAN_H

#include <stdint.h>

#include "envs/env.h"

enum { ENV_SOKOBAN_MAX_DIM = 16, ENV_SOKOBAN_MAX_CELLS = 256, ENV_SOKOBAN_MAX_BOXES = 6 };

/* Copies the current level (fixed/state may be NULL); fails when e is not a sokoban env. */
int env_sokoban_level(const env *e, int *rows, int *cols, uint8_t *fixed, uint8_t *state);

/* Length of the shortest solution from the current state: >= 0, -1 when the level can
 * no longer be solved, -2 when the solver's state limit was reached. */
int env_sokoban_distance(env *e);

#endif
