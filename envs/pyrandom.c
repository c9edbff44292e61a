/* pyrandom.c — see pyrandom.h. MT19937 as in Matsumoto & Nishimura's reference code,
 * which both CPython (_randommodule.c) and numpy (mt19937.c) use unchanged. */
#include "envs/pyrandom.h"

enum { MT_N = 624, MT_M = 397 };

static void mt_init_genrand(env_mt19937 *r, uint32_t s) {
    r->mt[0] = s;
    for (int i = 1; i < MT_N; i++)
        r->mt[i] = 1812433253u * (r->mt[i - 1] ^ (r->mt[i - 1] >> 30)) + (uint32_t)i;
    r->idx = MT_N;
}

static void mt_init_by_array(env_mt19937 *r, const uint32_t *key, int klen) {
    mt_init_genrand(r, 19650218u);
    uint32_t *mt = r->mt;
    int i = 1, j = 0;
    for (int k = MT_N > klen ? MT_N : klen; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + (uint32_t)j;
        i++;
        j++;
        if (i >= MT_N) {
            mt[0] = mt[MT_N - 1];
            i = 1;
        }
        if (j >= klen) j = 0;
    }
    for (int k = MT_N - 1; k; k--) {
        mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - (uint32_t)i;
        i++;
        if (i >= MT_N) {
            mt[0] = mt[MT_N - 1];
            i = 1;
        }
    }
    mt[0] = 0x80000000u;
    r->idx = MT_N;
}

void env_pyrandom_seed(env_mt19937 *r, uint64_t seed) {
    /* CPython splits abs(seed) into 32-bit words, least significant first; 0 -> [0]. */
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    mt_init_by_array(r, key, key[1] ? 2 : 1);
}

void env_nprandom_seed(env_mt19937 *r, uint32_t seed) {
    mt_init_genrand(r, seed);
}

uint32_t env_mt_u32(env_mt19937 *r) {
    uint32_t *mt = r->mt;
    if (r->idx >= MT_N) {
        int k;
        uint32_t y;
        for (k = 0; k < MT_N - MT_M; k++) {
            y = (mt[k] & 0x80000000u) | (mt[k + 1] & 0x7fffffffu);
            mt[k] = mt[k + MT_M] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        for (; k < MT_N - 1; k++) {
            y = (mt[k] & 0x80000000u) | (mt[k + 1] & 0x7fffffffu);
            mt[k] = mt[k + (MT_M - MT_N)] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        }
        y = (mt[MT_N - 1] & 0x80000000u) | (mt[0] & 0x7fffffffu);
        mt[MT_N - 1] = mt[MT_M - 1] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
        r->idx = 0;
    }
    uint32_t y = mt[r->idx++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

double env_pyrandom_random(env_mt19937 *r) {
    uint32_t a = env_mt_u32(r) >> 5, b = env_mt_u32(r) >> 6;
    return ((double)a * 67108864.0 + (double)b) * (1.0 / 9007199254740992.0);
}

uint32_t env_pyrandom_below(env_mt19937 *r, uint32_t n) {
    if (n == 0) return 0; /* CPython raises; callers never ask */
    /* n == 1 still draws (getrandbits(1) until it is 0), as CPython does. */
    int k = 32 - __builtin_clz(n); /* n.bit_length() */
    uint32_t x = env_mt_u32(r) >> (32 - k);
    while (x >= n) x = env_mt_u32(r) >> (32 - k);
    return x;
}

uint32_t env_nprandom_randint(env_mt19937 *r, uint32_t n) {
    uint32_t rng = n - 1;
    if (rng == 0) return 0; /* numpy returns low without drawing */
    uint32_t mask = rng;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    uint32_t v = env_mt_u32(r) & mask;
    while (v > rng) v = env_mt_u32(r) & mask;
    return v;
}
