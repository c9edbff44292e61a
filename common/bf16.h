/* bf16.h — fp32 <-> bf16, the one conversion every writer of bf16 uses (safetensors files,
 * the weights transport).
 *
 * Contract: seed_f32_to_bf16 rounds a finite value or an infinity to nearest, ties to even
 * (what torch does for them; an overflow rounds to an infinity). A NaN stays a NaN of the
 * same sign: its top 16 bits are kept and the quiet bit is set, so a payload that lived
 * only in the low bits cannot become an infinity. (torch is not one rule here: 0x7FC0 on
 * its scalar path, 0xFFFF on some vectorized ones; tests compare NaN as NaN.)
 * seed_bf16_to_f32 is exact. Both work on bit patterns, never on the FPU's NaN handling. */
#ifndef SEED_BF16_H
#define SEED_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint16_t seed_bf16_from_bits(uint32_t u) {
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static inline uint16_t seed_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return seed_bf16_from_bits(u);
}

static inline float seed_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif
