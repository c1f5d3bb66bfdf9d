//! Tests of the OpenCL runtime on a real device (PoCL on the CPU: `apt-get
//! install pocl-opencl-icd`). Run with `cargo test -p mdh-gpu --features opencl`.
#![cfg(feature = "opencl")]

use mdh_gpu::opencl::{Buffer, Device, Program};
use mdh_rt::Error;
use std::process::Command;
use std::sync::{Arc, OnceLock};

/// One device shared by the tests (they run in parallel on it, which also
/// exercises `Device: Sync`). Without one the device tests are skipped,
/// unless `MDH_REQUIRE_OPENCL` is set (scripts/test-all.sh sets it).
fn dev() -> Option<&'static Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| match Device::first() {
        Ok(d) => Some(d),
        Err(e) if std::env::var_os("MDH_REQUIRE_OPENCL").is_some() => {
            panic!("these tests need an OpenCL device (e.g. PoCL): {e}")
        }
        Err(e) => {
            eprintln!("skipping the OpenCL device tests: {e}");
            None
        }
    })
    .as_ref()
}

fn backend_msg(r: Result<impl std::fmt::Debug, Error>) -> String {
    match r {
        Err(Error::Backend(m)) => m,
        other => panic!("expected Err(Error::Backend), got {other:?}"),
    }
}

const VADD: &str = r#"
__kernel void vadd(__global const float* a, __global const float* b,
                   __global float* c, int n) {
    int i = get_global_id(0);
    if (i < n) c[i] = a[i] + b[i];
}
"#;

#[test]
fn device_info() {
    let Some(d) = dev() else { return };
    assert!(!d.name().is_empty());
    assert!(d.max_work_group_size() >= 1);
    assert!(d.local_mem_bytes() >= 1024);
    let names = Device::list().unwrap();
    assert!(
        names.iter().any(|n| n == d.name()),
        "{names:?} / {}",
        d.name()
    );
    let again = Device::by_index(0).unwrap();
    assert_eq!(again.name(), names[0]);
    let part = d
        .name()
        .split(": ")
        .nth(1)
        .unwrap_or(d.name())
        .to_uppercase();
    assert_eq!(Device::by_name(&part).unwrap().name(), d.name());
    assert!(backend_msg(Device::by_name("no such device, surely")).contains("no OpenCL device"));
    assert!(backend_msg(Device::by_index(names.len())).contains("no OpenCL device #"));
    let _ = format!("{d:?}");
}

#[test]
fn vector_add() {
    let Some(d) = dev() else { return };
    let n = 1000usize;
    let a: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let b: Vec<f32> = (0..n).map(|i| 0.5 * i as f32 + 1.0).collect();
    let ba = d.buffer_from(&a).unwrap();
    let bb = d.buffer_from(&b).unwrap();
    let bc = d.buffer::<f32>(n).unwrap();
    let p = d.program(VADD, "").unwrap();
    let took = p
        .kernel("vadd")
        .unwrap()
        .arg_buffer(&ba)
        .arg_buffer(&bb)
        .arg_buffer(&bc)
        .arg_scalar(n as i32)
        .run(&[1024], &[64])
        .unwrap();
    assert!(took.as_secs() < 60);
    let mut c = vec![0.0f32; n];
    d.read(&bc, &mut c).unwrap();
    for i in 0..n {
        assert_eq!(c[i], a[i] + b[i], "at {i}");
    }
    // The kernel objects are reused: a second launch with new data.
    let mut ba = ba;
    d.write(&mut ba, &vec![1.0f32; n]).unwrap();
    p.kernel("vadd")
        .unwrap()
        .arg_buffer(&ba)
        .arg_buffer(&bb)
        .arg_buffer(&bc)
        .arg_scalar(n as i32)
        .run(&[1000], &[])
        .unwrap();
    d.read(&bc, &mut c).unwrap();
    for i in 0..n {
        assert_eq!(c[i], 1.0 + b[i], "at {i}");
    }
}

const MIX: &str = r#"
__kernel void combine(__global const float* x, __global double* out, __local float* scratch,
                  float a, double b, char c, short d, int e, long f,
                  uchar g, ushort h, uint i, ulong j, uchar flag,
                  __global uchar* flags) {
    size_t lid = get_local_id(0);
    size_t grp = get_group_id(0);
    size_t lsz = get_local_size(0);
    scratch[lid] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = lsz / 2; s > 0; s /= 2) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        double ints = (double)c + d + e + f + g + h + i + j;
        out[grp] = (double)scratch[0] * a + b + (flag ? ints : -ints);
        flags[grp] = (uchar)(grp % 3 == 0 ? 7 : 0);
    }
}
"#;

#[test]
fn local_memory_and_scalar_types() {
    let Some(d) = dev() else { return };
    let (groups, lsz) = (5usize, 16usize);
    let x: Vec<f32> = (0..groups * lsz).map(|i| (i % 7) as f32).collect();
    let bx = d.buffer_from(&x).unwrap();
    let bout = d.buffer::<f64>(groups).unwrap();
    let bflags = d.buffer::<bool>(groups).unwrap();
    let p = d.program(MIX, "-cl-std=CL1.2").unwrap();
    let run = |flag: bool| {
        p.kernel("combine")
            .unwrap()
            .arg_buffer(&bx)
            .arg_buffer(&bout)
            .arg_local(lsz * std::mem::size_of::<f32>())
            .arg_scalar(2.0f32)
            .arg_scalar(0.25f64)
            .arg_scalar(-3i8)
            .arg_scalar(-300i16)
            .arg_scalar(70_000i32)
            .arg_scalar(-5_000_000_000i64)
            .arg_scalar(200u8)
            .arg_scalar(60_000u16)
            .arg_scalar(4_000_000_000u32)
            .arg_scalar(9_000_000_000u64)
            .arg_scalar(flag)
            .arg_buffer(&bflags)
            .run(&[groups * lsz], &[lsz])
            .unwrap()
    };
    let ints = -3.0 - 300.0 + 70_000.0 - 5_000_000_000.0
        + 200.0
        + 60_000.0
        + 4_000_000_000.0
        + 9_000_000_000.0;
    for flag in [true, false] {
        run(flag);
        let mut out = vec![0.0f64; groups];
        d.read(&bout, &mut out).unwrap();
        for (g, &o) in out.iter().enumerate() {
            let sum: f32 = x[g * lsz..(g + 1) * lsz].iter().sum();
            let want = sum as f64 * 2.0 + 0.25 + if flag { ints } else { -ints };
            assert_eq!(o, want, "group {g}, flag {flag}");
        }
    }
    // The kernel stored 7 (not 1) for `true`: reading bools maps it to true.
    let mut flags = vec![true; groups];
    d.read(&bflags, &mut flags).unwrap();
    assert_eq!(flags, [true, false, false, true, false]);
}

#[test]
fn program_cache() {
    let Some(d) = dev() else { return };
    let p1 = d.program(VADD, "").unwrap();
    let p2 = d.program(VADD, "").unwrap();
    assert!(Arc::ptr_eq(&p1, &p2));
    let p3 = d.program(VADD, "-cl-fast-relaxed-math").unwrap();
    assert!(!Arc::ptr_eq(&p1, &p3));
    assert!(Arc::ptr_eq(
        &p3,
        &d.program(VADD, "-cl-fast-relaxed-math").unwrap()
    ));
    // Concurrent requests for one new program all get the same build.
    let src = format!("{VADD}\n// cache race\n");
    let progs: Vec<Arc<Program>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| d.program(&src, "").unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(progs.iter().all(|p| Arc::ptr_eq(p, &progs[0])));
    // After clearing, the program is built anew; the old one stays usable.
    d.clear_program_cache();
    let p4 = d.program(VADD, "").unwrap();
    assert!(!Arc::ptr_eq(&p1, &p4));
    assert!(p1.kernel("vadd").is_ok());
}

#[test]
fn build_error_contains_log() {
    let Some(d) = dev() else { return };
    let bad = "__kernel void broken(__global float* x) { x[0] = undeclared_thing + ; }";
    let msg = backend_msg(d.program(bad, ""));
    assert!(msg.contains("build log"), "{msg}");
    assert!(msg.contains("undeclared_thing"), "{msg}");
    // A failed build is not cached as a success, and fails again.
    assert!(d.program(bad, "").is_err());
    assert!(backend_msg(d.program("   ", "")).contains("empty"));
    assert!(backend_msg(d.program(VADD, "-D X\0")).contains("NUL"));
    assert!(backend_msg(d.program(VADD, "-no-such-option-at-all")).contains("options"));
}

#[test]
fn argument_and_launch_errors() {
    let Some(d) = dev() else { return };
    let p = d.program(VADD, "").unwrap();
    let f = d.buffer::<f32>(64).unwrap();
    let g = d.buffer::<f64>(64).unwrap();
    let k = || p.kernel("vadd").unwrap();

    assert!(backend_msg(p.kernel("nope")).contains("no kernel `nope`"));
    assert!(backend_msg(p.kernel("va\0dd")).contains("NUL"));
    // Too few, too many.
    let m = backend_msg(k().arg_buffer(&f).run(&[64], &[64]));
    assert!(m.contains("takes 4 arguments, but 1 were passed"), "{m}");
    let m = backend_msg(
        k().arg_buffer(&f)
            .arg_buffer(&f)
            .arg_buffer(&f)
            .arg_scalar(1i32)
            .arg_scalar(1i32)
            .run(&[64], &[64]),
    );
    assert!(m.contains("more were passed"), "{m}");
    // A buffer of the wrong element size, a scalar where a buffer goes, a
    // scalar of the wrong size, local memory where a buffer goes.
    let m = backend_msg(k().arg_buffer(&g).run(&[64], &[64]));
    assert!(m.contains("argument #0") && m.contains("8-byte"), "{m}");
    let m = backend_msg(k().arg_scalar(1u64).run(&[64], &[64]));
    assert!(
        m.contains("argument #0") && m.contains("a scalar was passed"),
        "{m}"
    );
    let m = backend_msg(
        k().arg_buffer(&f)
            .arg_buffer(&f)
            .arg_buffer(&f)
            .arg_scalar(1i64)
            .run(&[64], &[64]),
    );
    assert!(m.contains("argument #3"), "{m}");
    let m = backend_msg(k().arg_local(16).run(&[64], &[64]));
    assert!(m.contains("local memory was passed"), "{m}");
    // Bad NDRanges.
    let full = || {
        k().arg_buffer(&f)
            .arg_buffer(&f)
            .arg_buffer(&f)
            .arg_scalar(64i32)
    };
    assert!(backend_msg(full().run(&[], &[])).contains("dimensions"));
    assert!(backend_msg(full().run(&[64, 1, 1, 1], &[1, 1, 1, 1])).contains("dimensions"));
    assert!(backend_msg(full().run(&[64], &[1, 1])).contains("dimensions"));
    assert!(backend_msg(full().run(&[65], &[64])).contains("multiple"));
    assert!(backend_msg(full().run(&[64], &[0])).contains("multiple"));
    let too_big = d.max_work_group_size() * 2;
    let m = backend_msg(full().run(&[too_big], &[too_big]));
    assert!(m.contains("work-items"), "{m}");
    // An empty NDRange runs nothing; a good launch still works afterwards.
    assert_eq!(full().run(&[0], &[1]).unwrap(), std::time::Duration::ZERO);
    full().run(&[64], &[16]).unwrap();
    assert!(p.work_group_size("vadd").unwrap() >= 1);
    // A launch dropped before it runs gives its kernel back.
    drop(k().arg_buffer(&f));
    full().run(&[64], &[64]).unwrap();
}

#[test]
fn buffers() {
    let Some(d) = dev() else { return };
    // Empty data and length 0 allocate one element.
    let e = d.buffer_from::<i32>(&[]).unwrap();
    assert_eq!(d.buffer_len(&e).unwrap(), 1);
    let mut nothing: [i32; 0] = [];
    d.read(&e, &mut nothing).unwrap();
    let z: Buffer<u64> = d.buffer(0).unwrap();
    let mut one = [5u64];
    d.read(&z, &mut one).unwrap();
    assert_eq!(one, [0]);
    // Zero-filled, partial reads and writes, length checks.
    let mut b = d.buffer::<i16>(10).unwrap();
    let mut out = [1i16; 10];
    d.read(&b, &mut out).unwrap();
    assert_eq!(out, [0; 10]);
    d.write(&mut b, &[1, 2, 3]).unwrap();
    let mut first = [0i16; 4];
    d.read(&b, &mut first).unwrap();
    assert_eq!(first, [1, 2, 3, 0]);
    assert!(backend_msg(d.write(&mut b, &[0i16; 11])).contains("has 10"));
    assert!(backend_msg(d.read(&b, &mut [0i16; 11])).contains("has 10"));
    let bools = d.buffer_from(&[true, false, true]).unwrap();
    let mut back = [false; 3];
    d.read(&bools, &mut back).unwrap();
    assert_eq!(back, [true, false, true]);
    // Allocations that overflow or exceed the device are errors.
    assert!(backend_msg(d.buffer::<f64>(usize::MAX / 4)).contains("overflows"));
    let huge = (d.max_alloc_bytes() as usize / 8 + 1) * 2;
    let m = backend_msg(d.buffer::<f64>(huge));
    assert!(m.contains("cannot allocate"), "{m}");
}

#[test]
fn launches_from_many_threads() {
    let Some(d) = dev() else { return };
    let p = d.program(VADD, "").unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let p = &p;
            s.spawn(move || {
                for round in 0..10 {
                    let n = 100 + t * 37 + round;
                    let a: Vec<f32> = (0..n).map(|i| (i * t) as f32).collect();
                    let b = vec![round as f32; n];
                    let (ba, bb) = (d.buffer_from(&a).unwrap(), d.buffer_from(&b).unwrap());
                    let bc = d.buffer::<f32>(n).unwrap();
                    let global = n.div_ceil(32) * 32;
                    p.kernel("vadd")
                        .unwrap()
                        .arg_buffer(&ba)
                        .arg_buffer(&bb)
                        .arg_buffer(&bc)
                        .arg_scalar(n as i32)
                        .run(&[global], &[32])
                        .unwrap();
                    let mut c = vec![0.0; n];
                    d.read(&bc, &mut c).unwrap();
                    assert!(c.iter().enumerate().all(|(i, &v)| v == a[i] + b[i]));
                }
            });
        }
    });
}

#[test]
fn two_dimensional_launch() {
    let Some(d) = dev() else { return };
    let src = r#"
    __kernel void idx(__global uint* out, uint w) {
        uint x = get_global_id(0), y = get_global_id(1);
        out[y * w + x] = y * 1000 + x;
    }"#;
    let p = d.program(src, "").unwrap();
    let (w, h) = (12usize, 6usize);
    let out = d.buffer::<u32>(w * h).unwrap();
    p.kernel("idx")
        .unwrap()
        .arg_buffer(&out)
        .arg_scalar(w as u32)
        .run(&[w, h], &[4, 3])
        .unwrap();
    let mut v = vec![0u32; w * h];
    d.read(&out, &mut v).unwrap();
    for y in 0..h {
        for x in 0..w {
            assert_eq!(v[y * w + x], (y * 1000 + x) as u32);
        }
    }
}

#[test]
fn device_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Device>();
    check::<Program>();
    check::<Buffer<f32>>();
}

/// Run as a child process by [`no_icd_gives_err`] with the ICDs hidden.
#[test]
fn no_icd_child() {
    if std::env::var_os("MDH_OPENCL_NO_ICD_CHILD").is_none() {
        return;
    }
    let m = backend_msg(Device::first());
    assert!(
        m.contains("no OpenCL platform found") || m.contains("could not be loaded"),
        "{m}"
    );
    assert!(m.contains("pocl-opencl-icd"), "{m}");
    assert!(Device::list().is_err());
    assert!(Device::by_index(0).is_err());
    assert!(Device::by_name("pocl").is_err());
    println!("NO-ICD-CHILD-OK: {m}");
}

#[test]
fn no_icd_gives_err() {
    // ocl-icd reads the ICD list from OCL_ICD_VENDORS (a folder or one .icd
    // file) instead of /etc/OpenCL/vendors; OCL_ICD_FILENAMES would add
    // libraries, so it is emptied. The library is loaded once per process,
    // hence a child process of this test binary.
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", "no_icd_child", "--nocapture", "--test-threads=1"])
        .env("MDH_OPENCL_NO_ICD_CHILD", "1")
        .env("OCL_ICD_VENDORS", "/nonexistent")
        .env("OCL_ICD_FILENAMES", "")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(
        text.contains("NO-ICD-CHILD-OK"),
        "child did not run:\n{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
}

#[test]
fn no_library_gives_err() {
    // Hides the OpenCL library itself (not only the ICDs): in a private mount
    // namespace (`unshare -m`, which needs root), /dev/null is bound over
    // every libOpenCL.so* file, so dlopen fails. Skipped where that is not
    // permitted.
    let exe = std::env::current_exe().unwrap();
    let script = r#"for f in /usr/lib/*/libOpenCL.so* /usr/lib64/libOpenCL.so* /usr/lib/libOpenCL.so* /usr/local/lib/libOpenCL.so*; do
        if [ -f "$f" ] && [ ! -L "$f" ]; then mount --bind /dev/null "$f" 2>/dev/null || exit 99; fi
    done
    exec "$0" --exact no_icd_child --nocapture --test-threads=1"#;
    let out = match Command::new("unshare")
        .args(["-m", "sh", "-c", script])
        .arg(&exe)
        .env("MDH_OPENCL_NO_ICD_CHILD", "1")
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: cannot run unshare: {e}");
            return;
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !text.contains("running 1 test") {
        eprintln!("skipped: cannot hide the OpenCL library here:\n{text}");
        return;
    }
    assert!(out.status.success(), "child failed:\n{text}");
    assert!(text.contains("could not be loaded"), "{text}");
    assert!(!text.contains("panicked"), "{text}");
}
