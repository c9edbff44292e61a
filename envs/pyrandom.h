/* pyrandom.h — the random streams of CPython's `random` module and of numpy's legacy
 * `np.random` (RandomState), reproduced bit for bit on MT19937.
 *
 * Why: gym-sokoban's level generator (and verl-agent's copy of it) draws from both
 * streams after `random.seed(s); np.random.seed(s)`, and gym_cards' EZPoints draws from
 * `random.seed(s)`. Reproducing the streams makes seed's levels identical to the Python
 * ones for the same 32-bit seed, so the generators can be tested for exact equality.
 * Deterministic on every machine; no global state (each stream is a caller-owned
 * struct). Only the calls those generators use are provided. */
#ifndef SEED_ENV_PYRANDOM_H
#define SEED_ENV_PYRANDOM_H

#include <stdint.h>

typedef struct env_mt19937 {
    uint32_t mt[624];
    int idx;
} env_mt19937;

/* random.seed(seed) for a non-negative integer seed (init_by_array over its 32-bit words). */
void env_pyrandom_seed(env_mt19937 *r, uint64_t seed);
/* np.random.seed(seed) for a seed in [0, 2^32) (init_genrand). */
void env_nprandom_seed(env_mt19937 *r, uint32_t seed);

uint32_t env_mt_u32(env_mt19937 *r);
/* random.random(): 53-bit float in [0, 1). */
double env_pyrandom_random(env_mt19937 *r);
/* random._randbelow(n) for 0 < n < 2^32: what randint/randrange/choice/sample(k=1) use. */
uint32_t env_pyrandom_below(env_mt19937 *r, uint32_t n);
/* np.random.randint(n) (legacy, int64) for 0 < n < 2^32: masked rejection sampling. */
uint32_t env_nprandom_randint(env_mt19937 *r, uint32_t n);

#endif
