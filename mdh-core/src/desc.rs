//! The run-time description of a parsed kernel (see [`mdh_rt::desc`]): the
//! compiler's side, which turns a [`Checked`] kernel's size expressions and views into
//! a [`KernelDesc`].

use std::borrow::Cow;

pub use mdh_rt::desc::*;

use crate::analysis::Checked;
use crate::spec::{Kernel, SizeExpr};

fn size_code(e: &SizeExpr, k: &Kernel, out: &mut Vec<SizeOp>) {
    match e {
        SizeExpr::Const(c, _) => out.push(SizeOp::Const(*c)),
        SizeExpr::Param(p) => out.push(SizeOp::Param(
            k.size_index(&p.to_string())
                .expect("size parameters are collected by the parser"),
        )),
        SizeExpr::Add(a, b) | SizeExpr::Sub(a, b) | SizeExpr::Mul(a, b) => {
            size_code(a, k, out);
            size_code(b, k, out);
            out.push(match e {
                SizeExpr::Add(..) => SizeOp::Add,
                SizeExpr::Sub(..) => SizeOp::Sub,
                _ => SizeOp::Mul,
            });
        }
    }
}

fn code_of(e: &SizeExpr, k: &Kernel) -> SizeCode {
    let mut v = Vec::new();
    size_code(e, k, &mut v);
    Cow::Owned(v)
}

impl Describe for Checked {
    fn describe(&self) -> KernelDesc {
        let k = self;
        let bufs =
            |decls: &[crate::spec::BufferDecl], views: &[crate::spec::View]| -> Vec<BufDesc> {
                decls
                    .iter()
                    .map(|b| BufDesc {
                        name: Cow::Owned(b.name.to_string()),
                        ty: b.ty,
                        shape: Cow::Owned(b.shape.iter().map(|s| code_of(s, k)).collect()),
                        accesses: Cow::Owned(
                            views
                                .iter()
                                .filter(|v| v.buffer == b.name)
                                .flat_map(|v| v.accesses.iter())
                                .map(|a| AccessDesc {
                                    components: Cow::Owned(
                                        a.components
                                            .iter()
                                            .map(|c| AffineDesc {
                                                dims: Cow::Owned(c.dims.clone()),
                                                sizes: Cow::Owned(c.sizes.clone()),
                                                constant: c.constant,
                                            })
                                            .collect(),
                                    ),
                                })
                                .collect(),
                        ),
                    })
                    .collect()
            };
        KernelDesc {
            name: Cow::Owned(k.name.to_string()),
            size_params: Cow::Owned(
                k.size_params
                    .iter()
                    .map(|s| Cow::Owned(s.to_string()))
                    .collect(),
            ),
            dims: Cow::Owned(k.dims.iter().map(|d| code_of(&d.size, k)).collect()),
            kinds: Cow::Owned(k.analysis().kinds.clone()),
            inputs: Cow::Owned(bufs(&k.inputs, &k.inp_view)),
            outputs: Cow::Owned(bufs(&k.outputs, &k.out_view)),
            contraction: k.contraction(),
        }
    }
}
