//! Links the peers of the benchmark: OpenBLAS (Debian `libopenblas-dev`) for
//! `cblas_*`, oneDNN (Debian `libdnnl-dev`) for its primitives, and builds
//! the `c-openmp` peers (`c/peers.c`) with the system's C compiler and
//! OpenMP (gcc and its libgomp on Debian). Without a C compiler that takes
//! `-fopenmp` the benchmark still builds: the cfg `c_openmp` stays off and
//! the c-openmp rows are left out, with a note saying why.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=c/peers.c");
    println!("cargo::rustc-check-cfg=cfg(c_openmp)");
    c_openmp();
    // A hint instead of a bare linker error when the packages are missing.
    for (lib, package) in [
        ("libopenblas.so", "libopenblas-dev"),
        ("libdnnl.so", "libdnnl-dev"),
    ] {
        let dirs = [
            "/usr/lib/x86_64-linux-gnu",
            "/usr/lib/aarch64-linux-gnu",
            "/usr/lib64",
            "/usr/lib",
            "/usr/local/lib",
        ];
        if !dirs
            .iter()
            .any(|d| std::path::Path::new(d).join(lib).exists())
        {
            println!("cargo:warning=mdh-bench links {lib}: install it with `apt-get install {package}` (Debian/Ubuntu)");
        }
    }
    println!("cargo:rustc-link-lib=openblas");
    println!("cargo:rustc-link-lib=dnnl");
}

/// Builds `c/peers.c` as an HPC user would (`-O3 -march=native -fopenmp`)
/// and links the compiler's OpenMP runtime; on failure says why, once at
/// build time (a cargo warning) and in every bench run (see `omp.rs`).
fn c_openmp() {
    let mut build = cc::Build::new();
    build
        .file("c/peers.c")
        .opt_level(3)
        .flag_if_supported("-march=native")
        .flag("-fopenmp")
        .warnings(true);
    let clang = build.get_compiler().is_like_clang();
    match build.try_compile("mdh_bench_peers") {
        Ok(()) => {
            println!("cargo:rustc-cfg=c_openmp");
            // gcc's OpenMP runtime is libgomp, clang's libomp.
            println!(
                "cargo:rustc-link-lib={}",
                if clang { "omp" } else { "gomp" }
            );
        }
        Err(e) => {
            let why = e.to_string().replace('\n', " ");
            println!("cargo:warning=mdh-bench: the c-openmp peers are left out: a C compiler with OpenMP could not build c/peers.c ({why}); install gcc (Debian: `apt-get install gcc`, libgomp comes with it)");
            println!("cargo:rustc-env=MDH_BENCH_NO_OPENMP={why}");
        }
    }
}
