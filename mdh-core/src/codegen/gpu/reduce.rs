//! Combining the partial results of PW dimensions across work-items and
//! work-groups: warp shuffles (CUDA's WRP layer), the tree in local memory,
//! and the second pass `mdh_combine` over the results of work-groups.

use std::fmt::Write;

use mdh_rt::names::{self, IDX, KEPT_POINTS, PW_GROUPS, PW_ITEMS};

use super::{Emit, PASS_ITEMS};
use crate::codegen::c_expr::{from_storage, to_storage, Lowering};
use crate::spec::ScalarType;

impl Emit<'_> {
    /// Combines the partial results of each run of `MDH_SHFL` consecutive
    /// PW work-items (lanes of one warp) by register shuffles, halving the
    /// distance each step; the first lane of a run then holds its result.
    /// Lanes whose partner lies past the run combine with themselves (their
    /// values are not used). Nothing in a dialect without warps.
    pub(super) fn warp_shuffles(&self, l: &mut Lowering) {
        if self.w.warp.is_none() {
            return;
        }
        l.line("#if MDH_SHFL > 1");
        l.line("for (int s = MDH_SHFL / 2; s > 0; s /= 2) {");
        for (o, &(_, _, t)) in self.outs.iter().enumerate() {
            let Some(op) = self.ops[o] else { continue };
            let acc = format!("acc{o}[q]");
            let other = l.temp("other", t, &self.shuffle_down(t, &acc));
            let c = l.combine(op, t, &acc, &other);
            if !self.k.has_identity(o) {
                let has = format!("has{o}[q]");
                let other_has = l.temp(
                    "other_has",
                    ScalarType::Bool,
                    &self.shuffle_down(ScalarType::Bool, &has),
                );
                l.line(&format!(
                    "if ({other_has}) {{ {acc} = {has} ? {c} : {other}; {has} = true; }}"
                ));
            } else {
                l.line(&format!("{acc} = {c};"));
            }
        }
        l.line("}");
        l.line("#endif");
    }

    /// `v` (of type `t`) of the lane `s` further within its run of
    /// `MDH_SHFL` lanes. CUDA shuffles 32- and 64-bit values: narrower
    /// types travel as `int` / `uint`.
    pub(super) fn shuffle_down(&self, t: ScalarType, v: &str) -> String {
        let shfl = |v: &str| format!("__shfl_down_sync(mdh_mask, {v}, s, MDH_SHFL)");
        match t {
            ScalarType::I8 | ScalarType::I16 | ScalarType::Bool => {
                format!("(({}){})", self.d.ty(t), shfl(&format!("(int)({v})")))
            }
            ScalarType::U8 | ScalarType::U16 => {
                format!("(({}){})", self.d.ty(t), shfl(&format!("(uint)({v})")))
            }
            _ => shfl(v),
        }
    }

    /// The tree in local memory over the warps' results (every work-item's
    /// where there are no warps): stride MDH_SHFL first.
    pub(super) fn tree(&self, l: &mut Lowering) {
        let w = &self.w;
        l.line(&format!("#if {PW_ITEMS} > MDH_SHFL"));
        for (o, &(_, _, t)) in self.outs.iter().enumerate() {
            let v = to_storage(t, &format!("acc{o}[q]"));
            l.line(&format!("red{o}[kl * {PW_ITEMS} + pwl] = {v};"));
            if !self.k.has_identity(o) {
                l.line(&format!("redf{o}[kl * {PW_ITEMS} + pwl] = has{o}[q];"));
            }
        }
        l.line(w.barrier);
        l.line(&format!(
            "for ({IDX} s = MDH_SHFL; s < {PW_ITEMS}; s *= 2) {{"
        ));
        l.line(&format!(
            "if (pwl % (2 * s) == 0 && pwl + s < {PW_ITEMS}) {{"
        ));
        let me = format!("kl * {PW_ITEMS} + pwl");
        for (o, &(_, _, t)) in self.outs.iter().enumerate() {
            let Some(op) = self.ops[o] else { continue };
            let other = format!("red{o}[{me} + s]");
            let mine = from_storage(t, &format!("red{o}[{me}]"));
            let c = to_storage(t, &l.combine(op, t, &mine, &from_storage(t, &other)));
            if !self.k.has_identity(o) {
                l.line(&format!(
                    "if (redf{o}[{me} + s]) {{ red{o}[{me}] = redf{o}[{me}] ? {c} : {other}; redf{o}[{me}] = 1; }}"
                ));
            } else {
                l.line(&format!("red{o}[{me}] = {c};"));
            }
        }
        l.line("}");
        l.line(w.barrier);
        l.line("}");
        for (o, &(_, _, t)) in self.outs.iter().enumerate() {
            let v = from_storage(t, &format!("red{o}[{me}]"));
            l.line(&format!("acc{o}[q] = {v};"));
        }
        l.line(w.barrier);
        l.line("#endif");
    }

    /// The second pass: combines the partial results of the work-groups
    /// that split PW dimensions, in order, and writes the output view.
    pub(super) fn combine_kernel(&self, src: &mut String) {
        let _ = writeln!(
            src,
            "#if {PW_GROUPS} > 1\n{}\n{{",
            self.w.head(
                "mdh_combine",
                &PASS_ITEMS.to_string(),
                &self.params(false, true)
            )
        );
        let mut l = Lowering::new(self.d, 1);
        self.bind_names(&mut l);
        l.line(&format!(
            "const {IDX} idx = {} * {PASS_ITEMS} + {};",
            self.w.group_id(),
            self.w.local_id()
        ));
        l.line(&format!("if (idx < {KEPT_POINTS}) {{"));
        self.decode(&mut l, "idx", "i", names::extent, &self.kept);
        for (o, &(_, _, t)) in self.outs.iter().enumerate() {
            let v = l.temp("v", t, &from_storage(t, &format!("part{o}[idx]")));
            l.line(&format!("for ({IDX} g = 1; g < {PW_GROUPS}; g++) {{"));
            let part = from_storage(t, &format!("part{o}[g * {KEPT_POINTS} + idx]"));
            let c = match self.ops[o] {
                Some(op) => l.combine(op, t, &v, &part),
                None => v.clone(),
            };
            l.line(&format!("{v} = {c};"));
            l.line("}");
            self.store_result(&mut l, o, &v);
        }
        l.line("}");
        self.finish(src, l);
        src.push_str("}\n#endif\n\n");
    }
}
