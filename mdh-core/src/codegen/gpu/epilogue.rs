//! A fused epilogue ([`crate::fusion::Epilogue`]) in the producer's GPU
//! kernels: its other inputs are kernel parameters after the params
//! (`ein{b}`, in every kernel of the template), the linear offsets of their
//! accesses and its sizes are definitions of the call
//! (`mdh_rt::gpu_plan::epilogue_defines`), and its scalar function runs on a
//! final result where it is stored: in `mdh_main` after the work-group's
//! combine (`PW_GROUPS == 1`), in `mdh_combine` after the work-groups'.
//! Partial results stay the producer's. Nothing of it is in the hot loop.

use mdh_rt::names;

use super::{bind_params, per_buffer, Emit};
use crate::analysis::Checked;
use crate::codegen::c_expr::{from_storage, to_storage, Lowering};
use crate::fusion::Epilogue;
use crate::spec::ScalarType;

impl Emit<'_> {
    /// The kernel parameters of the epilogue's inputs but the
    /// intermediate's (none without an epilogue).
    pub(super) fn epilogue_params(&self) -> Vec<String> {
        let Some((ek, e)) = self.epilogue else {
            return Vec::new();
        };
        let tmp = ek.input_accesses()[e.input].0;
        (ek.inputs.iter().enumerate())
            .filter(|&(b, _)| b != tmp)
            .map(|(b, buf)| {
                let t = self.d.storage_ty(buf.ty);
                format!("{}const {t}* {} ein{b}", self.w.global, self.w.restrict)
            })
            .collect()
    }

    /// Stores `v`, the final value (a C expression of the value's type) of
    /// output access `o` at the kept point `i{x}`, through its output view:
    /// through the epilogue's scalar function first where `o` is the one
    /// it maps.
    pub(super) fn store_result(&self, l: &mut Lowering, o: usize, v: &str) {
        let (b, a, t) = self.outs[o];
        let off = self.linear(&names::output_access(b, a), &self.kept);
        match self.epilogue.filter(|(_, e)| e.output == o) {
            None => l.line(&format!("out{b}[{off}] = {};", to_storage(t, v))),
            Some((ek, e)) => l.block(|l| {
                let r = self.epilogue_value(l, ek, e, v, t);
                l.line(&format!("out{b}[{off}] = {};", to_storage(t, &r)));
            }),
        }
    }

    /// The epilogue's scalar function at the kept point `i{x}` (its
    /// dimension `m` is the producer's `e.dims[m]`) with `v` for the
    /// intermediate: a variable of type `t` (the intermediate's, which the
    /// epilogue's output has).
    fn epilogue_value(
        &self,
        l: &mut Lowering,
        ek: &Checked,
        e: &Epilogue,
        v: &str,
        t: ScalarType,
    ) -> String {
        // Its own names: they may be the producer's names for other things.
        for s in &ek.size_params {
            l.bind(&s.to_string(), &names::epilogue_size(&s.to_string()));
        }
        bind_params(l, &ek.params);
        let f = &ek.scalar_fn;
        for (name, &x) in (f.index_params.iter().flatten()).zip(&e.dims) {
            l.bind(&name.to_string(), &format!("((ulong)i{x})"));
        }
        let accesses = per_buffer(ek.input_accesses());
        for (j, (name, &(b, a))) in f.params.iter().zip(&accesses).enumerate() {
            let ty = ek.inputs[b].ty;
            let init = if j == e.input {
                v.to_string()
            } else {
                // In 64 bits (see `epilogue_defines`).
                let access = names::epilogue_access(b, a);
                let mut off = format!("(long){}", names::base(&access));
                for (m, &x) in e.dims.iter().enumerate() {
                    off.push_str(&format!(" + {} * (long)i{x}", names::coef(&access, m)));
                }
                from_storage(ty, &format!("ein{b}[{off}]"))
            };
            let var = l.user_var(&name.to_string(), ty, Some(&init));
            l.bind(&name.to_string(), &var);
        }
        let r = l.fresh("e");
        l.line(&format!("{} {r};", self.d.ty(t)));
        l.assign_into(&f.body, std::slice::from_ref(&r));
        r
    }
}

#[cfg(test)]
mod tests {
    use crate::codegen::c_expr::Dialect;
    use crate::codegen::gpu::{fused_template, template};
    use crate::desc::KernelDesc;
    use crate::fusion::Fusion;
    use crate::gpu_plan::epilogue_defines;
    use crate::{compile_program_str, fixtures, Program};

    /// `mdh_main`'s body up to where it stores results: its loops over
    /// tiles, the hot loop and the combine across work-items.
    fn before_stores(src: &str) -> &str {
        let main = src.find("mdh_main(").expect("no mdh_main");
        let body = main + src[main..].find('\n').unwrap();
        &src[body..main + src[main..].find("#if PW_GROUPS == 1").unwrap()]
    }

    /// DENSE's epilogue (a param and a bias along its second dimension,
    /// which is the product's first: the product is stored transposed)
    /// runs where `mdh_main` and `mdh_combine` store final results, on
    /// `ein1` declared by every kernel; before the stores the fused
    /// `mdh_main` is the product's own, character for character.
    #[test]
    fn a_fused_epilogue_runs_in_the_stores_and_nowhere_else() {
        let Ok(Program::Staged(k)) = compile_program_str(fixtures::DENSE) else {
            panic!("DENSE is a kernel of stages");
        };
        let fusion = Fusion::of(&k);
        let e = &fusion.epilogues[0];
        let (pk, ek) = (&k.stages[e.producer].kernel, &k.stages[e.stage].kernel);
        for d in [Dialect::Cuda, Dialect::OpenCl] {
            let (plain, fused) = (template(pk, d), fused_template(pk, ek, e, d));
            assert_eq!(before_stores(&plain), before_stores(&fused), "{d:?}");
            let read = "ein1[(long)EIN1_0_BASE + EIN1_0_C0 * (long)i1 + EIN1_0_C1 * (long)i0]";
            assert_eq!(fused.matches(read).count(), 2, "{fused}");
            assert_eq!(fused.matches("(arg_alpha * ").count(), 2, "{fused}");
            assert!(!plain.contains("ein1"));
            let heads = fused
                .lines()
                .filter(|l| l.contains(" mdh_main(") || l.contains(" mdh_combine("));
            assert_eq!(heads.clone().count(), 2, "{fused}");
            for head in heads {
                assert!(head.trim_end().ends_with(" ein1)"), "{head}");
            }
            // Partial results of work-groups stay the product's.
            assert!(fused.contains("] = acc0[q];"), "{fused}");
        }
        // A call's definitions: the bias's access over the epilogue's
        // dimensions (J, I), the epilogue's sizes; none for `t`.
        let desc = KernelDesc::from_kernel(ek);
        let sizes: Vec<usize> = (desc.size_params.iter())
            .map(|s| if s == "I" { 3 } else { 5 })
            .collect();
        let bound = desc.bind(&sizes, &[15, 3], &[15]).unwrap();
        let defs = epilogue_defines(&desc, &bound, 0);
        for want in [
            "#define MDH_ESIZE_I 3UL",
            "#define MDH_ESIZE_J 5UL",
            "#define EIN1_0_BASE 0L",
            "#define EIN1_0_C0 0L",
            "#define EIN1_0_C1 1L",
        ] {
            assert!(defs.lines().any(|l| l == want), "no {want} in\n{defs}");
        }
        assert!(!defs.contains("EIN0"), "{defs}");
    }
}
