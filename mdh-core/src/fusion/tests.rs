use super::{epilogues, Epilogue, Fusion, GroupBuffer, Named, RowGroup, Rows};
use crate::spec::BufRef;
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

/// What fuses in a kernel of stages given as source.
fn fusion_of(source: &str) -> Fusion {
    match compile_program_str(source) {
        Ok(Program::Staged(k)) => Fusion::of(&k),
        Ok(Program::Single(_)) => panic!("not a kernel of stages"),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn softmax_fuses_along_its_rows() {
    let f = fusion_of(crate::fixtures::SOFTMAX);
    let (x, y) = (BufRef::Input(0), BufRef::Output(0));
    let (m, e, s) = (BufRef::Tmp(0), BufRef::Tmp(1), BufRef::Tmp(2));
    // Each buffer named first by the stage that reads (x) or computes it.
    let named = |stage: usize, output: bool| Named {
        stage,
        output,
        at: 0,
    };
    let buffers = [
        (x, 0, false),
        (m, 0, true),
        (e, 1, true),
        (s, 2, true),
        (y, 3, true),
    ]
    .map(|(buf, stage, output)| GroupBuffer {
        buf,
        rows: Rows::Sliced,
        named: named(stage, output),
    })
    .to_vec();
    let want = RowGroup {
        stages: 0..4,
        rows: 0,
        buffers,
        local: vec![0, 1, 2],
    };
    assert_eq!(
        f,
        Fusion {
            epilogues: vec![],
            rows: vec![want]
        }
    );
}

#[test]
fn buffers_without_rows_are_read_whole() {
    // Layer norm's scale and shift, read along the columns.
    let source = "kernel ln { inp(x: f32[R, C], g: f32[C], b: f32[C]), out(y: f32[R, C]), tmp(mu: f32[R]), \
         stage mean { out_view(mu: |r, c| (r)), md_hom[R, C](|a| a / (C as f32), (CC, PW(+))), inp_view(x: |r, c| (r, c)) }, \
         stage norm { out_view(y: |r, c| (r, c)), md_hom[R, C](|a, m, s, t| (a - m) * s + t, (CC, CC)), \
         inp_view(x: |r, c| (r, c), mu: |r, c| (r), g: |r, c| (c), b: |r, c| (c)) } }";
    let f = fusion_of(source);
    let [g] = &f.rows[..] else { panic!("{f:?}") };
    assert_eq!(g.stages, 0..2);
    let whole: Vec<BufRef> = (g.buffers.iter())
        .filter(|x| x.rows == Rows::Whole)
        .map(|x| x.buf)
        .collect();
    assert_eq!(whole, [BufRef::Input(1), BufRef::Input(2)]);
    assert_eq!(g.local, [0]);
}

#[test]
fn what_does_not_share_its_rows_runs_as_a_stage() {
    let stage2 = |view: &str, body: &str| {
        format!(
            "kernel k {{ inp(x: f32[I, J]), out(y: f32[I, J]), tmp(m: f32[I]), \
             stage a {{ out_view(m: |i, j| (i)), md_hom[I, J](|v| v, (CC, PW(max))), inp_view(x: |i, j| (i, j)) }}, \
             stage b {{ out_view(y: |i, j| (i, j)), md_hom[I, J]({body}, (CC, CC)), \
             inp_view(x: |i, j| {view}, m: |i, j| (i)) }} }}"
        )
    };
    // The rows as a check of the stage with its own code (the control).
    assert_eq!(fusion_of(&stage2("(i, j)", "|v, w| v - w")).rows.len(), 1);
    // The scalar function reads the rows' size: a tile would change it.
    assert_eq!(
        fusion_of(&stage2("(i, j)", "|v, w| v - w + (I as f32)")).rows,
        []
    );
    // Or its index.
    assert_eq!(
        fusion_of(&stage2("(i, j)", "|[p, q], v, w| v - w + (p as f32)")).rows,
        []
    );
    // A neighbour row: a tile does not hold it.
    let shifted = "kernel k { inp(z: f32[I, J], x: f32[I + 1, J]), out(y: f32[I, J]), tmp(m: f32[I]), \
         stage a { out_view(m: |i, j| (i)), md_hom[I, J](|v| v, (CC, PW(max))), inp_view(z: |i, j| (i, j)) }, \
         stage b { out_view(y: |i, j| (i, j)), md_hom[I, J](|v, w| v - w, (CC, CC)), \
         inp_view(x: |i, j| (i + 1, j), m: |i, j| (i)) } }";
    assert_eq!(fusion_of(shifted).rows, []);
    // A square buffer of one size: a tile's rows would change its columns
    // (rows and columns need their own size names to fuse).
    let square = "kernel k { inp(x: f32[N, N]), out(y: f32[N, N]), tmp(m: f32[N]), \
         stage a { out_view(m: |i, j| (i)), md_hom[N, N](|v| v, (CC, PW(max))), inp_view(x: |i, j| (i, j)) }, \
         stage b { out_view(y: |i, j| (i, j)), md_hom[N, N](|v, w| v - w, (CC, CC)), \
         inp_view(x: |i, j| (i, j), m: |i, j| (i)) } }";
    assert_eq!(fusion_of(square).rows, []);
    // Rows along a column-major buffer: not a tile's contiguous rows.
    let transposed = "kernel k { inp(x: f32[J, I]), out(y: f32[I]), tmp(m: f32[I]), \
         stage a { out_view(m: |i, j| (i)), md_hom[I, J](|v| v, (CC, PW(max))), inp_view(x: |i, j| (j, i)) }, \
         stage b { out_view(y: |i| (i)), md_hom[I](|w| w * 2.0, (CC)), inp_view(m: |i| (i)) } }";
    assert_eq!(fusion_of(transposed).rows, []);
    // A product's other operand, read whole by every tile: not fused; the
    // epilogue after it fuses into its stores instead.
    let f = fusion_of(crate::fixtures::DENSE);
    assert_eq!((f.rows.len(), f.epilogues.len()), (0, 1));
}

#[test]
fn an_intermediate_read_after_the_group_is_whole() {
    // `m` is read by `c`, which reads `x` transposed and so stays out.
    let source = "kernel k { inp(x: f32[N, M], u: f32[M, N]), out(y: f32[N, M], z: f32[M, N]), tmp(m: f32[N]), \
         stage a { out_view(m: |i, j| (i)), md_hom[N, M](|v| v, (CC, PW(max))), inp_view(x: |i, j| (i, j)) }, \
         stage b { out_view(y: |i, j| (i, j)), md_hom[N, M](|v, w| v - w, (CC, CC)), inp_view(x: |i, j| (i, j), m: |i, j| (i)) }, \
         stage c { out_view(z: |p, q| (p, q)), md_hom[M, N](|v, w| v - w, (CC, CC)), inp_view(u: |p, q| (p, q), m: |p, q| (q)) } }";
    let f = fusion_of(source);
    let [g] = &f.rows[..] else { panic!("{f:?}") };
    assert_eq!((g.stages.clone(), g.local.clone()), (0..2, vec![]));
}
