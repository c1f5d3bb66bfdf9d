//! The scan kernels of PS dimensions (`mdh_scan{s}`, `mdh_scan{s}_carry`,
//! `mdh_scan{s}_add`): chunks of a line scanned by work-groups in local
//! memory, then the carries of the chunks scanned and added.

use std::fmt::Write;

use mdh_rt::names::{self, IDX, KEPT_POINTS};

use super::{Emit, PASS_ITEMS};
use crate::codegen::c_expr::{from_storage, to_storage, Lowering};
use crate::spec::{DimKind, ReduceOp, ScalarType};

impl Emit<'_> {
    /// The in-place inclusive scan along each PS dimension `s`, in three
    /// kernels (lines are split into chunks of `SCAN_CHUNK` elements):
    /// - `mdh_scan{s}`: one work-group per chunk scans it ([`Self::group_scan`]);
    /// - `mdh_scan{s}_carry`: one work-group per line scans the last
    ///   elements of its full chunks, which then hold their final values;
    /// - `mdh_scan{s}_add`: every other element after the first chunk
    ///   combines the final value of the chunk before it in front.
    ///
    /// The last two run only for lines longer than one chunk.
    pub(super) fn scan_kernels(&self, src: &mut String) {
        let w = &self.w;
        let scanned: Vec<(usize, usize, usize, ScalarType, &ReduceOp)> = self
            .outs
            .iter()
            .enumerate()
            .filter_map(|(o, &(b, a, t))| Some((o, b, a, t, self.ops[o]?)))
            .collect();
        for &s in self.kept.iter().filter(|&&x| self.kinds[x] == DimKind::Ps) {
            let n = names::extent(s);
            let others: Vec<usize> = self.kept.iter().copied().filter(|&x| x != s).collect();
            // The element `j` of output access `(b, a)` on this line.
            let at = |b: usize, a: usize, j: &str| {
                let access = names::output_access(b, a);
                let base = self.linear(&access, &self.kept);
                format!("out{b}[({base}) + ({j}) * {}]", names::coef(&access, s))
            };
            // Work-groups that scan `count` elements `elem({k})` of line
            // `line` (after `setup`).
            for (name, setup, line, count, elem) in [
                (
                    format!("mdh_scan{s}"),
                    vec![
                        format!("const {IDX} gid = {};", w.group_id()),
                        format!("const {IDX} chunks = ({n} + SCAN_CHUNK - 1) / SCAN_CHUNK;"),
                        format!("const {IDX} k0 = gid % chunks * SCAN_CHUNK;"),
                    ],
                    "gid / chunks".to_string(),
                    format!("MDH_MIN(SCAN_CHUNK, {n} - k0)"),
                    "k0 + ({k})",
                ),
                (
                    format!("mdh_scan{s}_carry"),
                    Vec::new(),
                    w.group_id(),
                    format!("{n} / SCAN_CHUNK"),
                    "(({k}) + 1) * SCAN_CHUNK - 1",
                ),
            ] {
                let _ = writeln!(
                    src,
                    "{}\n{{",
                    w.head(&name, &PASS_ITEMS.to_string(), &self.params(false, false))
                );
                let mut l = Lowering::new(self.d, 1);
                self.bind_names(&mut l);
                for &(o, _, _, t, _) in &scanned {
                    l.line(&format!(
                        "{} {} sc{o}[{PASS_ITEMS}];",
                        w.shared,
                        self.d.storage_ty(t)
                    ));
                }
                for line in &setup {
                    l.line(line);
                }
                self.decode(&mut l, &line, "i", names::extent, &others);
                l.line(&format!("const {IDX} i{s} = 0;"));
                l.line(&format!("const {IDX} count = {count};"));
                for &(o, b, a, t, op) in &scanned {
                    self.group_scan(&mut l, o, t, op, &|k| at(b, a, &elem.replace("{k}", k)));
                }
                self.finish(src, l);
                src.push_str("}\n\n");
            }
            // The carries: one work-item per element after the first chunk.
            let _ = writeln!(
                src,
                "{}\n{{",
                w.head(
                    &format!("mdh_scan{s}_add"),
                    &PASS_ITEMS.to_string(),
                    &self.params(false, false)
                )
            );
            let mut l = Lowering::new(self.d, 1);
            self.bind_names(&mut l);
            l.line(&format!(
                "const {IDX} idx = {} * {PASS_ITEMS} + {};",
                w.group_id(),
                w.local_id()
            ));
            l.line(&format!("const {IDX} rest = {n} - SCAN_CHUNK;"));
            l.line(&format!(
                "if (rest > 0 && idx / rest < {KEPT_POINTS} / ({n} > 0 ? {n} : 1)) {{"
            ));
            l.line(&format!("const {IDX} j = SCAN_CHUNK + idx % rest;"));
            self.decode(&mut l, "idx / rest", "i", names::extent, &others);
            l.line(&format!("const {IDX} i{s} = 0;"));
            // The last elements of full chunks are final after the carry pass.
            l.line("if ((j + 1) % SCAN_CHUNK != 0) {");
            for &(_, b, a, t, op) in &scanned {
                let carry = from_storage(t, &at(b, a, "j / SCAN_CHUNK * SCAN_CHUNK - 1"));
                let c = l.combine(op, t, &carry, &from_storage(t, &at(b, a, "j")));
                l.line(&format!("{} = {};", at(b, a, "j"), to_storage(t, &c)));
            }
            l.line("}");
            l.line("}");
            self.finish(src, l);
            src.push_str("}\n\n");
        }
    }

    /// Scans `count` elements `at(k)` (`k` in `[0, count)`) of output
    /// access `o` in place with the work-group: in chunks of `PASS_ITEMS`,
    /// each scanned in local memory `sc{o}` (Hillis-Steele: no neutral
    /// element needed, operands stay in order, so non-commutative
    /// operators work) and then combined with the carry of the chunks
    /// before it. Every loop has the same trip count in all work-items (the
    /// barriers); work-items past the end load the last element and write
    /// nothing.
    fn group_scan(
        &self,
        l: &mut Lowering,
        o: usize,
        t: ScalarType,
        op: &ReduceOp,
        at: &dyn Fn(&str) -> String,
    ) {
        let (w, p) = (&self.w, PASS_ITEMS);
        l.line("{");
        l.line(&format!("const {IDX} lid = {};", w.local_id()));
        let carry = l.temp("carry", t, &from_storage(t, &at("0")));
        l.line(&format!("for ({IDX} c = 0; c < count; c += {p}) {{"));
        l.line(&format!("const {IDX} j = c + lid;"));
        let v = l.temp("v", t, &from_storage(t, &at("MDH_MIN(j, count - 1)")));
        l.line(&format!("for ({IDX} st = 1; st < {p}; st *= 2) {{"));
        l.line(&format!("sc{o}[lid] = {};", to_storage(t, &v)));
        l.line(w.barrier);
        l.line("if (lid >= st) {");
        let c = l.combine(op, t, &from_storage(t, &format!("sc{o}[lid - st]")), &v);
        l.line(&format!("{v} = {c};"));
        l.line("}");
        l.line(w.barrier);
        l.line("}");
        l.line("if (c > 0) {");
        let c = l.combine(op, t, &carry, &v);
        l.line(&format!("{v} = {c};"));
        l.line("}");
        l.line(&format!(
            "if (j < count) {{ {} = {}; }}",
            at("j"),
            to_storage(t, &v)
        ));
        // The last element of the chunk carries into the next one.
        l.line(&format!("sc{o}[lid] = {};", to_storage(t, &v)));
        l.line(w.barrier);
        l.line(&format!(
            "{carry} = {};",
            from_storage(t, &format!("sc{o}[{p} - 1]"))
        ));
        l.line(w.barrier);
        l.line("}");
        l.line("}");
    }
}
