//! The scalar function at one point: the reads of its input accesses, its
//! values, and their accumulation in a register tile.

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use super::names::dim_var;
use super::widen::widen;
use super::{offset, Gen};
use crate::codegen::rust_expr::{self, ty};
use crate::spec::{BinOp, BuiltinOp, Expr, ExprKind, ReduceOp, ScalarType, Type};

/// One input access as the read emitters see it: in place or packed.
pub(super) struct InputAccess {
    /// The dimensions it depends on.
    pub(super) uses: Vec<usize>,
    /// The slice it reads, its element type, and its offset at the current
    /// point.
    pub(super) slice: Ident,
    pub(super) ty: ScalarType,
    /// The 16-bit type its elements are widened from at the read (an
    /// in-place access of a widened input; a packed one holds f32).
    pub(super) widen: Option<ScalarType>,
    pub(super) off: TokenStream,
    /// Per dimension: the offset's coefficient, and whether it is 1 at
    /// compile time (consecutive indices are consecutive elements).
    pub(super) stride: Vec<TokenStream>,
    pub(super) unit: Vec<bool>,
}

impl<'k> Gen<'k> {
    /// `let __pJ: TYPE = READ;` for every input access `J` (one per
    /// scalar-function parameter), where `read` gives the type and the read
    /// expression of one access.
    pub(super) fn input_reads(
        &self,
        read: impl Fn(&InputAccess) -> (TokenStream, TokenStream),
    ) -> TokenStream {
        let mut reads = TokenStream::new();
        for (j, access) in self.accesses().iter().enumerate() {
            let var = format_ident!("__p{}", j);
            let (t, r) = read(access);
            reads.extend(quote!(let #var: #t = #r;));
        }
        reads
    }

    /// The input accesses (one per scalar-function parameter), in place or
    /// packed as the plan says.
    pub(super) fn accesses(&self) -> Vec<InputAccess> {
        let facts = &self.k.analysis().inputs;
        let accesses = self.k.input_accesses().into_iter().zip(facts).enumerate();
        accesses
            .map(|(j, ((b, _), a))| {
                let (base, coef) = (format_ident!("__ia{}_b", j), format_ident!("__ia{}_c", j));
                let layout = &self.pack[j];
                match layout.split_last() {
                    // In place: the access's own offset and strides.
                    None => InputAccess {
                        uses: a.uses.clone(),
                        slice: format_ident!("__in{}", b),
                        ty: self.w.read_ty(j, a.ty),
                        widen: self.w.from[j],
                        off: offset(a, &base, &coef),
                        stride: (0..self.d).map(|x| self.in_place_stride(j, x)).collect(),
                        unit: a.static_coefs.iter().map(|&c| c == Some(1)).collect(),
                    },
                    // Packed: the position in the tile's buffer, whose last
                    // layout dimension is contiguous.
                    Some((&last, _)) => {
                        let (off, stride) = self.packed_offset(j);
                        InputAccess {
                            uses: layout.clone(),
                            slice: format_ident!("__pk{}", j),
                            ty: self.w.read_ty(j, a.ty),
                            widen: None,
                            off,
                            stride,
                            unit: (0..self.d).map(|x| x == last).collect(),
                        }
                    }
                }
            })
            .collect()
    }

    /// The coefficient of dimension `x` in input access `j`'s offset: a
    /// constant where it is one at compile time.
    pub(super) fn in_place_stride(&self, j: usize, x: usize) -> TokenStream {
        match self.k.analysis().inputs[j].static_coefs[x] {
            Some(c) => {
                let c = c as isize;
                quote!(#c)
            }
            None => {
                let coef = format_ident!("__ia{}_c", j);
                quote!(#coef[#x])
            }
        }
    }

    /// Reads of the input accesses at the point `__i0, __i1, …` into
    /// `__p0, __p1, …`.
    pub(super) fn reads(&self) -> TokenStream {
        self.input_reads(|a| {
            let (slice, off) = (&a.slice, &a.off);
            // SAFETY: `bind` checked that this access stays inside the buffer
            // over the whole index space, and every point is inside it.
            let x = widen(a.widen, quote!(unsafe { *#slice.get_unchecked(#off) }));
            (ty(a.ty), x)
        })
    }

    /// The scalar function's body with its parameters bound to the reads.
    pub(super) fn scalar_fn_block(&self, body: TokenStream) -> TokenStream {
        let index_binds = self.index_binds(|_, name, i| quote!(let #name: usize = #i;));
        let param_binds = self.param_binds();
        quote!({ #(#index_binds)* #(#param_binds)* #body })
    }

    /// `bind(d, name, i)` for each index parameter `name` of the scalar
    /// function, bound to dimension `d` whose index variable is `i`.
    pub(super) fn index_binds<'s>(
        &'s self,
        bind: impl Fn(usize, &Ident, &Ident) -> TokenStream + 's,
    ) -> impl Iterator<Item = TokenStream> + 's {
        let names = self.k.scalar_fn.index_params.iter().flatten();
        names
            .enumerate()
            .map(move |(d, name)| bind(d, name, &dim_var(d)))
    }

    /// The scalar function's value parameters bound to the reads `__p{j}`.
    pub(super) fn param_binds(&self) -> impl Iterator<Item = TokenStream> + '_ {
        self.k.scalar_fn.params.iter().enumerate().map(|(j, p)| {
            let v = format_ident!("__p{}", j);
            quote!(let #p = #v;)
        })
    }

    /// The scalar function's values `__v0, __v1, …` at the current point.
    pub(super) fn point(&self) -> TokenStream {
        let vals: Vec<Ident> = (0..self.n_out())
            .map(|o| format_ident!("__v{}", o))
            .collect();
        let body = self.scalar_fn_block(rust_expr::expr(&self.w.body));
        let result_ty = match &self.w.body.ty {
            t @ Type::Tuple(_) => rust_expr::type_of(t),
            _ => ty(self.out_tys.first().copied().unwrap_or(ScalarType::F32)),
        };
        let pat = if vals.len() == 1 {
            let v = &vals[0];
            quote!(#v)
        } else {
            quote!((#(#vals,)*))
        };
        let reads = self.reads();
        quote! { #reads let #pat: #result_ty = #body; }
    }

    /// `acc[slot] = acc[slot] ⊕ f(point)` for every output. With an FMA ISA, a
    /// float `a * b` summed with `+` becomes one `mul_add` (a contraction:
    /// one rounding instead of two).
    pub(super) fn accumulate(&self, slot: &TokenStream) -> TokenStream {
        let mut upd = TokenStream::new();
        for o in 0..self.n_out() {
            let Some(op) = self.ops[o] else { continue };
            let (acc, v, t) = (
                format_ident!("__acc{}", o),
                format_ident!("__v{}", o),
                self.out_tys[o],
            );
            if self.has_identity(o) {
                let c = rust_expr::combine(op, t, &quote!(#acc[#slot]), &quote!(#v));
                upd.extend(quote!(#acc[#slot] = #c;));
            } else {
                let c = rust_expr::combine(op, t, &quote!(__a), &quote!(#v));
                upd.extend(quote! {
                    #acc[#slot] = ::core::option::Option::Some(match #acc[#slot] {
                        ::core::option::Option::Some(__a) => #c,
                        ::core::option::Option::None => #v,
                    });
                });
            }
        }
        match self.fused_mul_add(slot) {
            Some(fused) => fused,
            None => {
                let point = self.point();
                quote! { #point #upd }
            }
        }
    }

    /// The factors `a`, `b` of a kernel whose scalar function is a float
    /// product `a * b` combined by `PW(+)`: a multiply-add to fuse (not of
    /// a 16-bit float type, which rounds the product and the sum each).
    pub(super) fn fusable_product(&self) -> Option<(&Expr, &Expr)> {
        let single_float_sum = self.n_out() == 1
            && self.out_tys[0].is_float()
            && !self.out_tys[0].is_half()
            && matches!(self.ops[0], Some(ReduceOp::Builtin(BuiltinOp::Add, _)));
        match &self.w.body.kind {
            ExprKind::Binary(BinOp::Mul, a, b, _) if single_float_sum => Some((a, b)),
            _ => None,
        }
    }

    pub(super) fn fused_mul_add(&self, slot: &TokenStream) -> Option<TokenStream> {
        let (a, b) = self.fusable_product()?;
        let (a, b) = (rust_expr::expr(a), rust_expr::expr(b));
        let reads = self.reads();
        let body =
            self.scalar_fn_block(quote!(::mdh::__rt::mul_add::<ISA, _>(#a, #b, __acc0[#slot])));
        Some(quote! { #reads __acc0[#slot] = #body; })
    }
}
