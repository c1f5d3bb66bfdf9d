//! The kernels of stages (`softmax`, `matmul_bias_relu`, `layernorm`,
//! `attention`) on a GPU backend
//! against the interpreter, over fixed sizes (1, primes, 0) and random
//! inputs: the backend's code for the whole chain, or for each stage with
//! the interpreter's order and intermediates (`mdh_core::interp::run_stages_with`).

use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::spec::Stage;
use mdh_core::{Checked, Program};
use mdh_example_kernels::{attention, layernorm, matmul_bias_relu, softmax};
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
