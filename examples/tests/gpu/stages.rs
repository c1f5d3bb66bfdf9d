//! The kernels of stages (`softmax`, `matmul_bias_relu`) on a GPU backend
//! against the interpreter, over fixed sizes (1, primes, 0) and random
//! inputs: the backend's code for the whole chain, or for each stage with
//! the interpreter's order and intermediates (`mdh_core::interp::run_stages_with`).

use mdh::reference::{Buffer, Value};
use mdh::Error;
use mdh_core::spec::Stage;
use mdh_core::{Checked, Program};
use mdh_example_kernels::{matmul_bias_relu, softmax};
use mdh_examples::check::{self, sum_rtol, Rng};

/// How a test runs the two kernels: their inputs, the output, the sizes.
pub struct Runs<'a> {
    pub softmax: &'a dyn Fn(&[f32], &mut [f32], softmax::Sizes) -> Result<(), Error>,
    pub dense: &'a dyn Fn(&[Vec<f32>], &mut [f32], matmul_bias_relu::Sizes) -> Result<(), Error>,
}

/// Runs both kernels on fixed sizes, each result against the interpreter's.
pub fn cases(runs: Runs) {
    let mut g = Rng::new(39);
    for (i, j) in [(1, 1), (3, 7), (13, 97), (0, 5), (31, 2), (2, 300)] {
        let s = softmax::Sizes { I: i, J: j };
        let x = vec![g.f32s_in(i * j, -4.0, 4.0)];
        check::f32_case(softmax::SPEC, &s.values(), x, i * j, sum_rtol(j), |x, o| {
            (runs.softmax)(&x[0], o, s)
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
}

/// One stage on a backend: its position, the stage, its sizes, inputs,
/// outputs and params.
pub type StageRun<'a> = dyn Fn(usize, &Stage<Checked>, &[usize], &[Buffer], &mut [Buffer], &[Value]) -> Result<(), Error>
    + 'a;

/// A kernel of stages (`spec`) with each stage run by `stage`, on f32
/// inputs and one f32 output.
pub fn per_stage(
    spec: &str,
    sizes: &[usize],
    inputs: &[Vec<f32>],
    out: &mut [f32],
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
        &[],
        &mut |at, s, z, i, o, p| stage(at, s, z, i, o, p),
    )?;
    let got = (outs[0].as_f32()).ok_or_else(|| Error::Spec("an f32 output".into()))?;
    out.copy_from_slice(got);
    Ok(())
}
