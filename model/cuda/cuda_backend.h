/* cuda_backend.h — the CUDA backend (model_cuda_backend, backend.h) and the few entry
 * points beyond backend.h that a caller on a GPU needs.
 *
 * Contract:
 *  - Numerics: bf16 weights and activations for the GEMMs (cuBLAS, fp32 accumulation),
 *    fp32 master weights, residual stream, norms' statistics, log-softmax, gradients and
 *    AdamW state. Same workloads and argument checks as the CPU backend (model.c checks
 *    arguments before any backend code runs).
 *  - The device is the calling thread's current device at model_create (one process per
 *    GPU: pick it with CUDA_VISIBLE_DEVICES); every entry point switches to it, so the
 *    model may be used from any thread (one at a time).
 *  - The host arrays of struct model stay the truth for what outside code reads:
 *    model_adamw_step copies the new parameters and moments back into them (checkpoints
 *    and the weight publisher read them); model_params_changed uploads them (and the
 *    moments, when the model trains). model_grads() is NOT kept current (gradients live
 *    on the device): model_cuda_grads_to_host copies them when a caller needs them.
 *  - cuBLAS is loaded with dlopen at model_create, so binaries that never select the
 *    cuda backend do not load it (libcublasLt is ~0.5 GB) and run without it. */
#ifndef SEED_MODEL_CUDA_BACKEND_H
#define SEED_MODEL_CUDA_BACKEND_H

#include "model/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

extern const model_backend model_cuda_backend;

/* 0 when a CUDA device can be used; otherwise -1 and the reason ("no CUDA device
 * (cudaGetDeviceCount: ...)"). */
int model_cuda_available(char *err, size_t errlen);
/* Copy the device gradients into model_grads(m). */
int model_cuda_grads_to_host(model *m, char *err, size_t errlen);
/* The device gradient buffer (n_params fp32, parameter layout) and the stream the
 * backend enqueues on (a cudaStream_t), for the NCCL data-parallel layer. */
float *model_cuda_device_grads(model *m);
void *model_cuda_stream(model *m);
/* Called by train_backward each time the gradients of tensors [first, end) (indices of
 * model_tensor) are final for this backward, in the order the backward finishes them
 * (LM head and final norm, then layers from last to first, then the embedding). The
 * kernels that produced them are enqueued on model_cuda_stream, not finished: a hook
 * that reads them orders itself after them on that stream (an event). NULL: none. */
typedef void (*model_cuda_grad_hook)(void *ctx, int first, int end);
void model_cuda_set_grad_hook(model *m, model_cuda_grad_hook fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
