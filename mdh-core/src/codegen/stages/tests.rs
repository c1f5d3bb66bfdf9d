use crate::{expand, fixtures};

/// The text of the kernel of stages' `pub fn NAME (` … up to the next
/// `pub fn` in an expansion: the last one before `cpu_unfused` (the
/// stages' and the fused modules' functions come first).
fn function<'a>(expansion: &'a str, name: &str) -> &'a str {
    let unfused = "pub fn cpu_unfused (";
    let last = expansion.find(unfused).expect("no `cpu_unfused`") + unfused.len();
    let start = (expansion[..last].rfind(&format!("pub fn {name} (")))
        .unwrap_or_else(|| panic!("no `{name}` in the expansion"));
    let rest = &expansion[start + 1..];
    let end = rest.find("pub fn ").map_or(rest.len(), |e| e + 1);
    &expansion[start..start + end]
}

#[test]
fn a_fused_epilogue_has_no_intermediate_and_no_pass_of_its_own() {
    let tokens: proc_macro2::TokenStream = fixtures::DENSE.parse().unwrap();
    let expansion = expand(tokens).to_string();
    let cpu = function(&expansion, "cpu");
    // The product's fused module, writing `y`; no `t`, no epilogue stage.
    assert!(cpu.contains("fused :: dense_product :: cpu"), "{cpu}");
    assert!(!cpu.contains("let mut t"), "{cpu}");
    assert!(!cpu.contains("stages :: dense_epilogue :: cpu"), "{cpu}");
    assert!(!cpu.contains("stages :: dense_product :: cpu"), "{cpu}");
    // The unfused chain allocates `t` and runs both stages.
    let unfused = function(&expansion, "cpu_unfused");
    assert!(unfused.contains("let mut t"), "{unfused}");
    assert!(
        unfused.contains("stages :: dense_epilogue :: cpu"),
        "{unfused}"
    );
    // The fused body applies the epilogue where results become final.
    assert!(
        expansion.contains("let __last : bool"),
        "no `__last` in the fused body"
    );
    // On the GPUs (the kernel's backend modules come after the stages'
    // and the fused ones): the product's fused `launch` into `y`, no
    // device `t`, no epilogue stage.
    for b in ["opencl", "cuda"] {
        let gpu = &expansion[expansion.rfind(&format!("pub mod {b}")).unwrap()..];
        let gpu = &gpu[..gpu[1..].find("pub mod ").map_or(gpu.len(), |e| e + 1)];
        assert!(
            gpu.contains(&format!("fused :: dense_product :: {b} :: launch")),
            "{gpu}"
        );
        assert!(!gpu.contains("__d_t"), "{gpu}");
        assert!(
            !gpu.contains(&format!("dense_epilogue :: {b} :: launch")),
            "{gpu}"
        );
    }
    // Under MPI too (the kernel's `mpi::run` comes last): the product's
    // fused `mpi::run`, which maps each rank's combined part of `y`.
    let mpi = &expansion[expansion.rfind("pub fn run < C : Communicator >").unwrap()..];
    assert!(
        mpi.contains("fused :: dense_product :: mpi :: run"),
        "{mpi}"
    );
    assert!(!mpi.contains("let mut t"), "{mpi}");
    assert!(!mpi.contains("dense_epilogue :: mpi :: run"), "{mpi}");
    assert!(
        expansion.contains("dense_product :: mpi :: __run_then"),
        "the fused module's `mpi::run` does not run the stage's own"
    );
}

#[test]
fn stages_that_share_their_rows_run_tile_by_tile() {
    let tokens: proc_macro2::TokenStream = fixtures::SOFTMAX.parse().unwrap();
    let expansion = expand(tokens).to_string();
    let cpu = function(&expansion, "cpu");
    // The four stages inside one parallel loop over tiles of rows, each
    // at the tile's rows; the intermediates a tile's own.
    let tiles = cpu.find("for_each_tile").expect("no tiles");
    let inside = &cpu[tiles..];
    for stage in ["rowmax", "exps", "rowsum", "normalize"] {
        let call = format!("stages :: softmax_{stage} :: cpu");
        assert!(inside.contains(&call), "{cpu}");
    }
    assert!(inside.contains("I : (__hi - __lo)"), "{cpu}");
    for tmp in ["m", "e", "s"] {
        assert!(inside.contains(&format!("let mut {tmp} ")), "{cpu}");
    }
    // Whole intermediates only where the tiles cannot run (a length that
    // does not match, an empty row): the unfused fallback.
    let fallback = cpu.find("if !").expect("no fallback");
    assert!(!cpu[..fallback].contains("let mut m"), "{cpu}");
    // The unfused chain: no tiles.
    let unfused = function(&expansion, "cpu_unfused");
    assert!(!unfused.contains("for_each_tile"), "{unfused}");
    assert!(unfused.contains("let mut m"), "{unfused}");
}
