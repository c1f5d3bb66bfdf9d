//! The Rust/rayon CPU kernel of a checked kernel.
//!
//! The generated `cpu` function validates its arguments with the kernel's
//! [`KernelDesc`](crate::desc::KernelDesc), then hands three closures to the
//! facade's parallel driver (`mdh::cpu::execute`): `compute` (the scalar
//! function folded over the PW dimensions of a region, for each kept point),
//! `combine` (the combine operators on partial results) and `write` (the
//! output views).

use proc_macro2::{Ident, TokenStream};
use quote::{format_ident, quote};

use crate::codegen::rust_expr::{self, ty};
use crate::spec::{IndexFn, Kernel, ReduceOp, ScalarType, Type};

fn dim_var(d: usize) -> Ident {
    format_ident!("__i{}", d)
}

/// Dimensions an access depends on (a non-zero coefficient in some component).
fn used_dims(f: &IndexFn, dims: usize) -> Vec<usize> {
    (0..dims)
        .filter(|&d| f.components.iter().any(|c| c.dims.get(d).copied().unwrap_or(0) != 0))
        .collect()
}

/// `(base + Σ coef[d] · i_d) as usize` for the dimensions the access uses.
fn offset(base: &Ident, coef: &Ident, used: &[usize]) -> TokenStream {
    let terms = used.iter().map(|&d| {
        let i = dim_var(d);
        quote!(+ #coef[#d] * #i as isize)
    });
    quote!((#base #(#terms)*) as usize)
}

/// The operator of output access `k` (the same in every reduced dimension,
/// by the checker's Lemma 1 check), if any dimension is PW or PS.
fn reduce_op(k: &Kernel, access: usize) -> Option<&ReduceOp> {
    k.ops.iter().find_map(|op| op.op_for(access))
}

pub fn cpu_fn(k: &Kernel) -> TokenStream {
    let d = k.dims.len();
    let kinds = k.dim_kinds();
    let kept: Vec<usize> = (0..d).filter(|&i| kinds[i].is_kept()).collect();
    let reduced: Vec<usize> = (0..d).filter(|&i| !kinds[i].is_kept()).collect();
    let name_str = k.name.to_string();

    // Arguments.
    let in_names: Vec<&Ident> = k.inputs.iter().map(|b| &b.name).collect();
    let in_tys: Vec<TokenStream> = k.inputs.iter().map(|b| ty(b.ty)).collect();
    let out_names: Vec<&Ident> = k.outputs.iter().map(|b| &b.name).collect();
    let out_tys: Vec<TokenStream> = k.outputs.iter().map(|b| ty(b.ty)).collect();
    let param_names: Vec<&Ident> = k.params.iter().map(|p| &p.name).collect();
    let param_tys: Vec<TokenStream> = k.params.iter().map(|p| ty(p.ty)).collect();
    let size_names = &k.size_params;
    let ns = size_names.len();
    let in_slices: Vec<Ident> = (0..k.inputs.len()).map(|b| format_ident!("__in{}", b)).collect();
    let out_ptrs: Vec<Ident> = (0..k.outputs.len()).map(|b| format_ident!("__out{}", b)).collect();

    // Input accesses: linear forms and the reads at a point.
    let mut setup = TokenStream::new();
    let mut reads = TokenStream::new();
    let mut read_vars = Vec::new();
    let mut per_buffer = vec![0usize; k.inputs.len()];
    for (j, (b, f)) in k.input_accesses().into_iter().enumerate() {
        let a = per_buffer[b];
        per_buffer[b] += 1;
        let (base, coef, var) = (format_ident!("__ia{}_b", j), format_ident!("__ia{}_c", j), format_ident!("__p{}", j));
        setup.extend(quote! {
            let #base: isize = __bound.in_linear[#b][#a].base;
            let #coef: [isize; #d] = ::core::array::from_fn(|__d| __bound.in_linear[#b][#a].coefs[__d]);
        });
        let slice = &in_slices[b];
        let t = ty(k.inputs[b].ty);
        let off = offset(&base, &coef, &used_dims(f, d));
        // SAFETY: `bind` checked that this access stays inside the buffer
        // over the whole index space, and the loops stay inside it.
        reads.extend(quote! { let #var: #t = unsafe { *#slice.get_unchecked(#off) }; });
        read_vars.push(var);
    }

    // The scalar function at one point.
    let sf = &k.scalar_fn;
    let index_binds = sf.index_params.iter().flatten().enumerate().map(|(d, name)| {
        let i = dim_var(d);
        quote!(let #name: usize = #i;)
    });
    let param_binds = sf.params.iter().zip(&read_vars).map(|(p, v)| quote!(let #p = #v;));
    let body = rust_expr::expr(&sf.body);
    let outs = k.output_accesses();
    let out_tys_acc: Vec<ScalarType> = outs.iter().map(|(b, _)| k.outputs[*b].ty).collect();
    let n_out = outs.len();
    let vals: Vec<Ident> = (0..n_out).map(|o| format_ident!("__v{}", o)).collect();
    let result_ty = match &sf.body.ty {
        Some(t @ Type::Tuple(_)) => rust_expr::type_of(t),
        _ => ty(out_tys_acc.first().copied().unwrap_or(ScalarType::F32)),
    };
    let destructure = if n_out == 1 {
        let v = &vals[0];
        quote!(let #v: #result_ty = { #(#index_binds)* #(#param_binds)* #body };)
    } else {
        quote!(let (#(#vals,)*): #result_ty = { #(#index_binds)* #(#param_binds)* #body };)
    };
    let point = quote! { #reads #destructure };

    // Accumulation over the PW dimensions of a region.
    let out_tys_acc_t: Vec<TokenStream> = out_tys_acc.iter().map(|t| ty(*t)).collect();
    let a_ty = quote!((#(#out_tys_acc_t,)*));
    let accs: Vec<Ident> = (0..n_out).map(|o| format_ident!("__acc{}", o)).collect();
    let ops: Vec<Option<&ReduceOp>> = (0..n_out).map(|o| reduce_op(k, o)).collect();
    let has_identity = |o: usize| matches!(ops[o], Some(ReduceOp::Builtin(..)));
    let loops_over = |dims: &[usize], inner: TokenStream| -> TokenStream {
        dims.iter().rev().fold(inner, |inner, &dd| {
            let i = dim_var(dd);
            quote!(for #i in __r[#dd].0..__r[#dd].1 { #inner })
        })
    };
    let per_kept_point = if reduced.is_empty() {
        quote! { #point __o.push((#(#vals,)*)); }
    } else {
        let mut init = TokenStream::new();
        let mut update = TokenStream::new();
        let mut finish = Vec::new();
        for o in 0..n_out {
            let (acc, v, t) = (&accs[o], &vals[o], out_tys_acc[o]);
            let tt = ty(t);
            let Some(op) = ops[o] else { continue };
            if let ReduceOp::Builtin(b, _) = op {
                let id = rust_expr::identity(*b, t);
                init.extend(quote!(let mut #acc: #tt = #id;));
                let c = rust_expr::combine(op, t, &quote!(#acc), &quote!(#v));
                update.extend(quote!(#acc = #c;));
                finish.push(quote!(#acc));
            } else {
                init.extend(quote!(let mut #acc: ::core::option::Option<#tt> = ::core::option::Option::None;));
                let c = rust_expr::combine(op, t, &quote!(__a), &quote!(#v));
                update.extend(quote! {
                    #acc = ::core::option::Option::Some(match #acc {
                        ::core::option::Option::Some(__a) => #c,
                        ::core::option::Option::None => #v,
                    });
                });
                finish.push(quote!(#acc.expect("mdh::cpu::execute passes non-empty PW ranges")));
            }
        }
        let inner = loops_over(&reduced, quote! { #point #update });
        quote! { #init #inner __o.push((#(#finish,)*)); }
    };
    let compute_body = loops_over(&kept, per_kept_point);

    // Combination of two partial results.
    let combine_parts = (0..n_out).map(|o| {
        let idx = syn::Index::from(o);
        match ops[o] {
            Some(op) => rust_expr::combine(op, out_tys_acc[o], &quote!(__x.#idx), &quote!(__y.#idx)),
            None => quote!(__x.#idx),
        }
    });
    let identity = if !ops.is_empty() && (0..n_out).all(has_identity) {
        let ids = (0..n_out).map(|o| match ops[o] {
            Some(ReduceOp::Builtin(b, _)) => rust_expr::identity(*b, out_tys_acc[o]),
            _ => quote!(),
        });
        quote!(::core::option::Option::Some((#(#ids,)*)))
    } else {
        quote!(::core::option::Option::None)
    };

    // Writes through the output views.
    let mut out_setup = TokenStream::new();
    let mut writes = TokenStream::new();
    let mut per_out = vec![0usize; k.outputs.len()];
    for (o, (b, f)) in outs.iter().enumerate() {
        let a = per_out[*b];
        per_out[*b] += 1;
        let (base, coef) = (format_ident!("__oa{}_b", o), format_ident!("__oa{}_c", o));
        out_setup.extend(quote! {
            let #base: isize = __bound.out_linear[#b][#a].base;
            let #coef: [isize; #d] = ::core::array::from_fn(|__d| __bound.out_linear[#b][#a].coefs[__d]);
        });
        let off = offset(&base, &coef, &used_dims(f, d));
        let ptr = &out_ptrs[*b];
        let idx = syn::Index::from(o);
        // SAFETY: `bind` checked bounds and disjointness of accesses; the
        // output view is injective over the kept dimensions (checked at
        // compile time) and each kept point is written by one task.
        writes.extend(quote! { unsafe { #ptr.write(#off, __v.#idx) }; });
    }
    let write_body = loops_over(
        &kept,
        quote! {
            let __v = __vals[__n];
            __n += 1;
            #writes
        },
    );

    let kind_toks = kinds.iter().map(|kd| super::dim_kind(*kd));
    let size_idx = 0..ns;
    let doc = format!(
        "Runs `{name_str}` on the CPU (rayon). Arguments: the inputs, the outputs (overwritten where the output view writes), the params, then the sizes. Returns an error if a slice length does not match its shape for these sizes, if a size expression overflows, or if an index function leaves its buffer."
    );
    quote! {
        #[doc = #doc]
        pub fn cpu(
            #(#in_names: &[#in_tys],)*
            #(#out_names: &mut [#out_tys],)*
            #(#param_names: #param_tys,)*
            sizes: Sizes,
        ) -> ::core::result::Result<(), ::mdh::Error> {
            let __sizes: [usize; #ns] = sizes.values();
            let __bound = desc().bind(&__sizes, &[#(#in_names.len()),*], &[#(#out_names.len()),*])?;
            #(let #size_names: usize = __sizes[#size_idx];)*
            #(let #in_slices: &[#in_tys] = #in_names;)*
            #(let #out_ptrs = ::mdh::__rt::SyncPtr::new(#out_names);)*
            #setup
            #out_setup
            let __ext: [usize; #d] = ::core::array::from_fn(|__d| __bound.extents[__d]);
            ::mdh::__rt::execute::<#a_ty, #d>(
                #name_str,
                __ext,
                [#(#kind_toks),*],
                #identity,
                |__r: &::mdh::__rt::Region<#d>, __o: &mut ::std::vec::Vec<#a_ty>| { #compute_body },
                |__x: #a_ty, __y: #a_ty| -> #a_ty { (#(#combine_parts,)*) },
                |__r: &::mdh::__rt::Region<#d>, __vals: &[#a_ty]| {
                    let mut __n = 0usize;
                    #write_body
                },
            )
        }
    }
}
