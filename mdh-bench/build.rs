//! Links the peers of the benchmark: OpenBLAS (Debian `libopenblas-dev`) for
//! `cblas_*`, oneDNN (Debian `libdnnl-dev`) for the convolution.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
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
