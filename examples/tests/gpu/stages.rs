//! The kernels of stages (`softmax`, `matmul_bias_relu`, `layernorm`,
//! `attention`) on a GPU backend
//! against the interpreter, over fixed sizes (1, primes, 0) and random
//! inputs: the backend's code for the whole chain, or for each stage with
//! the interpreter's order and intermediates (`mdh_core::interp::run_stages_with`),
//! and the fused products (a stage with its epilogue in its stores) under
//! plans that store in either pass.

use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::gpu_plan::GpuPlan;
use mdh_core::spec::Stage;
use mdh_core::{Checked, Program};
use mdh_example_kernels::{attention, dense_residual, layernorm, matmul_bias_relu, softmax};
use mdh_examples::check::{self, sum_rtol, Rng};

/// A kernel run on a backend: its inputs, the output, the sizes.
pub type Run<'a, S> = &'a dyn Fn(&[Vec<f32>], &mut [f32], S) -> Result<(), Error>;

/// A kernel of one `f32` param run on a backend: its inputs, the output,
/// the param, the sizes.
pub type ParamRun<'a, S> = &'a dyn Fn(&[Vec<f32>], &mut [f32], f32, S) -> Result<(), Error>;

/// How a test runs the kernels.
pub struct Runs<'a> {
    pub softmax: Run<'a, softmax::Sizes>,
    pub dense: Run<'a, matmul_bias_relu::Sizes>,
    pub layernorm: ParamRun<'a, layernorm::Sizes>,
    pub attention: ParamRun<'a, attention::Sizes>,
}

/// Runs every kernel on fixed sizes, each result against the interpreter's.
pub fn cases(runs: Runs) {
    let mut g = Rng::new(39);
    for (i, j) in [(1, 1), (3, 7), (13, 97), (0, 5), (31, 2), (2, 300)] {
        let s = softmax::Sizes { I: i, J: j };
        let x = vec![g.f32s_in(i * j, -4.0, 4.0)];
        check::f32_case(softmax::SPEC, &s.values(), x, i * j, sum_rtol(j), |x, o| {
            (runs.softmax)(x, o, s)
        })
        .unwrap_or_else(|e| panic!("softmax {s:?}: {e}"));
    }
    for (i, j, k) in [
        (1, 1, 1),
        (7, 13, 5),
        (31, 2, 97),
        (0, 3, 4),
        (5, 3, 0),
        (64, 65, 17),
    ] {
        let s = matmul_bias_relu::Sizes { I: i, J: j, K: k };
        let x = vec![
            g.f32s_in(i * k, -1.0, 1.0),
            g.f32s_in(k * j, -1.0, 1.0),
            g.f32s_in(j, -1.0, 1.0),
        ];
        check::f32_case(
            matmul_bias_relu::SPEC,
            &s.values(),
            x,
            i * j,
            sum_rtol(k),
            |x, o| (runs.dense)(x, o, s),
        )
        .unwrap_or_else(|e| panic!("matmul_bias_relu {s:?}: {e}"));
    }
    let eps = 1e-5;
    for (i, j) in [(1, 1), (3, 7), (13, 97), (0, 5), (2, 300)] {
        let s = layernorm::Sizes { I: i, J: j };
        let x = vec![
            g.f32s_in(i * j, -4.0, 4.0),
            g.f32s_in(j, -1.0, 1.0),
            g.f32s_in(j, -1.0, 1.0),
        ];
        let params = [Value::F32(eps)];
        check::f32_case_with(
            layernorm::SPEC,
            &s.values(),
            x,
            &params,
            i * j,
            sum_rtol(j),
            |x, o| (runs.layernorm)(x, o, eps, s),
        )
        .unwrap_or_else(|e| panic!("layernorm {s:?}: {e}"));
    }
    for (i, j, d, e) in [
        (1, 1, 1, 1),
        (7, 13, 5, 3),
        (13, 31, 16, 9),
        (0, 3, 4, 2),
        (5, 0, 3, 4),
    ] {
        let s = attention::Sizes {
            I: i,
            J: j,
            D: d,
            E: e,
        };
        let scale = 1.0 / (d as f32).sqrt();
        let x = vec![
            g.f32s_in(i * d, -1.0, 1.0),
            g.f32s_in(j * d, -1.0, 1.0),
            g.f32s(j * e),
        ];
        let params = [Value::F32(scale)];
        check::f32_case_with(
            attention::SPEC,
            &s.values(),
            x,
            &params,
            i * e,
            sum_rtol(j.max(d)),
            |x, o| (runs.attention)(x, o, scale, s),
        )
        .unwrap_or_else(|e| panic!("attention {s:?}: {e}"));
    }
}

/// One stage on a backend: its position, the stage, its sizes, inputs,
/// outputs and params.
pub type StageRun<'a> = dyn Fn(usize, &Stage<Checked>, &[usize], &[Buffer], &mut [Buffer], &[Value]) -> Result<(), Error>
    + 'a;

/// A kernel of stages (`spec`) with each stage run by `stage`, on f32
/// inputs, one f32 output and `params`.
pub fn per_stage(
    spec: &str,
    sizes: &[usize],
    inputs: &[Vec<f32>],
    out: &mut [f32],
    params: &[Value],
    stage: &StageRun,
) -> Result<(), Error> {
    let Program::Staged(k) = mdh::reference::program(spec)? else {
        return Err(Error::Spec("not a kernel of stages".into()));
    };
    let ins: Vec<Buffer> = inputs.iter().cloned().map(Buffer::from).collect();
    let mut outs = [Buffer::from(out.to_vec())];
    mdh_core::interp::run_stages_with(
        &k,
        sizes,
        &ins,
        &mut outs,
        params,
        &mut |at, s, z, i, o, p| stage(at, s, z, i, o, p),
    )?;
    let got = (outs[0].as_f32()).ok_or_else(|| Error::Spec("an f32 output".into()))?;
    out.copy_from_slice(got);
    Ok(())
}

/// A producing stage with its epilogue fused (`fused::*::{opencl,
/// cuda}`), run with a plan: the inputs (the product's A and B, then the
/// epilogue's other input), the output, the param (`alpha` where the
/// epilogue has one), the sizes I, J, K.
pub type FusedRun<'a> =
    &'a dyn Fn(&GpuPlan, &[Vec<f32>], &mut [f32], f32, [usize; 3]) -> Result<(), Error>;

/// How a test runs the fused products of `matmul_bias_relu` (bias and
/// ReLU) and `dense_residual` (a scale and a residual of the product's
/// shape).
pub struct FusedRuns<'a> {
    pub dense: FusedRun<'a>,
    pub residual: FusedRun<'a>,
}

/// Plans of the fused products: the reduction split across 3 work-groups
/// (the epilogue in the second pass, `mdh_combine`) with a tree across
/// work-items, the register-tiled plan (in `mdh_main`'s stores; tiles cut
/// at these sizes), and one work-item per point without local tiles.
pub fn fused_plans() -> Vec<GpuPlan> {
    vec![
        GpuPlan {
            groups: vec![0, 0, 3],
            items: vec![4, 4, 4],
            tile: vec![4, 4, 8],
            local: vec![true, true],
            ..GpuPlan::base(3, 2)
        },
        super::matmul_register_tiled(),
        GpuPlan {
            groups: vec![0, 0, 1],
            items: vec![8, 8, 1],
            tile: vec![8, 8, 4],
            local: vec![false, false],
            ..GpuPlan::base(3, 2)
        },
    ]
}

/// Runs the fused products with every plan of [`fused_plans`] over fixed
/// sizes (1, primes, a reduction longer than the split), each result
/// against the interpreter's of the whole kernel of stages.
pub fn fused_cases(runs: FusedRuns) {
    let mut g = Rng::new(139);
    for plan in fused_plans() {
        for (i, j, k) in [(1, 1, 1), (7, 13, 5), (31, 2, 97), (64, 65, 17)] {
            let (a, b) = (g.f32s_in(i * k, -1.0, 1.0), g.f32s_in(k * j, -1.0, 1.0));
            let s = matmul_bias_relu::Sizes { I: i, J: j, K: k };
            let x = vec![a.clone(), b.clone(), g.f32s_in(j, -1.0, 1.0)];
            check::f32_case(
                matmul_bias_relu::SPEC,
                &s.values(),
                x,
                i * j,
                sum_rtol(k),
                |x, o| (runs.dense)(&plan, x, o, 0.0, [i, j, k]),
            )
            .unwrap_or_else(|e| panic!("fused matmul_bias_relu {s:?}, {plan:?}: {e}"));
            let s = dense_residual::Sizes { I: i, J: j, K: k };
            let alpha = g.f32s_in(1, -2.0, 2.0)[0];
            let x = vec![a, b, g.f32s_in(i * j, -1.0, 1.0)];
            check::f32_case_with(
                dense_residual::SPEC,
                &s.values(),
                x,
                &[Value::F32(alpha)],
                i * j,
                sum_rtol(k),
                |x, o| (runs.residual)(&plan, x, o, alpha, [i, j, k]),
            )
            .unwrap_or_else(|e| panic!("fused dense_residual {s:?}, {plan:?}: {e}"));
        }
    }
}
