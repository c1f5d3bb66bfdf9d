//! Kernels of stages: each stage runs on the interpreter in order, as a
//! kernel of one md_hom, on the caller's buffers and on intermediates
//! (`tmp`) allocated for the call and filled with zeros (`false`) first.

use super::{internal, run, Buffer, Value};
use crate::analysis::Checked;
use crate::desc::KernelDesc;
use crate::error::Error;
use crate::spec::{BufRef, Program, Stage, Staged};

/// Runs a kernel of one md_hom ([`run`]) or of stages ([`run_staged`]).
pub fn run_program(
    program: &Program<Checked>,
    sizes: &[usize],
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
) -> Result<(), Error> {
    match program {
        Program::Single(k) => run(k, sizes, inputs, outputs, params),
        Program::Staged(k) => run_staged(k, sizes, inputs, outputs, params),
    }
}

/// Runs a kernel of stages on host buffers: `sizes` in `kernel.size_params`
/// order, `inputs` / `outputs` / `params` in declaration order; the stages
/// run in order, each as [`run`] does.
pub fn run_staged(
    kernel: &Staged<Checked>,
    sizes: &[usize],
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
) -> Result<(), Error> {
    run_stages_with(
        kernel,
        sizes,
        inputs,
        outputs,
        params,
        &mut |_, s, sizes, i, o, p| run(&s.kernel, sizes, i, o, p),
    )
}

/// What one stage runs on: its position, the stage, its sizes (in its
/// kernel's `size_params` order), its inputs, outputs and params.
pub type StageFn<'a> = dyn FnMut(usize, &Stage<Checked>, &[usize], &[Buffer], &mut [Buffer], &[Value]) -> Result<(), Error>
    + 'a;

/// [`run_staged`] with each stage run by `run_stage` instead of the
/// interpreter (a backend's code for one stage, in tests): the same
/// buffers, intermediates and order.
pub fn run_stages_with(
    kernel: &Staged<Checked>,
    sizes: &[usize],
    inputs: &[Buffer],
    outputs: &mut [Buffer],
    params: &[Value],
    run_stage: &mut StageFn<'_>,
) -> Result<(), Error> {
    for (what, want, got) in [
        ("sizes", kernel.size_params.len(), sizes.len()),
        ("inputs", kernel.inputs.len(), inputs.len()),
        ("outputs", kernel.outputs.len(), outputs.len()),
    ] {
        if want != got {
            return Err(Error::Argument(format!(
                "kernel `{}`: expected {want} {what}, got {got}",
                kernel.name
            )));
        }
    }
    let stage_sizes =
        |s: &Stage<Checked>| -> Vec<usize> { s.sizes.iter().map(|&i| sizes[i]).collect() };
    // Each intermediate, as long as the stage that computes it needs it.
    let mut tmps = Vec::new();
    for (t, d) in kernel.tmps.iter().enumerate() {
        let writer = kernel.writer(BufRef::Tmp(t));
        let len = match writer {
            Some((s, j)) => {
                let desc = KernelDesc::from_kernel(&s.kernel);
                desc.elements(&desc.outputs[j], &stage_sizes(s))?
            }
            None => 0,
        };
        tmps.push(Buffer::zeros(d.ty, len));
    }
    for (at, s) in kernel.stages.iter().enumerate() {
        let ins: Vec<Buffer> = (s.reads.iter())
            .map(|&b| match b {
                BufRef::Input(i) => inputs[i].clone(),
                BufRef::Output(i) => outputs[i].clone(),
                BufRef::Tmp(i) => tmps[i].clone(),
            })
            .collect();
        // Each written buffer, moved out for the stage and back after it.
        let mut outs = Vec::new();
        for &b in &s.writes {
            outs.push(std::mem::replace(
                written(b, outputs, &mut tmps)?,
                Buffer::zeros(kernel.decl(b).ty, 0),
            ));
        }
        let r = run_stage(at, s, &stage_sizes(s), &ins, &mut outs, params);
        for (&b, o) in s.writes.iter().zip(outs) {
            *written(b, outputs, &mut tmps)? = o;
        }
        r?;
    }
    Ok(())
}

/// The buffer a stage writes (the checker lets stages write outputs and
/// intermediates only).
fn written<'a>(
    b: BufRef,
    outputs: &'a mut [Buffer],
    tmps: &'a mut [Buffer],
) -> Result<&'a mut Buffer, Error> {
    match b {
        BufRef::Output(i) => Ok(&mut outputs[i]),
        BufRef::Tmp(i) => Ok(&mut tmps[i]),
        BufRef::Input(_) => Err(internal("a stage writes an input".into())),
    }
}
