use super::{epilogues, Epilogue};
use crate::{compile_program_str, Program};

/// The epilogues of a kernel of stages given as source.
fn of(source: &str) -> Vec<Epilogue> {
    match compile_program_str(source) {
        Ok(Program::Staged(k)) => epilogues(&k),
        Ok(Program::Single(_)) => panic!("not a kernel of stages"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_point_map_of_a_products_result_is_an_epilogue() {
    // The product writes `t` transposed: the epilogue's point (p, q) is
    // the product's (j, i), its dimensions 1 and 0.
    let want = Epilogue {
        producer: 0,
        stage: 1,
        tmp: 0,
        output: 0,
        input: 0,
        dims: vec![1, 0],
    };
    assert_eq!(of(crate::fixtures::DENSE), [want]);
    // The intermediate read second, after a scalar.
    let source = "kernel k { inp(A: f32[I, K], B: f32[K, J], s: f32[]), out(y: f32[I, J]), \
         tmp(t: f32[I, J]), \
         stage p { out_view(t: |i, j, k| (i, j)), md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))), \
         inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)) }, \
         stage e { out_view(y: |i, j| (i, j)), md_hom[I, J](|c, v| (v * c).max(0.0), (CC, CC)), \
         inp_view(s: |i, j| (), t: |i, j| (i, j)) } }";
    let found = of(source);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].input, &found[0].dims), (1, &vec![0, 1]));
}

#[test]
fn what_is_not_an_epilogue_runs_as_a_stage() {
    // The intermediate read transposed.
    let transposed = "kernel k { inp(A: f32[N, K], B: f32[K, N]), out(y: f32[N, N]), tmp(t: f32[N, N]), \
         stage p { out_view(t: |i, j, k| (i, j)), md_hom[N, N, K](|a, b| a * b, (CC, CC, PW(+))), \
         inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)) }, \
         stage e { out_view(y: |i, j| (i, j)), md_hom[N, N](|v| v, (CC, CC)), inp_view(t: |i, j| (j, i)) } }";
    let reduces = "kernel k { inp(A: f32[I, K], B: f32[K, J]), out(y: f32[I]), tmp(t: f32[I, J]), \
         stage p { out_view(t: |i, j, k| (i, j)), md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))), \
         inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)) }, \
         stage e { out_view(y: |i, j| (i)), md_hom[I, J](|v| v, (CC, PW(+))), inp_view(t: |i, j| (i, j)) } }";
    // `t` is read by a third stage too: it must exist.
    let two_readers = "kernel k { inp(A: f32[I, K], B: f32[K, J]), out(y: f32[I, J], z: f32[I, J]), \
         tmp(t: f32[I, J]), \
         stage p { out_view(t: |i, j, k| (i, j)), md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))), \
         inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)) }, \
         stage e { out_view(y: |i, j| (i, j)), md_hom[I, J](|v| v, (CC, CC)), inp_view(t: |i, j| (i, j)) }, \
         stage f { out_view(z: |i, j| (i, j)), md_hom[I, J](|v| v, (CC, CC)), inp_view(t: |i, j| (i, j)) } }";
    // The producer maps (no PW dimension): not fused (yet).
    let map_of_map = "kernel k { inp(x: f32[N]), out(y: f32[N]), tmp(t: f32[N]), \
         stage p { out_view(t: |i| (i)), md_hom[N](|a| a * 2.0, (CC)), inp_view(x: |i| (i)) }, \
         stage e { out_view(y: |i| (i)), md_hom[N](|v| v + 1.0, (CC)), inp_view(t: |i| (i)) } }";
    // The epilogue reads what a stage between it and the producer computes.
    let late_input = "kernel k { inp(A: f32[I, K], B: f32[K, J]), out(y: f32[I, J]), \
         tmp(t: f32[I, J], m: f32[I]), \
         stage p { out_view(t: |i, j, k| (i, j)), md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))), \
         inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)) }, \
         stage r { out_view(m: |i, k| (i)), md_hom[I, K](|a| a, (CC, PW(max))), inp_view(A: |i, k| (i, k)) }, \
         stage e { out_view(y: |i, j| (i, j)), md_hom[I, J](|v, mx| v - mx, (CC, CC)), \
         inp_view(t: |i, j| (i, j), m: |i, j| (i)) } }";
    for source in [transposed, reduces, two_readers, map_of_map, late_input] {
        assert_eq!(of(source), [], "{source}");
    }
}

#[test]
fn an_epilogue_of_an_epilogue_runs_after_it() {
    // `e` fuses into `p`; `f` reads `e`'s intermediate and stays a stage.
    let source = "kernel k { inp(A: f32[I, K], B: f32[K, J]), out(y: f32[I, J]), \
         tmp(t: f32[I, J], u: f32[I, J]), \
         stage p { out_view(t: |i, j, k| (i, j)), md_hom[I, J, K](|a, b| a * b, (CC, CC, PW(+))), \
         inp_view(A: |i, j, k| (i, k), B: |i, j, k| (k, j)) }, \
         stage e { out_view(u: |i, j| (i, j)), md_hom[I, J](|v| v * 2.0, (CC, CC)), inp_view(t: |i, j| (i, j)) }, \
         stage f { out_view(y: |i, j| (i, j)), md_hom[I, J](|v| v.max(0.0), (CC, CC)), inp_view(u: |i, j| (i, j)) } }";
    let found = of(source);
    assert_eq!(found.len(), 1);
    assert_eq!((found[0].producer, found[0].stage), (0, 1));
}
