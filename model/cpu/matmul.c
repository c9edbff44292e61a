/* matmul.c — nn.Linear forward and backward as OpenBLAS GEMMs (see kernels.h). The
 * products go through cpu_sgemm (split over the OpenMP team). */
#define _GNU_SOURCE /* setenv, unsetenv */
#include "model/cpu/kernels.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* OpenBLAS (a DYNAMIC_ARCH build, as Debian ships) picks its kernels by CPUID when it
 * loads, and on a CPU model it does not know (a VM that hides the model name, a chip
 * newer than the library) it falls back to Prescott's SSE3 kernels: sgemm at a tenth of
 * what the AVX-512 kernels reach on the same core (10.5 against 108.7 GFLOP/s measured
 * on a development VM), and the learner's step 3.4x slower. The choice is made in the
 * library's own constructor, before any of ours, and OPENBLAS_CORETYPE is the only way
 * to change it; so a process that finds the fallback on a CPU with AVX-512 (or AVX2 and
 * FMA) sets the matching core type and executes itself again, once: the variable is set
 * then, and a user's own OPENBLAS_CORETYPE is never overridden. The arguments come from
 * glibc's constructor arguments; elsewhere nothing is done. */
static const char *cpu_blas_better_core(void) {
    const char *core = openblas_get_corename();
    if (!core || strcmp(core, "Prescott") != 0) return NULL;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
    return NULL;
}

#ifdef __GLIBC__
__attribute__((constructor)) static void cpu_blas_reexec(int argc, char **argv, char **envp) {
    (void)envp;
    if (argc < 1 || getenv("OPENBLAS_CORETYPE")) return;
    const char *core = cpu_blas_better_core();
    if (!core || setenv("OPENBLAS_CORETYPE", core, 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("OPENBLAS_CORETYPE"); /* exec failed: run on as we are */
}
#endif

const char *cpu_blas_core(void) {
    return openblas_get_corename();
}

void cpu_blas_threads(int n) {
    /* The OpenMP build of OpenBLAS runs single-threaded inside a parallel region by
     * itself; the pthread build needs telling (its pool is process-wide). */
    if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

/* Work below this many multiply-adds runs as one call: a fork/join costs more. */
#define SGEMM_SPLIT_MIN (1 << 18)

void cpu_sgemm(int transA, int transB, int M, int N, int K, float alpha, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc) {
    // C is (M,N); op(A) is (M,K); op(B) is (K,N); all row-major
    const enum CBLAS_TRANSPOSE ta = transA ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = transB ? CblasTrans : CblasNoTrans;
    const int nt = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (M == 1 && !transA) {
        /* one row (a decode step): sgemv reads the matrix once, sgemm would pack it */
        const int parts = (double)N * K < SGEMM_SPLIT_MIN ? 1 : nt;
#pragma omp parallel for num_threads(parts) schedule(static, 1) if (parts > 1)
        for (int p = 0; p < parts; p++) {
            int n0 = (int)((long)(N / 16) * p / parts) * 16;
            int n1 = p + 1 == parts ? N : (int)((long)(N / 16) * (p + 1) / parts) * 16;
            if (n1 <= n0) continue;
            if (transB) /* op(B) = B^T, B is (N,K): y = B x */
                cblas_sgemv(CblasRowMajor, CblasNoTrans, n1 - n0, K, alpha, B + (size_t)n0 * ldb,
                            ldb, A, 1, beta, C + n0, 1);
            else /* B is (K,N): y = B^T x */
                cblas_sgemv(CblasRowMajor, CblasTrans, K, n1 - n0, alpha, B + n0, ldb, A, 1, beta,
                            C + n0, 1);
        }
        return;
    }
    if (nt == 1 || (double)M * N * K < SGEMM_SPLIT_MIN || (M < 2 * nt && N < 16 * nt)) {
        cblas_sgemm(CblasRowMajor, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (M <= 64 && !transA) {
        /* few rows (decode steps): columns in blocks small enough (M*N*K <= 1e6) for
         * OpenBLAS's small-matrix kernels, which read B in place instead of packing all
         * of it per call (the packing dominates when M is small); each thread takes a
         * contiguous run of blocks, so the weights still stream in order */
        int nb = (int)(1e6 / ((double)M * K)) / 16 * 16;
        if (nb < 16) nb = 16;
        const int nblk = (N + nb - 1) / nb;
#pragma omp parallel for num_threads(nt) schedule(static)
        for (int bi = 0; bi < nblk; bi++) {
            const int n0 = bi * nb, nn = SEED_MIN(nb, N - n0);
            cblas_sgemm(CblasRowMajor, ta, tb, M, nn, K, alpha, A, lda,
                        transB ? B + (size_t)n0 * ldb : B + n0, ldb, beta, C + n0, ldc);
        }
        return;
    }
    /* split the larger output dimension; column parts are multiples of 16 floats so no
     * two threads share a cache line of C */
    const int split_n = N >= M;
    const int parts = nt;
    const int unit = split_n ? 16 : 1, total = split_n ? N : M;
    const int nunits = (total + unit - 1) / unit;
#pragma omp parallel for num_threads(nt) schedule(static, 1)
    for (int p = 0; p < parts; p++) {
        int u0 = (int)((long)nunits * p / parts), u1 = (int)((long)nunits * (p + 1) / parts);
        int i0 = u0 * unit, i1 = SEED_MIN(u1 * unit, total);
        if (i1 <= i0) continue;
        if (split_n)
            cblas_sgemm(CblasRowMajor, ta, tb, M, i1 - i0, K, alpha, A, lda,
                        transB ? B + (size_t)i0 * ldb : B + i0, ldb, beta, C + i0, ldc);
        else
            cblas_sgemm(CblasRowMajor, ta, tb, i1 - i0, N, K, alpha,
                        transA ? A + i0 : A + (size_t)i0 * lda, lda, B, ldb, beta,
                        C + (size_t)i0 * ldc, ldc);
    }
}

void cpu_matmul_forward(float *out, const float *inp, const float *weight, const float *bias, int T,
                        int C, int OC, float beta) {
    // out is (T,OC), inp is (T,C), weight is (OC,C), bias is (OC)
    if (bias) {
        if (beta == 0.0f) {
            for (int t = 0; t < T; t++) memcpy(out + (size_t)t * OC, bias, sizeof(float) * OC);
        } else {
            for (int t = 0; t < T; t++)
                for (int o = 0; o < OC; o++) out[(size_t)t * OC + o] += bias[o];
        }
        beta = 1.0f;
    }
    cpu_sgemm(0, 1, T, OC, C, 1.0f, inp, C, weight, C, beta, out, OC);
}

void cpu_matmul_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                         const float *inp, const float *weight, int T, int C, int OC,
                         float dinp_beta) {
    // dout is (T,OC), inp is (T,C), weight is (OC,C)
    if (dinp) cpu_sgemm(0, 0, T, C, OC, 1.0f, dout, OC, weight, C, dinp_beta, dinp, C);
    cpu_sgemm(1, 0, OC, C, T, 1.0f, dout, OC, inp, C, 1.0f, dweight, C);
    if (dbias) {
        /* column sums, 64 columns per task so threads never share a cache line */
#pragma omp parallel for schedule(static)
        for (int o0 = 0; o0 < OC; o0 += 64) {
            const int o1 = SEED_MIN(o0 + 64, OC);
            for (int t = 0; t < T; t++)
                for (int o = o0; o < o1; o++) dbias[o] += dout[(size_t)t * OC + o];
        }
    }
}
