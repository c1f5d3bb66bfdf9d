//! The computations of the MDH paper (its Fig. 16), each written once with
//! [`mdh::mdh!`]. The binaries in `src/bin/` run them at the paper's sizes and
//! the property tests in `tests/properties.rs` compare them with the
//! reference interpreter; both use the kernels defined here and the helpers
//! in [`check`].
//!
//! Naming: buffers keep the paper's names where they do not clash with size
//! parameters (a kernel's size parameters and buffers share one namespace in
//! the generated `cpu` function), so e.g. the batch size of `bmatmul` is `NB`
//! and the sizes of `ccsdt` are `NA`..`NG`.

pub mod check;

use mdh::mdh;

// ---------------------------------------------------------------------------
// Linear algebra

mdh! {
    /// Dot product: `r = Σ_k x[k] · y[k]`.
    pub kernel dot {
        inp(x: f32[N], y: f32[N]),
        out(r: f32[]),
        out_view(r: |k| ()),
        md_hom[N](|a, b| a * b, (PW(+))),
        inp_view(x: |k| (k), y: |k| (k)),
    }
}

mdh! {
    /// Matrix-vector multiplication: `w = M · v`.
    pub kernel matvec {
        inp(M: f32[I, K], v: f32[K]),
        out(w: f32[I]),
        out_view(w: |i, k| (i)),
        md_hom[I, K](|m, x| m * x, (CC, PW(+))),
        inp_view(M: |i, k| (i, k), v: |i, k| (k)),
    }
}

mdh! {
    /// Matrix multiplication: `C[i, j] = Σ_k A[i, k] · B[k, j]`.
    pub kernel matmul {
        inp(A: f32[I, K], B: f32[K, J]),
        out(C: f32[I, J]),
        out_view(C: |i, j, k| (i, j)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
    }
}

mdh! {
    /// Transposed matrix multiplication (the paper's MatMulᵀ):
    /// `C[j, i] = Σ_k A[k, i] · B[j, k]`, i.e. `Cᵀ = Aᵀ · Bᵀ`.
    pub kernel matmul_t {
        inp(A: f32[K, I], B: f32[J, K]),
        out(C: f32[J, I]),
        out_view(C: |i, j, k| (j, i)),
        md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))),
        inp_view(A: |i, j, k| (k, i), B: |i, j, k| (j, k)),
    }
}

mdh! {
    /// Batched matrix multiplication: `C[b, i, j] = Σ_k A[b, i, k] · B[b, k, j]`.
    pub kernel bmatmul {
        inp(A: f32[NB, I, K], B: f32[NB, K, J]),
        out(C: f32[NB, I, J]),
        out_view(C: |b, i, j, k| (b, i, j)),
        md_hom[NB, I, J, K](|a, x| a * x, (CC, CC, CC, PW(+))),
        inp_view(A: |b, i, j, k| (b, i, k), B: |b, i, j, k| (b, k, j)),
    }
}

// ---------------------------------------------------------------------------
// Convolutions

mdh! {
    /// 2-D convolution (valid, no padding):
    /// `O[p, q] = Σ_{r, s} I[p + r, q + s] · F[r, s]`.
    pub kernel conv2d {
        inp(I: f32[P + R - 1, Q + S - 1], F: f32[R, S]),
        out(O: f32[P, Q]),
        out_view(O: |p, q, r, s| (p, q)),
        md_hom[P, Q, R, S](|x, w| x * w, (CC, CC, PW(+), PW(+))),
        inp_view(I: |p, q, r, s| (p + r, q + s), F: |p, q, r, s| (r, s)),
    }
}

mdh! {
    /// Multi-channel convolution with stride 2 (NHWC input, KRSC filter,
    /// NPQK output), as in ResNet-50's first layer:
    /// `O[n, p, q, k] = Σ_{r, s, c} I[n, 2p + r, 2q + s, c] · F[k, r, s, c]`.
    /// The input's extent is exactly what the index functions read:
    /// `2 (P - 1) + R = 2P + R - 2`.
    pub kernel mcc {
        inp(I: f32[N, 2 * P + R - 2, 2 * Q + S - 2, C], F: f32[K, R, S, C]),
        out(O: f32[N, P, Q, K]),
        out_view(O: |n, p, q, k, r, s, c| (n, p, q, k)),
        md_hom[N, P, Q, K, R, S, C](|x, w| x * w, (CC, CC, CC, CC, PW(+), PW(+), PW(+))),
        inp_view(
            I: |n, p, q, k, r, s, c| (n, 2 * p + r, 2 * q + s, c),
            F: |n, p, q, k, r, s, c| (k, r, s, c),
        ),
    }
}

mdh! {
    /// Multi-channel convolution of capsule networks: every element is an
    /// `MI×MK` (input) or `MK×MJ` (filter) matrix, multiplied as matrices:
    /// `O[n,p,q,k,mi,mj] = Σ_{r,s,c,mk} I[n,p+r,q+s,c,mi,mk] · F[k,r,s,c,mk,mj]`.
    pub kernel mcc_capsule {
        inp(I: f32[N, P + R - 1, Q + S - 1, C, MI, MK], F: f32[K, R, S, C, MK, MJ]),
        out(O: f32[N, P, Q, K, MI, MJ]),
        out_view(O: |n, p, q, k, mi, mj, r, s, c, mk| (n, p, q, k, mi, mj)),
        md_hom[N, P, Q, K, MI, MJ, R, S, C, MK](
            |x, w| x * w,
            (CC, CC, CC, CC, CC, CC, PW(+), PW(+), PW(+), PW(+))
        ),
        inp_view(
            I: |n, p, q, k, mi, mj, r, s, c, mk| (n, p + r, q + s, c, mi, mk),
            F: |n, p, q, k, mi, mj, r, s, c, mk| (k, r, s, c, mk, mj),
        ),
    }
}

// ---------------------------------------------------------------------------
// Quantum chemistry

mdh! {
    /// A CCSD(T) tensor contraction, TCCG's `abcdef-gdab-efgc`:
    /// `C[a, b, c, d, e, f] = Σ_g A[g, d, a, b] · B[e, f, g, c]`.
    pub kernel ccsdt {
        inp(A: f32[NG, ND, NA, NB], B: f32[NE, NF, NG, NC]),
        out(C: f32[NA, NB, NC, ND, NE, NF]),
        out_view(C: |a, b, c, d, e, f, g| (a, b, c, d, e, f)),
        md_hom[NA, NB, NC, ND, NE, NF, NG](|x, y| x * y, (CC, CC, CC, CC, CC, CC, PW(+))),
        inp_view(
            A: |a, b, c, d, e, f, g| (g, d, a, b),
            B: |a, b, c, d, e, f, g| (e, f, g, c),
        ),
    }
}

// ---------------------------------------------------------------------------
// Stencils

mdh! {
    /// 3-point Jacobi stencil with run-time weights:
    /// `w[i] = c0 · (v[i] + v[i + 2]) + c1 · v[i + 1]`.
    pub kernel jacobi1d {
        inp(v: f32[N + 2]),
        out(w: f32[N]),
        params(c0: f32, c1: f32),
        out_view(w: |i| (i)),
        md_hom[N](|l, m, r| c0 * (l + r) + c1 * m, (CC)),
        inp_view(v: [|i| (i), |i| (i + 1), |i| (i + 2)]),
    }
}

mdh! {
    /// 5-point Jacobi stencil: the mean of a point and its four neighbours.
    pub kernel jacobi2d {
        inp(v: f32[N + 2, M + 2]),
        out(w: f32[N, M]),
        out_view(w: |i, j| (i, j)),
        md_hom[N, M](|n, wst, c, e, s| 0.2 * (n + wst + c + e + s), (CC, CC)),
        inp_view(v: [
            |i, j| (i, j + 1),
            |i, j| (i + 1, j),
            |i, j| (i + 1, j + 1),
            |i, j| (i + 1, j + 2),
            |i, j| (i + 2, j + 1),
        ]),
    }
}

mdh! {
    /// 7-point Jacobi stencil: a weighted sum of a point (weight 0.4) and its
    /// six neighbours (weight 0.1 each).
    pub kernel jacobi3d {
        inp(v: f32[N + 2, M + 2, L + 2]),
        out(w: f32[N, M, L]),
        out_view(w: |i, j, k| (i, j, k)),
        md_hom[N, M, L](
            |c, xm, xp, ym, yp, zm, zp| 0.4 * c + 0.1 * (xm + xp + ym + yp + zm + zp),
            (CC, CC, CC)
        ),
        inp_view(v: [
            |i, j, k| (i + 1, j + 1, k + 1),
            |i, j, k| (i, j + 1, k + 1),
            |i, j, k| (i + 2, j + 1, k + 1),
            |i, j, k| (i + 1, j, k + 1),
            |i, j, k| (i + 1, j + 2, k + 1),
            |i, j, k| (i + 1, j + 1, k),
            |i, j, k| (i + 1, j + 1, k + 2),
        ]),
    }
}

// ---------------------------------------------------------------------------
// Data mining

/// The match weights of [`prl`] and the encoding of its result, for host code
/// that builds inputs or decodes the output.
pub mod prl_codec {
    /// Weight of a record pair (the same formula as `prl`'s scalar function).
    pub fn weight(nf: i32, nl: i32, ny: i32, ef: i32, el: i32, ey: i32) -> i64 {
        let wf = if nf == ef { 8 } else { -2 };
        let wl = if nl == el { 12 } else { -3 };
        let dy = ny.wrapping_sub(ey);
        let wy = if dy == 0 {
            5
        } else if dy == 1 || dy == -1 {
            2
        } else {
            -4
        };
        (wf + wl + wy) as i64
    }

    /// The scalar `prl` combines: the weight in the high 32 bits, and
    /// `2^32 - 1 - j` in the low ones, so that `max` prefers the higher
    /// weight and, among equal weights, the smaller index `j`.
    pub fn encode(weight: i64, j: usize) -> i64 {
        weight * 4294967296 + (4294967295 - j as i64)
    }

    /// `(weight, j)` of an encoded value.
    pub fn decode(x: i64) -> (i64, usize) {
        let w = x.div_euclid(4294967296);
        let j = 4294967295 - x.rem_euclid(4294967296);
        (w, j as usize)
    }
}

mdh! {
    /// Probabilistic record linkage: for each record `i` of the first data set
    /// (fields `n_first`, `n_last`, `n_year`), the best match `j` of the
    /// second one (`e_*`), by a sum of field-agreement weights. The result is
    /// `prl_codec::encode(weight, j)` of the best pair, combined by a
    /// user-defined max (associative and commutative: a total order's max).
    pub kernel prl {
        inp(n_first: i32[I], n_last: i32[I], n_year: i32[I],
            e_first: i32[J], e_last: i32[J], e_year: i32[J]),
        out(best: i64[I]),
        out_view(best: |i, j| (i)),
        md_hom[I, J](
            |[i, j], nf, nl, ny, ef, el, ey| {
                let wf = if nf == ef { 8 } else { -2 };
                let wl = if nl == el { 12 } else { -3 };
                let dy = ny - ey;
                let wy = if dy == 0 { 5 } else if dy == 1 || dy == -1 { 2 } else { -4 };
                (wf + wl + wy) as i64 * 4294967296 + (4294967295 - j as i64)
            },
            (CC, PW(|a, b| if a > b { a } else { b }))
        ),
        inp_view(
            n_first: |i, j| (i), n_last: |i, j| (i), n_year: |i, j| (i),
            e_first: |i, j| (j), e_last: |i, j| (j), e_year: |i, j| (j),
        ),
    }
}

mdh! {
    /// Histogram: `hist[b] = #{ e | elems[e] == bins[b] }`.
    pub kernel histo {
        inp(elems: u32[E], bins: u32[B]),
        out(hist: u32[B]),
        out_view(hist: |e, b| (b)),
        md_hom[E, B](|x, y| if x == y { 1 } else { 0 }, (PW(+), CC)),
        inp_view(elems: |e, b| (e), bins: |e, b| (b)),
    }
}

mdh! {
    /// Generalized histogram with a user-defined function and operator: the
    /// sum of squares of the values whose key falls into each bin.
    pub kernel genhisto {
        inp(vals: f32[E], keys: i32[E], bins: i32[B]),
        out(hist: f32[B]),
        out_view(hist: |e, b| (b)),
        md_hom[E, B](
            |x, key, bin| if key == bin { x * x } else { 0.0 },
            (PW(|a, b| a + b), CC)
        ),
        inp_view(vals: |e, b| (e), keys: |e, b| (e), bins: |e, b| (b)),
    }
}

// ---------------------------------------------------------------------------
// Map, reduce, scan

mdh! {
    /// Map (SAXPY): `z[i] = alpha · x[i] + y[i]`.
    pub kernel map {
        inp(x: f32[N], y: f32[N]),
        out(z: f32[N]),
        params(alpha: f32),
        out_view(z: |i| (i)),
        md_hom[N](|a, b| alpha * a + b, (CC)),
        inp_view(x: |i| (i), y: |i| (i)),
    }
}

mdh! {
    /// Reduction: `s = Σ_i x[i]`.
    pub kernel reduce {
        inp(x: f32[N]),
        out(s: f32[]),
        out_view(s: |i| ()),
        md_hom[N](|a| a, (PW(+))),
        inp_view(x: |i| (i)),
    }
}

mdh! {
    /// Two reductions in one pass, the paper's `reduce(⊕, ⊗)`:
    /// `s = Σ_i x[i]` and `m = max_i x[i]`.
    pub kernel reduce2 {
        inp(x: f32[N]),
        out(s: f32[], m: f32[]),
        out_view(s: |i| (), m: |i| ()),
        md_hom[N](|a| (a, a), (PW(+, max))),
        inp_view(x: |i| (i)),
    }
}

mdh! {
    /// Inclusive prefix sum: `y[i] = Σ_{i' <= i} x[i']`.
    pub kernel scan {
        inp(x: f32[N]),
        out(y: f32[N]),
        out_view(y: |i| (i)),
        md_hom[N](|a| a, (PS(+))),
        inp_view(x: |i| (i)),
    }
}

mdh! {
    /// Prefix sums of row sums (the paper's MBBS building block):
    /// `o[i] = Σ_{i' <= i} Σ_j A[i', j]`.
    pub kernel mbbs {
        inp(A: f32[I, J]),
        out(o: f32[I]),
        out_view(o: |i, j| (i)),
        md_hom[I, J](|a| a, (PS(+), PW(+))),
        inp_view(A: |i, j| (i, j)),
    }
}

// ---------------------------------------------------------------------------
// Index-aware generators

mdh! {
    /// Mandelbrot set on `[-2, 1] × [-1, 1]`: the number of iterations
    /// (at most `max_iter`) before `|z| > 2`. No inputs: the scalar function
    /// reads its MDA indices `y`, `x` and the sizes `H`, `W`.
    pub kernel mandelbrot {
        inp(),
        out(O: u32[H, W]),
        params(max_iter: u32),
        out_view(O: |y, x| (y, x)),
        md_hom[H, W](
            |[y, x]| {
                let cr = x as f32 * 3.0 / W as f32 - 2.0;
                let ci = y as f32 * 2.0 / H as f32 - 1.0;
                let mut zr = 0.0;
                let mut zi = 0.0;
                let mut n = 0;
                for _ in 0..max_iter {
                    if zr * zr + zi * zi > 4.0 {
                        break;
                    }
                    let t = zr * zr - zi * zi + cr;
                    zi = 2.0 * zr * zi + ci;
                    zr = t;
                    n += 1;
                }
                n
            },
            (CC, CC)
        ),
        inp_view(),
    }
}
