use proc_macro2::TokenStream;
use quote::quote;

use super::driver::{cpu_fn, linear_slots};
use crate::config::CpuEntry;
use crate::plan::CpuPlan;

fn kernel(src: TokenStream) -> crate::Checked {
    crate::compile(src).expect("valid kernel")
}

fn entry(k: &crate::Checked, sizes: Option<Vec<usize>>) -> CpuEntry {
    CpuEntry {
        plan: CpuPlan::default_for(k),
        device: "*".into(),
        machine: None,
        sizes,
        line: 1,
        rows: None,
    }
}

fn conv() -> crate::Checked {
    kernel(quote! {
        kernel conv {
            inp(I: f32[2 * P + R - 2, C], F: f32[R, C]),
            out(O: f32[P]),
            out_view(O: |p, r, c| (p)),
            md_hom[P, R, C](|x, w| x * w, (CC, PW(+), PW(+))),
            inp_view(I: |p, r, c| (2 * p + r, c), F: |p, r, c| (r, c)),
        }
    })
}

#[test]
fn accesses_find_their_linearization_per_buffer() {
    let k = conv();
    let f = k.input_accesses()[0].1;
    let accesses = [(0, f), (1, f), (0, f), (1, f), (0, f)];
    assert_eq!(
        linear_slots(&accesses),
        vec![(0, 0), (1, 0), (0, 1), (1, 1), (0, 2)]
    );
}

#[test]
fn streaming_plans_write_final_vectors_past_the_caches() {
    let k = crate::fixtures::matmul();
    let mut e = entry(&k, None);
    let code = cpu_fn(&k, std::slice::from_ref(&e)).to_string();
    assert!(!code.contains("StreamWriter"), "{code}");
    assert!(!code.contains("__sw0"), "{code}");
    e.plan.stream = true;
    let code = cpu_fn(&k, &[e]).to_string();
    // Streamed only where the L1 tile spans the task's PW range (the
    // results are final), through a writer that lives for the task
    // (its drop writes what it holds and fences).
    let writer = quote!(let mut __sw0 = ::mdh::__rt::StreamWriter::new(__out0););
    assert!(code.contains(&writer.to_string()), "{code}");
    let results = quote!(::mdh::__rt::StreamedResults::Accumulated);
    assert!(code.contains(&results.to_string()), "{code}");
    let last = quote!(let __stream: bool = __stream_ok && __first && __t1e_2 == __r[2usize].1;);
    assert!(code.contains(&last.to_string()), "{code}");
    let write = quote!(if __stream {
        __sw0.write::<ISA, 16usize>(__at, __new.0)
    });
    assert!(code.contains(&write.to_string()), "{code}");
}

#[test]
fn direct_results_stream_only_where_the_call_says() {
    // Jacobi's results are final as they are computed (no PW dimension):
    // its full register tile comes twice, one streaming and one writing,
    // chosen by `__stream` (false below the caches' size, on AVX2 and
    // under MDH_STREAM=never).
    let k = crate::fixtures::compiled(crate::fixtures::JACOBI1D);
    let mut e = entry(&k, None);
    e.plan.stream = true;
    let code = cpu_fn(&k, &[e]).to_string();
    // Direct results stream only where their vector runs start on lines
    // (`mdh::stream::starts_lines`).
    let results = quote!(::mdh::__rt::StreamedResults::Direct {
        aligned: true
            && ::mdh::__rt::starts_lines(
                w.as_ptr() as usize,
                4usize,
                &__bound.out_linear[0usize][0usize]
            )
    });
    assert!(code.contains(&results.to_string()), "{code}");
    // Each body (one per plan: the entry's, the baseline's): the streamed
    // tile, then the written one, then the edge tiles' partial writes.
    let mut bodies = code.split("if __stream {");
    let before = bodies.next().unwrap();
    assert!(!before.contains("__sw0 . write ::"), "{code}");
    let mut n = 0;
    for body in bodies {
        let (streamed, written) = body.split_once("} else {").expect("a written tile");
        assert!(streamed.contains("__sw0 . write ::"), "{code}");
        assert!(!written.contains("__sw0 . write ::"), "{code}");
        assert!(written.contains("__out0 . write_lanes"), "{code}");
        n += 1;
    }
    assert!(n >= 1, "{code}");
}

/// `entry` with sizes `sizes` and a plan that asks for an exact body.
fn exact_entry(k: &crate::Checked, sizes: Vec<usize>) -> CpuEntry {
    let mut e = entry(k, Some(sizes));
    e.plan.exact = true;
    e
}

#[test]
fn sized_entries_that_ask_get_an_exact_body_with_constant_strides() {
    let k = conv();
    let entries = [
        exact_entry(&k, vec![5, 3, 4]),
        entry(&k, None),
        entry(&k, Some(vec![7, 3, 4])),
    ];
    let code = cpu_fn(&k, &entries).to_string();
    // Entry 0 (P 5, R 3, C 4) has an exact body; entry 1 has no sizes and
    // entry 2 does not ask for one.
    assert!(code.contains("fn __compute_0_exact"), "{code}");
    assert!(!code.contains("__compute_1_exact"), "{code}");
    assert!(!code.contains("__compute_2_exact"), "{code}");
    // Its image access strides: p by 2·C = 8, r by C = 4, c by 1.
    let ia0 = quote!(let __ia0_c: [isize; 3usize] = [8isize, 4isize, 1isize];).to_string();
    assert!(code.contains(&ia0), "{code}");
    // Sizes the entry cannot bind (the filter's R would not fit) give
    // no exact body.
    let code = cpu_fn(&k, &[exact_entry(&k, vec![0, usize::MAX, 1])]).to_string();
    assert!(!code.contains("__compute_0_exact"), "{code}");
}

#[test]
fn every_isa_shares_one_body_and_the_baseline_runs_one_small_plan() {
    let k = crate::fixtures::matmul();
    let code = cpu_fn(&k, &[entry(&k, None), entry(&k, Some(vec![7, 5, 3]))]).to_string();
    // The multiply-add is one call that each ISA resolves: no ISA branch.
    assert!(!code.contains("if ISA"), "{code}");
    assert!(code.contains(". fma :: < ISA >"), "{code}");
    // On x86-64 the baseline runs one body for any plan: the default plan
    // for a baseline machine, numbered after the entries' bodies, with a
    // smaller register tile than the AVX-512 default's.
    let baseline = quote! {
        #[cfg(target_arch = "x86_64")]
        { __compute_2::<0>(__c, __r, __o, __direct) }
    };
    assert!(code.contains(&baseline.to_string()), "{code}");
    assert!(code.contains("fn __compute_2 < const ISA : u8 >"), "{code}");
    let tile = |p: &CpuPlan| p.reg.iter().product::<usize>();
    assert!(
        tile(&CpuPlan::default_for_isa(
            &k,
            mdh_rt::machine::Isa::Baseline
        )) < tile(&CpuPlan::default_for(&k))
    );
    // The second plan's baseline body only where x86-64's is not.
    assert_eq!(code.matches("__compute_1 :: < 0u8 >").count(), 1, "{code}");
}

#[test]
fn entries_are_listed_as_static_data_for_the_runtime_ranking() {
    use mdh_rt::machine::{Isa, Machine};
    let k = conv();
    let tuned = CpuEntry {
        device: "AMD EPYC".into(),
        machine: Some(Machine {
            isa: Isa::Avx2,
            cores: 2,
            l1d: Some(32 << 10),
            l2: None,
            l3: Some(32 << 20),
        }),
        line: 7,
        ..entry(&k, Some(vec![5, 3, 4]))
    };
    let bytes = tuned.plan.accumulator_bytes(&k);
    let code = cpu_fn(&k, &[tuned, entry(&k, None)]).to_string();
    let listed = quote! {
        pub static __CPU_ENTRIES: &[::mdh::__rt::PlanEntry<'static>] = &[
            ::mdh::__rt::PlanEntry {
                device: "AMD EPYC",
                machine: ::core::option::Option::Some(::mdh::__rt::Machine {
                    isa: ::mdh::__rt::Isa::Avx2,
                    cores: 2usize,
                    l1d: ::core::option::Option::Some(32768u64),
                    l2: ::core::option::Option::None,
                    l3: ::core::option::Option::Some(33554432u64)
                }),
                sizes: ::core::option::Option::Some(&[5usize, 3usize, 4usize]),
                line: 7u32,
                accumulator_bytes: #bytes,
                narrowed_for: ::core::option::Option::None, rows: ::core::option::Option::None, pairs: false
            },
            ::mdh::__rt::PlanEntry {
                device: "*",
                machine: ::core::option::Option::None,
                sizes: ::core::option::Option::None,
                line: 1u32,
                accumulator_bytes: #bytes,
                narrowed_for: ::core::option::Option::Some(::mdh::__rt::Isa::Avx2), rows: ::core::option::Option::None, pairs: false
            }
        ];
    };
    assert!(code.contains(&listed.to_string()), "{code}");
    let chosen = quote!(::mdh::__rt::choose_plan(
        "conv",
        &Sizes::NAMES,
        __CPU_ENTRIES,
        &__sizes
    ));
    assert!(code.contains(&chosen.to_string()), "{code}");
}

#[test]
fn an_entry_is_compiled_only_for_the_instruction_sets_it_suits() {
    use mdh_rt::machine::{Isa, ZEN3};
    let k = crate::fixtures::matmul();
    // A `*` entry of AVX-512's default tile (6 × 64 floats: 1536 B of
    // accumulators, AVX2 holds 384), an entry tuned on an AVX2 machine,
    // and the default plan.
    let wide = exact_entry(&k, vec![7, 5, 3]);
    assert!(wide.plan.accumulator_bytes(&k) > Isa::Avx2.accumulator_bytes());
    let avx2 = CpuEntry {
        machine: Some(ZEN3),
        ..entry(&k, Some(vec![9, 9, 9]))
    };
    let default = CpuEntry {
        line: 0,
        ..entry(&k, None)
    };
    let code = cpu_fn(&k, &[wide.clone(), avx2, default]).to_string();
    let has = |t: TokenStream| code.contains(&t.to_string());
    // AVX-512: the `*` entry's own bodies; the AVX2 machine's entry runs
    // the default's (it never runs there). Each body is a function of its
    // own for the instruction set, compiled with its features.
    assert!(has(quote! {
        0usize if __exact => unsafe { __compute_0_exact_avx512(__c, __r, __o, __direct) },
        0usize => unsafe { __compute_0_avx512(__c, __r, __o, __direct) },
        1usize => unsafe { __compute_2_avx512(__c, __r, __o, __direct) },
        2usize => unsafe { __compute_2_avx512(__c, __r, __o, __direct) },
    }));
    // AVX2: the default runs AVX2's default (body 4, after the baseline's
    // 3), the `*` entry its plan narrowed to AVX2's registers (body 5: 6 ×
    // 16 floats), the AVX2 machine's entry its own.
    assert!(has(quote! {
        0usize => unsafe { __compute_5_avx2(__c, __r, __o, __direct) },
        1usize => unsafe { __compute_1_avx2(__c, __r, __o, __direct) },
        2usize => unsafe { __compute_4_avx2(__c, __r, __o, __direct) },
        _ => unsafe { __compute_5_avx2(__c, __r, __o, __direct) },
    }));
    for body in [quote!(__compute_4_avx2), quote!(__compute_5_avx2)] {
        assert!(has(quote! {
            #[target_feature(enable = "avx2,fma,f16c")]
            #[inline(never)]
            unsafe fn #body
        }));
    }
    let narrowed = wide.narrowed_for_avx2(&k).expect("narrowed for AVX2");
    assert_eq!(narrowed.reg, vec![6, 16, 1]);
    assert!(code.contains("fn __compute_5 < const ISA : u8 >"), "{code}");
    assert!(!code.contains("__compute_0_exact :: < 1u8 >"), "{code}");
    assert!(!code.contains("__compute_0 :: < 1u8 >"), "{code}");
}

#[test]
fn vector_lanes_take_the_polynomial_exp_of_their_instruction_set() {
    // Its multiply-adds fused where `ISA` has FMA (`V::exp`).
    let k = kernel(quote! {
        kernel ex {
            inp(x: f32[I, J]),
            out(y: f32[I, J]),
            out_view(y: |i, j| (i, j)),
            md_hom[I, J](|a| a.exp(), (CC, CC)),
            inp_view(x: |i, j| (i, j)),
        }
    });
    let code = cpu_fn(&k, &[entry(&k, None)]).to_string();
    assert!(code.contains(&quote!(.exp::<ISA>()).to_string()), "{code}");
}

fn matmul_16(t: TokenStream) -> crate::Checked {
    kernel(quote! {
        kernel matmul_16 {
            inp(A: #t[I, K], B: #t[K, J]),
            out(C: f32[I, J]),
            out_view(C: |i, j, k| (i, j)),
            md_hom[I, J, K](|a, b| (a as f32) * (b as f32), (CC, CC, PW(+))),
            inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
        }
    })
}

#[test]
fn sixteen_bit_contractions_widen_while_packing_and_run_the_f32_tiles() {
    for (t, widen) in [(quote!(bf16), "widen_bf16"), (quote!(f16), "widen_f16")] {
        let k = matmul_16(t);
        assert!(super::lanes_apply(&k));
        let e = entry(&k, None);
        // The f32 matmul's tiles; B packed with `j` contiguous, and A, the
        // broadcast operand, packed too (in its own order).
        let f32_plan = CpuPlan::default_for(&crate::fixtures::matmul());
        assert_eq!(e.plan.reg, f32_plan.reg);
        assert_eq!(f32_plan.pack, vec![vec![], vec![2, 1]]);
        assert_eq!(e.plan.pack, vec![vec![0, 2], vec![2, 1]]);
        let code = cpu_fn(&k, std::slice::from_ref(&e)).to_string();
        // Both tiles hold f32, filled by the conversion; the register tile
        // is the f32 one (vectors of f32, fused multiply-adds).
        let slot = quote!(::mdh::cpu::PackSlot<f32, 4usize>).to_string();
        // (two slots per body: the AVX2/AVX-512 one and the baseline's.)
        assert_eq!(code.matches(&slot).count() % 2, 0, "{code}");
        assert!(code.contains(&slot), "{code}");
        // bf16 tiles only in the pair bodies (both inputs as they are).
        let pair_bodies = code.matches("_pairs < const ISA").count();
        let bf16_slots = code.matches("PackSlot < :: mdh :: __rt :: bf16").count();
        assert_eq!(bf16_slots, 2 * pair_bodies, "{code}");
        assert!(!code.contains("PackSlot < :: mdh :: __rt :: f16"), "{code}");
        assert!(code.contains(widen), "{code}");
        assert!(code.contains(&quote!(.fma::<ISA>).to_string()), "{code}");
        assert!(
            code.contains(&quote!(::mdh::__rt::V<f32, 16usize>).to_string()),
            "{code}"
        );
        assert!(!code.contains("to_f32"), "{code}");
    }
    // A 16-bit value used otherwise is not widened: half arithmetic,
    // scalar tiles as before.
    let k = kernel(quote! {
        kernel h {
            inp(A: bf16[I, K], B: bf16[K, J]),
            out(C: f32[I, J]),
            out_view(C: |i, j, k| (i, j)),
            md_hom[I, J, K](|a, b| (a * b) as f32, (CC, CC, PW(+))),
            inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)),
        }
    });
    assert!(!super::lanes_apply(&k));
    let code = cpu_fn(&k, &[entry(&k, None)]).to_string();
    assert!(!code.contains("widen_bf16"), "{code}");
}

/// A bf16 product whose plan takes lanes along `j` and packs B with `k`, `j`
/// innermost gets pair bodies (two points of `k` per `vdpbf16ps`), chosen
/// at run time; f16, f32 and plans without that shape get none.
#[test]
fn bf16_products_get_pair_bodies_chosen_at_run_time() {
    use super::pairs::Pairs;
    use super::Gen;
    let k = matmul_16(quote!(bf16));
    let plan = CpuPlan::default_for(&k);
    let pairs = Gen::new(&k).pairs_for(&plan);
    assert_eq!(pairs, Some(Pairs { x: 0, y: 1, kr: 2 }));
    let code = cpu_fn(&k, &[entry(&k, None)]).to_string();
    for part in [
        "fn __compute_0_pairs < const ISA : u8 , const NATIVE : bool >",
        "dot_pairs :: < NATIVE >",
        ":: mdh :: __rt :: pack_pairs",
        "avx512bf16",
        ":: mdh :: __rt :: bf16_pairs ()",
    ] {
        assert!(code.contains(part), "{part}: {code}");
    }
    // The plans of few rows: B packed as pairs for 2..5 rows where the
    // bodies run them (a pair body), read in place otherwise (none).
    let few: Vec<_> = CpuPlan::few_rows_for(&k)
        .into_iter()
        .map(|(p, r)| (Gen::new(&k).pairs_for(&p).is_some(), r.min, r.max))
        .collect();
    assert_eq!(
        few,
        [(false, 1, 1), (true, 2, 5), (false, 3, 3), (false, 2, 5)]
    );
    // B read in place, or lanes of partial results along `k`: no pairs.
    let mut in_place = plan.clone();
    in_place.pack[1] = Vec::new();
    assert_eq!(Gen::new(&k).pairs_for(&in_place), None);
    let mut along_k = plan.clone();
    along_k.reg = vec![1, 1, 16];
    assert_eq!(Gen::new(&k).pairs_for(&along_k), None);
    // The listed entry says so (`MDH_EXPLAIN` names the pairs).
    assert!(code.contains("pairs : true"), "{code}");
    for other in [matmul_16(quote!(f16)), crate::fixtures::matmul()] {
        let code = cpu_fn(&other, &[entry(&other, None)]).to_string();
        assert!(
            !code.contains("pair_") && !code.contains("pairs : true"),
            "{code}"
        );
    }
}
