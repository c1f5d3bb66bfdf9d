//! The CUDA rows of a case, where a CUDA device is present: `mdh-cuda` (the
//! kernel's generated `NAME::cuda::launch` on device buffers) and, for the
//! BLAS cases, `cublas` (FP32 math), and for the matrix products
//! `cublas-tf32` (the same `cublasSgemm` on a handle in TF32 tensor-op math
//! mode: the peer of plans that use tensor cores, `mma: tf32`), and for
//! matmul + bias + ReLU `cublaslt-bias-relu` (cuBLASLt's `RELU_BIAS`
//! epilogue, TF32 compute as cudarc's `CudaBlasLT` asks for f32). All are
//! timed as launch + synchronize on data that
//! was uploaded once before timing (host transfers are not what either
//! library is about); the result is read back once after the last timed run
//! and checked against mdh's CPU result like every other peer. A `cublas`
//! row's speedup compares it with `mdh-cuda`, not with the CPU.
//!
//! Without a CUDA driver or device the rows are left out (the reason is
//! printed once); without cuBLAS only the `cublas` rows are.

use std::sync::OnceLock;

use mdh::cuda::cudarc::cublas::{sys as blas_sys, CudaBlas, Gemm, GemmConfig, Gemv, GemvConfig};
use mdh::cuda::cudarc::cublaslt::{self, Activation, CudaBlasLT, Matmul, MatmulConfig};
use mdh::cuda::cudarc::driver::{DevicePtr, DevicePtrMut, DeviceRepr};
use mdh::cuda::{CudaSlice, Device};

use crate::harness::{imp, Impl, Output};

/// The implementation `mdh-cuda` rows are the reference of.
pub const MDH_CUDA: &str = "mdh-cuda";

/// The first CUDA device, opened once (`None`, with the reason printed
/// once, where there is none).
pub fn device() -> Option<&'static Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| match Device::first() {
        Ok(d) => {
            eprintln!("CUDA device: {} ({}), mdh-cuda rows on", d.name(), d.arch());
            Some(d)
        }
        Err(e) => {
            eprintln!("no mdh-cuda rows: {e}");
            None
        }
    })
    .as_ref()
}

/// A cuBLAS handle on the device's stream (`None`, with the reason printed
/// once, without cuBLAS).
fn blas() -> Option<&'static CudaBlas> {
    static BLAS: OnceLock<Option<CudaBlas>> = OnceLock::new();
    BLAS.get_or_init(|| {
        let dev = device()?;
        // SAFETY: only tries to dlopen libcublas by its usual names; cudarc
        // panics on a missing library in any later call, so this comes first.
        if !unsafe { blas_sys::is_culib_present() } {
            eprintln!("no cublas rows: libcublas could not be loaded");
            return None;
        }
        CudaBlas::new(dev.stream().clone())
            .map_err(|e| eprintln!("no cublas rows: {e:?}"))
            .ok()
    })
    .as_ref()
}

/// The result type of a device implementation, read back into an [`Output`].
pub trait DeviceOutput: DeviceRepr + Default + Copy + 'static {
    fn output(v: Vec<Self>) -> Output;
}

impl DeviceOutput for f32 {
    fn output(v: Vec<f32>) -> Output {
        Output::F32(v)
    }
}

impl DeviceOutput for i64 {
    fn output(v: Vec<i64>) -> Output {
        Output::I64(v)
    }
}

/// Device inputs and the device output of one implementation.
pub struct OnDevice<I: DeviceRepr, O: DeviceRepr> {
    pub ins: Vec<CudaSlice<I>>,
    pub out: CudaSlice<O>,
}

/// An implementation named `name` on the device: `inputs` are uploaded
/// once, the output starts as `init` (a sentinel such as NaN, so that a run
/// that writes nothing cannot pass), `launch` issues one run; each timed run
/// is `launch` + synchronize. Its speedup is stated against `mdh-cuda`.
/// `None` without a device.
pub fn on_device<I: DeviceRepr + 'static, O: DeviceOutput>(
    name: &'static str,
    inputs: &[&[I]],
    init: &[O],
    mut launch: impl FnMut(&Device, &mut OnDevice<I, O>) -> Result<(), String> + 'static,
) -> Result<Option<Impl>, String> {
    let Some(dev) = device() else {
        return Ok(None);
    };
    let fail = |e: mdh::Error| format!("{name}: {e}");
    let state = OnDevice {
        ins: inputs
            .iter()
            .map(|x| dev.buffer_from(x))
            .collect::<Result<_, _>>()
            .map_err(fail)?,
        out: dev.buffer_from(init).map_err(fail)?,
    };
    let im = imp(
        name,
        state,
        move |s| {
            launch(dev, s)?;
            dev.synchronize().map_err(|e| e.to_string())
        },
        move |s| {
            let mut host = vec![O::default(); s.out.len()];
            match dev.read(&s.out, &mut host) {
                Ok(()) => O::output(host),
                Err(e) => {
                    // An empty result fails the comparison with mdh's.
                    eprintln!("{name}: reading the result back: {e}");
                    O::output(Vec::new())
                }
            }
        },
    );
    Ok(Some(im.versus(MDH_CUDA)))
}

/// `mdh-cuda`: the generated kernel's `cuda::launch` (`launch` gets the
/// device, the inputs and the output).
pub fn mdh_cuda<I: DeviceRepr + 'static, O: DeviceOutput>(
    inputs: &[&[I]],
    init: &[O],
    mut launch: impl FnMut(&Device, &[CudaSlice<I>], &mut CudaSlice<O>) -> Result<(), mdh::Error>
        + 'static,
) -> Result<Option<Impl>, String> {
    on_device(MDH_CUDA, inputs, init, move |dev, s| {
        launch(dev, &s.ins, &mut s.out).map_err(|e| e.to_string())
    })
}

fn cublas_err(e: impl std::fmt::Debug) -> String {
    format!("cuBLAS: {e:?}")
}

fn int(n: usize) -> Result<i32, String> {
    i32::try_from(n).map_err(|_| format!("cuBLAS: extent {n} exceeds i32"))
}

/// A second cuBLAS handle on the device's stream, in TF32 tensor-op math
/// mode (`cublasSetMathMode`: FP32 products may round their operands to
/// TF32); `None`, with the reason printed once, where it cannot be made.
fn blas_tf32() -> Option<&'static CudaBlas> {
    static BLAS: OnceLock<Option<CudaBlas>> = OnceLock::new();
    BLAS.get_or_init(|| {
        // Only where the plain handle could be made (cuBLAS is there).
        blas()?;
        let tf32 = CudaBlas::new(device()?.stream().clone())
            .map_err(|e| eprintln!("no cublas-tf32 rows: {e:?}"))
            .ok()?;
        // SAFETY: a live handle of this process; the mode is a plain enum.
        unsafe {
            blas_sys::cublasSetMathMode(
                *tf32.handle(),
                blas_sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH,
            )
        }
        .result()
        .map_err(|e| eprintln!("no cublas-tf32 rows: {e:?}"))
        .ok()?;
        Some(tf32)
    })
    .as_ref()
}

/// A cuBLASLt handle on the device's stream (`None`, with the reason
/// printed once, without cuBLASLt).
fn blas_lt() -> Option<&'static CudaBlasLT> {
    static LT: OnceLock<Option<CudaBlasLT>> = OnceLock::new();
    LT.get_or_init(|| {
        let dev = device()?;
        // SAFETY: only tries to dlopen libcublasLt by its usual names (as
        // for cuBLAS above).
        if !unsafe { cublaslt::sys::is_culib_present() } {
            eprintln!("no cublaslt rows: libcublasLt could not be loaded");
            return None;
        }
        CudaBlasLT::new(dev.stream().clone())
            .map_err(|e| eprintln!("no cublaslt rows: {e:?}"))
            .ok()
    })
    .as_ref()
}

/// `cublaslt-bias-relu`: row-major `y[i×j] = max(A[i×k] · B[k×j] +
/// bias[j], 0)` as cuBLASLt's column-major `yᵀ = Bᵀ · Aᵀ` with its
/// `RELU_BIAS` epilogue (the bias along `yᵀ`'s rows: `y`'s columns). `None`
/// without cuBLASLt.
pub fn lt_bias_relu(
    a: &[f32],
    b: &[f32],
    bias: &[f32],
    [i, j, k]: [usize; 3],
) -> Result<Option<Impl>, String> {
    let Some(lt) = blas_lt() else {
        return Ok(None);
    };
    let (m, n, kk) = (j as u64, i as u64, k as u64);
    let cfg = MatmulConfig {
        transa: false,
        transb: false,
        transc: false,
        m,
        n,
        k: kk,
        alpha: 1.0,
        lda: m as i64,
        ldb: kk as i64,
        beta: 0.0,
        ldc: m as i64,
        stride_a: None,
        stride_b: None,
        stride_c: None,
        stride_bias: None,
        batch_size: None,
    };
    on_device(
        "cublaslt-bias-relu",
        &[a, b, bias],
        &vec![f32::NAN; i * j],
        move |_, s| {
            let (ab, bias) = s.ins.split_at(2);
            // SAFETY: B (k×j), A (i×k), y (i×j) and the bias (j) have exactly
            // the extents and leading dimensions of `cfg` (on_device uploaded
            // them whole).
            unsafe {
                lt.matmul(
                    cfg,
                    &ab[1],
                    &ab[0],
                    &mut s.out,
                    Some(&bias[0]),
                    Some(&Activation::Relu),
                )
            }
            .map_err(|e| format!("cuBLASLt: {e:?}"))
        },
    )
}

/// The math of a cuBLAS matrix product row.
#[derive(Clone, Copy)]
pub enum Math {
    /// `cublas`: FP32.
    Fp32,
    /// `cublas-tf32`: the handle in TF32 tensor-op math mode.
    Tf32,
}

/// `cublas` / `cublas-tf32` (by `math`): row-major `C[i×j] = A[i×k] ·
/// B[k×j]` as cuBLAS's column-major `Cᵀ = Bᵀ · Aᵀ` (no transposes, no
/// copies). `None` without cuBLAS.
pub fn sgemm(
    math: Math,
    a: &[f32],
    b: &[f32],
    i: usize,
    j: usize,
    k: usize,
) -> Result<Option<Impl>, String> {
    let (name, blas) = match math {
        Math::Fp32 => ("cublas", blas()),
        Math::Tf32 => ("cublas-tf32", blas_tf32()),
    };
    let Some(blas) = blas else {
        return Ok(None);
    };
    let (m, n, kk) = (int(j)?, int(i)?, int(k)?);
    let cfg = GemmConfig {
        transa: blas_sys::cublasOperation_t::CUBLAS_OP_N,
        transb: blas_sys::cublasOperation_t::CUBLAS_OP_N,
        m,
        n,
        k: kk,
        alpha: 1.0f32,
        lda: m,
        ldb: kk,
        beta: 0.0f32,
        ldc: m,
    };
    on_device(name, &[a, b], &vec![f32::NAN; i * j], move |_, s| {
        // SAFETY: B (k×j) and A (i×k) and C (i×j) have exactly the extents
        // and leading dimensions of `cfg` (on_device uploaded them whole).
        unsafe { blas.gemm(cfg, &s.ins[1], &s.ins[0], &mut s.out) }.map_err(cublas_err)
    })
}

/// `cublas`: row-major `w[i] = M[i×k] · v[k]` as column-major `Mᵀ`
/// transposed. `None` without cuBLAS.
pub fn sgemv(m: &[f32], v: &[f32], i: usize, k: usize) -> Result<Option<Impl>, String> {
    let Some(blas) = blas() else {
        return Ok(None);
    };
    let cfg = GemvConfig {
        trans: blas_sys::cublasOperation_t::CUBLAS_OP_T,
        m: int(k)?,
        n: int(i)?,
        alpha: 1.0f32,
        lda: int(k)?,
        incx: 1,
        beta: 0.0f32,
        incy: 1,
    };
    on_device("cublas", &[m, v], &vec![f32::NAN; i], move |_, s| {
        // SAFETY: M (i×k, leading dimension k), v (k) and w (i) match `cfg`.
        unsafe { blas.gemv(cfg, &s.ins[0], &s.ins[1], &mut s.out) }.map_err(cublas_err)
    })
}

/// `cublas`: `r = x · y` (`cublasSdot`, result written on the device).
/// `None` without cuBLAS.
pub fn sdot(x: &[f32], y: &[f32]) -> Result<Option<Impl>, String> {
    let Some(blas) = blas() else {
        return Ok(None);
    };
    let n = int(x.len())?;
    on_device("cublas", &[x, y], &[f32::NAN], move |dev, s| {
        let stream = dev.stream();
        let (xs, ys) = s.ins.split_at(1);
        let (px, _rx) = xs[0].device_ptr(stream);
        let (py, _ry) = ys[0].device_ptr(stream);
        let (pr, _rr) = s.out.device_ptr_mut(stream);
        blas.set_pointer_mode(blas_sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_DEVICE)
            .map_err(cublas_err)?;
        // SAFETY: x and y hold n floats each and r one, all on the handle's
        // device; with the device pointer mode the result goes to r.
        let dot = unsafe {
            blas_sys::cublasSdot_v2(
                *blas.handle(),
                n,
                px as *const f32,
                1,
                py as *const f32,
                1,
                pr as *mut f32,
            )
        }
        .result();
        // The handle is shared: gemm and gemv pass alpha and beta as host
        // pointers, which the device mode would misread.
        blas.set_pointer_mode(blas_sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST)
            .map_err(cublas_err)?;
        dot.map_err(cublas_err)
    })
}
