/* The c-openmp peers of mdh-bench: what an HPC user would write, plain loop
 * nests with one `omp parallel for`, built by build.rs with
 * -O3 -march=native -fopenmp. Each computes what the mdh kernel of the same
 * case computes (examples/kernels/src/{jacobi3d,prl}.rs). */
#include <stddef.h>
#include <stdint.h>

/* 7-point Jacobi stencil: w[i][j][k] over n^3 points from v of (n+2)^3. */
void mdh_bench_jacobi3d(const float *restrict v, float *restrict w, size_t n)
{
    const size_t m = n + 2;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            const float *c = v + ((i + 1) * m + j + 1) * m + 1;
            float *o = w + (i * n + j) * n;
            for (size_t k = 0; k < n; k++)
                o[k] = 0.4f * c[k]
                     + 0.1f * (c[k - m * m] + c[k + m * m] + c[k - m] + c[k + m]
                               + c[k - 1] + c[k + 1]);
        }
}

/* Probabilistic record linkage: for each record i of the first set, the
 * best-weighted record j of the second, encoded as
 * weight * 2^32 + (2^32 - 1 - j) (prl_codec::encode), the max over j. */
void mdh_bench_prl(const int32_t *restrict nf, const int32_t *restrict nl,
                   const int32_t *restrict ny, size_t ni,
                   const int32_t *restrict ef, const int32_t *restrict el,
                   const int32_t *restrict ey, size_t nj,
                   int64_t *restrict best)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < ni; i++) {
        int64_t m = INT64_MIN;
        for (size_t j = 0; j < nj; j++) {
            int32_t wf = nf[i] == ef[j] ? 8 : -2;
            int32_t wl = nl[i] == el[j] ? 12 : -3;
            int32_t dy = (int32_t)((uint32_t)ny[i] - (uint32_t)ey[j]);
            int32_t wy = dy == 0 ? 5 : (dy == 1 || dy == -1) ? 2 : -4;
            int64_t x = (int64_t)(wf + wl + wy) * 4294967296LL
                      + (4294967295LL - (int64_t)j);
            m = x > m ? x : m;
        }
        best[i] = m;
    }
}
