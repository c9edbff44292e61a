/* weights_internal.h — what the three files of the weight broadcast share and nobody else
 * uses: weights_format.c defines these; weights_pub.c and weights_rx.c call them.
 *
 * Contract: the allocation and copy helpers return 0 / non-NULL on success and -1 / NULL
 * when memory runs out, nothing else; the rest cannot fail. */
#ifndef SEED_PROTO_WEIGHTS_INTERNAL_H
#define SEED_PROTO_WEIGHTS_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "proto/weights.h"

const char *weights_dtype_name(weights_dtype d); /* "f32", "bf16" */
/* n fp32 words at src -> n little-endian bf16 at dst (common/bf16.h's rounding), and back */
void weights_narrow(uint8_t *dst, const uint8_t *src, size_t n);
void weights_widen(uint8_t *dst, const uint8_t *src, size_t n);
/* 64-byte aligned, n rounded up to 64 (at least 64) */
void *weights_alloc(size_t n);
/* Copy a table / a string into growable storage (*dst of *cap entries / bytes). */
int weights_copy_table(weights_tensor **dst, int *cap, const weights_tensor *src, int n);
int weights_copy_str(char **dst, size_t *cap, const char *s);
/* now + ms on CLOCK_MONOTONIC, for pthread_cond_timedwait on a cond of weights_cond_init */
void weights_deadline(struct timespec *ts, int ms);
int weights_cond_init(pthread_cond_t *cv);

#endif
