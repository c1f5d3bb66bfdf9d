use super::*;
use crate::fixtures::matmul;

/// The key of an entry without a machine description.
fn key<'a>(backend: &'a str, device: &'a str, sizes: &'a [usize]) -> EntryKey<'a> {
    EntryKey {
        backend,
        device,
        machine: None,
        sizes,
    }
}

fn read(text: &str) -> Result<Entries, ConfigError> {
    entries(&matmul(), Path::new("configs/matmul.yaml"), text)
}

fn cpu(text: &str) -> Result<Vec<CpuEntry>, ConfigError> {
    read(text).map(|e| e.cpu)
}

#[test]
fn reads_plans_and_sizes() {
    let e = cpu(
            "kernel: matmul\nentries:\n  - backend: cpu\n    sizes: {I: 64, J: 32, K: 16}\n    cpu:\n      reg: [4, 16, 1]\n      order: [1, 0, 2]\n  - backend: opencl\n",
        )
        .unwrap();
    assert_eq!(e.len(), 1);
    assert_eq!(
        e[0].sizes,
        Some(vec![64, 16, 32]),
        "in size-parameter order I, K, J"
    );
    assert_eq!(e[0].plan.reg, vec![4, 16, 1]);
    assert_eq!(e[0].plan.order, vec![1, 0, 2]);
    assert_eq!(e[0].plan.l1, CpuPlan::default_for(&matmul()).l1);
}

fn tuned() -> CpuPlan {
    CpuPlan {
        nod: vec![2, 1, 1],
        cor: vec![2, 0, 1],
        l2: vec![96, 512, 128],
        l1: vec![48, 64, 128],
        reg: vec![6, 32, 1],
        order: vec![1, 0, 2],
        pack: vec![vec![2, 0], vec![]],
        stream: true,
        exact: true,
    }
}

#[test]
fn written_entries_read_back_as_the_same_plan() {
    let k = matmul();
    let entry = cpu_entry_yaml(
        &k,
        "Xeon \"2\" \\ cores",
        None,
        Some(&[64, 16, 32]),
        &tuned(),
        &[
            ("evaluations", "12".into()),
            ("date", yaml_string("2026-01-01")),
        ],
    );
    let path = Path::new("configs/matmul.yaml");
    let text = merge_entry(&k, path, None, key("cpu", "x", &[64, 16, 32]), &entry).unwrap();
    let e = entries(&k, path, &text).unwrap().cpu;
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].plan, tuned());
    assert_eq!(e[0].device, "Xeon \"2\" \\ cores");
    assert_eq!(e[0].sizes, Some(vec![64, 16, 32]));
}

#[test]
fn machine_descriptions_read_back_and_key_the_entry() {
    let k = matmul();
    let path = Path::new("configs/matmul.yaml");
    let m = mdh_rt::machine::ZEN3;
    let sizes: &[usize] = &[64, 16, 32];
    let entry = |m: &Machine| {
        cpu_entry_yaml(
            &k,
            "AMD EPYC",
            Some(m),
            Some(sizes),
            &tuned(),
            &[("machine", machine_yaml(m))],
        )
    };
    let written = entry(&m);
    assert!(
        written.contains("    machine: { isa: avx2, cores: 2, l1d: 32K, l2: 512K, l3: 32M }\n"),
        "{written}"
    );
    let at = EntryKey {
        backend: "cpu",
        device: "AMD EPYC",
        machine: Some(&m),
        sizes,
    };
    let text = merge_entry(&k, path, None, at, &written).unwrap();
    let e = entries(&k, path, &text).unwrap().cpu;
    assert_eq!(e.len(), 1);
    assert_eq!((e[0].machine, e[0].line), (Some(m), 3), "{text}");
    // The same machine again: replaced; another machine of the same
    // model name: an entry beside it.
    let again = merge_entry(&k, path, Some(&text), at, &written).unwrap();
    assert_eq!(entries(&k, path, &again).unwrap().cpu.len(), 1);
    let other = Machine {
        l2: Some(1 << 20),
        ..m
    };
    let at_other = EntryKey {
        machine: Some(&other),
        ..at
    };
    let two = merge_entry(&k, path, Some(&again), at_other, &entry(&other)).unwrap();
    let e = entries(&k, path, &two).unwrap().cpu;
    assert_eq!(
        e.iter().map(|e| e.machine).collect::<Vec<_>>(),
        [Some(m), Some(other)]
    );
    // Bytes or any unit, any case; caches may be unknown.
    let e = cpu("kernel: matmul\nentries:\n  - backend: cpu\n    machine: {isa: AVX512, cores: 4, l1d: 49152, l2: 2048KiB}\n").unwrap();
    let read = Machine {
        isa: Isa::Avx512,
        cores: 4,
        l1d: Some(48 << 10),
        l2: Some(2 << 20),
        l3: None,
    };
    assert_eq!(e[0].machine, Some(read));
    assert_eq!(
        machine_yaml(&read),
        "{ isa: avx512, cores: 4, l1d: 48K, l2: 2M }"
    );
}

#[test]
fn machine_errors_say_how_to_fix_them() {
    let err = |m: &str| {
        cpu(&format!(
            "kernel: matmul\nentries:\n  - backend: cpu\n    machine: {m}\n"
        ))
        .unwrap_err()
        .0
    };
    let e = err("{isa: avx3, cores: 2}");
    assert!(e.starts_with("configs/matmul.yaml:4:20: unknown instruction set `avx3`; use one of avx512, avx2, baseline"), "{e}");
    let e = err("{isa: avx2, cores: 0}");
    assert!(
        e.starts_with("configs/matmul.yaml:4:") && e.contains("`cores: 0`"),
        "{e}"
    );
    let e = err("{isa: avx2, cores: 2, l2: 512Q}");
    assert!(
        e.contains("`l2: 512Q` is not a cache size; write bytes"),
        "{e}"
    );
    let e = err("{isa: avx2, cores: 2, l3: 0}");
    assert!(e.contains("`l3: 0` is not a cache size"), "{e}");
    let e = err("{isa: avx2}");
    assert!(
        e.contains("configs/matmul.yaml:4:") && e.contains("missing field `cores`"),
        "{e}"
    );
    let e = err("{isa: avx2, cores: 2, l4: 1M}");
    assert!(e.contains("unknown field `l4`"), "{e}");
    let e =
        read("kernel: matmul\nentries:\n  - backend: cuda\n    machine: {isa: avx2, cores: 2}\n")
            .unwrap_err();
    assert!(
        e.0.contains(":4:") && e.0.contains("`machine:` describes a CPU"),
        "{e}"
    );
}

#[test]
fn merging_replaces_the_same_entry_and_keeps_the_rest() {
    let k = matmul();
    let path = Path::new("configs/matmul.yaml");
    let old = "# hand-written\nkernel: matmul\nentries:\n  # first\n  - backend: cpu\n    sizes: {I: 64, J: 32, K: 16}\n    cpu: { reg: [4, 16, 1] }\n\n  # second: GPU\n  - backend: opencl\n  # third\n  - backend: cpu\n    device: \"*\"\n    sizes: {I: 8, J: 8, K: 8}\n";
    let entry = cpu_entry_yaml(&k, "*", None, Some(&[64, 16, 32]), &tuned(), &[]);
    let new = merge_entry(&k, path, Some(old), key("cpu", "*", &[64, 16, 32]), &entry).unwrap();
    for kept in [
        "# hand-written",
        "# first",
        "# second: GPU",
        "backend: opencl",
        "# third",
        "{I: 8, J: 8, K: 8}",
    ] {
        assert!(new.contains(kept), "lost `{kept}`:\n{new}");
    }
    assert!(!new.contains("reg: [4, 16, 1]"), "{new}");
    let e = entries(&k, path, &new).unwrap().cpu;
    assert_eq!(e.len(), 2);
    assert_eq!(e[0].plan, tuned());
    // Other sizes: appended.
    let other = cpu_entry_yaml(&k, "*", None, Some(&[1, 2, 3]), &tuned(), &[]);
    let more = merge_entry(&k, path, Some(&new), key("cpu", "*", &[1, 2, 3]), &other).unwrap();
    assert_eq!(entries(&k, path, &more).unwrap().cpu.len(), 3);
    // An empty list becomes a block list.
    let empty = merge_entry(
        &k,
        path,
        Some("kernel: matmul\nentries: []\n"),
        key("cpu", "*", &[1, 2, 3]),
        &other,
    )
    .unwrap();
    assert_eq!(entries(&k, path, &empty).unwrap().cpu.len(), 1);
    // A broken file is reported, not overwritten.
    assert!(merge_entry(
        &k,
        path,
        Some("kernel: other\n"),
        key("cpu", "*", &[1, 2, 3]),
        &other
    )
    .is_err());
}

#[test]
fn gpu_entries_merge_per_backend_and_read_back() {
    let k = matmul();
    let path = Path::new("configs/matmul.yaml");
    let plan = GpuPlan {
        groups: vec![0, 0, 2],
        items: vec![4, 32, 2],
        tile: vec![8, 64, 128],
        local: vec![true, false],
        blocked: true,
        vector: vec![4, 2],
        transpose: vec![true, false],
        pad: vec![4, 0],
        stages: 2,
        ..GpuPlan::base(3, 2)
    };
    let old = "kernel: matmul\nentries:\n  # hand-written\n  - backend: cpu\n    sizes: {I: 64, J: 32, K: 16}\n";
    let entry = |b| gpu_entry_yaml(&k, b, "H100", None, Some(&[64, 16, 32]), &plan, &[]);
    let one = merge_entry(
        &k,
        path,
        Some(old),
        key("cuda", "H100", &[64, 16, 32]),
        &entry("cuda"),
    )
    .unwrap();
    let two = merge_entry(
        &k,
        path,
        Some(&one),
        key("opencl", "H100", &[64, 16, 32]),
        &entry("opencl"),
    )
    .unwrap();
    // The same backend, device and sizes again: replaced.
    let three = merge_entry(
        &k,
        path,
        Some(&two),
        key("cuda", "H100", &[64, 16, 32]),
        &entry("cuda"),
    )
    .unwrap();
    assert!(three.contains("# hand-written"), "{three}");
    let e = entries(&k, path, &three).unwrap();
    assert_eq!(
        (
            e.cpu.len(),
            e.gpu(Backend::Cuda).len(),
            e.gpu(Backend::OpenCl).len()
        ),
        (1, 1, 1),
        "{three}"
    );
    assert_eq!(e.gpu(Backend::Cuda)[0].plan, plan);
    assert_eq!(e.gpu(Backend::OpenCl)[0].device, "H100");
    assert_eq!(e.gpu(Backend::Cuda)[0].sizes, Some(vec![64, 16, 32]));
}

#[test]
fn errors_name_file_line_and_column() {
    let e = cpu("kernel: matmul\nentries:\n  - backend: cpu\n    cpu:\n      reg: [4, x, 1]\n")
        .unwrap_err();
    assert!(e.0.starts_with("configs/matmul.yaml:5:"), "{e}");
    let e = cpu("kernel: matmul\nentries:\n  - backend: cpu\n    cpu:\n      reg: [4, 16]\n")
        .unwrap_err();
    assert!(e.0.starts_with("configs/matmul.yaml:5:12:"), "{e}");
    assert!(e.0.contains("`reg` has 2 entries"), "{e}");
    let e = cpu("kernel: matmul\nentries:\n  - backend: gpu\n").unwrap_err();
    assert!(
        e.0.contains("3:") && e.0.contains("unknown backend `gpu`"),
        "{e}"
    );
    let e = cpu("kernel: other\n").unwrap_err();
    assert!(e.0.contains(":1:9: this file is for kernel `other`"), "{e}");
    let e =
        cpu("kernel: matmul\nentries:\n  - backend: cpu\n    sizes: {I: 1, J: 2}\n").unwrap_err();
    assert!(e.0.contains("lacks `K`"), "{e}");
    let e = cpu("kernel: matmul\nentries:\n  - backend: cpu\n    colour: red\n").unwrap_err();
    assert!(e.0.contains("unknown field `colour`"), "{e}");
    let e = cpu("kernel: matmul\nentries:\n  - backend: cpu\n    cpu:\n      nod: [2, 0, 1]\n")
        .unwrap_err();
    assert!(e.0.starts_with("configs/matmul.yaml:5:12:"), "{e}");
    assert!(e.0.contains("`nod` [2, 0, 1] mixes 0"), "{e}");
    let e = cpu("kernel: matmul\nentries:\n  - backend: cpu\n    cpu:\n      exact: true\n")
        .unwrap_err();
    assert!(e.0.starts_with("configs/matmul.yaml:5:14:"), "{e}");
    assert!(e.0.contains("add `sizes:` or remove `exact`"), "{e}");
}

#[test]
fn exact_bodies_are_asked_for_per_sized_entry() {
    let e = cpu("kernel: matmul\nentries:\n  - backend: cpu\n    sizes: {I: 4, J: 4, K: 4}\n    cpu: {exact: true}\n  - backend: cpu\n    sizes: {I: 8, J: 8, K: 8}\n")
        .unwrap();
    assert!(e[0].plan.exact);
    assert!(!e[1].plan.exact, "off by default");
}

#[test]
fn an_unset_nod_layer_is_left_out_of_written_entries() {
    let k = matmul();
    let plan = CpuPlan::default_for(&k);
    assert_eq!(plan.nod, vec![0, 0, 0]);
    let entry = cpu_entry_yaml(&k, "*", None, None, &plan, &[]);
    assert!(!entry.contains("nod"), "{entry}");
    assert!(cpu_entry_yaml(&k, "*", None, None, &tuned(), &[]).contains("nod: [2, 1, 1]"));
}

#[test]
fn reads_gpu_plans_per_backend() {
    let e = read(
            "kernel: matmul\nentries:\n  - backend: cuda\n    device: H100\n    sizes: {I: 64, J: 32, K: 16}\n    gpu:\n      items: [4, 32, 2]\n      tile: [4, 32, 64]\n      local: [true, false]\n  - backend: opencl\n    gpu: {blocked: true}\n",
        )
        .unwrap();
    let default = GpuPlan::default_for(&KernelDesc::from_kernel(&matmul()));
    assert_eq!(e.gpu(Backend::Cuda).len(), 1);
    assert_eq!(e.gpu(Backend::Cuda)[0].device, "H100");
    assert_eq!(e.gpu(Backend::Cuda)[0].sizes, Some(vec![64, 16, 32]));
    assert_eq!(e.gpu(Backend::Cuda)[0].plan.items, vec![4, 32, 2]);
    assert_eq!(e.gpu(Backend::Cuda)[0].plan.tile, vec![4, 32, 64]);
    assert_eq!(e.gpu(Backend::Cuda)[0].plan.local, vec![true, false]);
    assert_eq!(e.gpu(Backend::Cuda)[0].plan.groups, default.groups);
    assert_eq!(e.gpu(Backend::OpenCl).len(), 1);
    assert_eq!(e.gpu(Backend::OpenCl)[0].device, "*");
    assert!(e.gpu(Backend::OpenCl)[0].plan.blocked);
    assert_eq!(e.gpu(Backend::OpenCl)[0].plan.items, default.items);
    // Layout fields left out: scalar, row-major, unpadded.
    assert_eq!(e.gpu(Backend::OpenCl)[0].plan.vector, vec![1, 1]);
    assert_eq!(e.gpu(Backend::OpenCl)[0].plan.transpose, vec![false, false]);
    assert_eq!(e.gpu(Backend::OpenCl)[0].plan.pad, vec![0, 0]);
    assert!(e.cpu.is_empty());
}

/// The layout fields of a GPU plan: read per input, checked with the
/// line of the offending value.
#[test]
fn gpu_layout_fields_read_and_checked() {
    let e = read("kernel: matmul\nentries:\n  - backend: cuda\n    gpu:\n      local: [true, true]\n      vector: [1, 4]\n      transpose: [true, false]\n      pad: [4, 1]\n").unwrap();
    let p = &e.gpu(Backend::Cuda)[0].plan;
    assert_eq!(
        (&p.vector, &p.transpose, &p.pad),
        (&vec![1, 4], &vec![true, false], &vec![4, 1])
    );
    let bad = |gpu: &str| {
        read(&format!(
            "kernel: matmul\nentries:\n  - backend: cuda\n    gpu:\n{gpu}"
        ))
        .unwrap_err()
        .0
    };
    let e = bad("      local: [true, true]\n      vector: [3, 4]\n");
    assert!(
        e.starts_with("configs/matmul.yaml:6:") && e.contains("widths are [1, 2, 4]"),
        "{e}"
    );
    let e = bad("      vector: [4]\n");
    assert!(
        e.starts_with("configs/matmul.yaml:5:") && e.contains("`vector` has 1 entries"),
        "{e}"
    );
    let e = bad("      local: [false, true]\n      transpose: [true, false]\n");
    assert!(
        e.starts_with("configs/matmul.yaml:6:") && e.contains("`local` entry is false"),
        "{e}"
    );
    let e = bad("      local: [true, true]\n      pad: [0, 33]\n");
    assert!(
        e.starts_with("configs/matmul.yaml:6:") && e.contains("at most 32"),
        "{e}"
    );
}

#[test]
fn gpu_errors_name_file_line_and_column() {
    let e =
        read("kernel: matmul\nentries:\n  - backend: cuda\n    gpu:\n      items: [64, 32, 1]\n")
            .unwrap_err();
    assert!(e.0.starts_with("configs/matmul.yaml:5:14:"), "{e}");
    assert!(e.0.contains("2048 work-items"), "{e}");
    let e = read("kernel: matmul\nentries:\n  - backend: opencl\n    gpu:\n      tile: [1, 1]\n")
        .unwrap_err();
    assert!(e.0.starts_with("configs/matmul.yaml:5:13:"), "{e}");
    assert!(e.0.contains("`tile` has 2 entries"), "{e}");
    let e = read("kernel: matmul\nentries:\n  - backend: cuda\n    gpu:\n      lanes: 4\n")
        .unwrap_err();
    assert!(e.0.contains("unknown field `lanes`"), "{e}");
    let e = read("kernel: matmul\nentries:\n  - backend: cuda\n    cpu:\n      reg: [1, 1, 1]\n")
        .unwrap_err();
    assert!(
        e.0.contains(":5:") && e.0.contains("takes a `gpu:` plan"),
        "{e}"
    );
    let e =
        read("kernel: matmul\nentries:\n  - backend: cpu\n    gpu: {blocked: true}\n").unwrap_err();
    assert!(
        e.0.contains(":4:") && e.0.contains("takes a `cpu:` plan"),
        "{e}"
    );
}

/// `arch:` of a CUDA entry reads back as its compute capability and is
/// written by `gpu_entry_yaml`; elsewhere, or not an architecture, it is an
/// error at its line that says what to write.
#[test]
fn cuda_arch_reads_back_and_is_checked() {
    let k = matmul();
    let path = Path::new("configs/matmul.yaml");
    let plan = crate::fixtures::matmul_tensor_cores(Mma::Tf32);
    let entry = gpu_entry_yaml(&k, "cuda", "NVIDIA H200", Some(90), None, &plan, &[]);
    assert!(entry.contains("\n    arch: sm_90\n"), "{entry}");
    let text = merge_entry(&k, path, None, key("cuda", "NVIDIA H200", &[]), &entry).unwrap();
    let read_back = entries(&k, path, &text).unwrap().gpu(Backend::Cuda)[0].clone();
    assert_eq!((read_back.arch, &read_back.plan), (Some(90), &plan));
    let without = gpu_entry_yaml(&k, "cuda", "NVIDIA H200", None, None, &plan, &[]);
    assert!(!without.contains("arch:"), "{without}");
    let cfg = |backend: &str, arch: &str| {
        read(&format!(
            "kernel: matmul\nentries:\n  - backend: {backend}\n    arch: {arch}\n"
        ))
    };
    assert_eq!(
        cfg("cuda", "sm_80").unwrap().gpu(Backend::Cuda)[0].arch,
        Some(80)
    );
    let bad = |backend: &str, arch: &str| cfg(backend, arch).unwrap_err().0;
    let e = bad("cuda", "hopper");
    assert!(
        e.starts_with("configs/matmul.yaml:4:11:")
            && e.contains("`hopper` is not a CUDA architecture")
            && e.contains("`arch: sm_90`"),
        "{e}"
    );
    let e = bad("opencl", "sm_90");
    assert!(
        e.starts_with("configs/matmul.yaml:4:") && e.contains("make it a `cuda` entry"),
        "{e}"
    );
    let e = bad("cpu", "sm_90");
    assert!(
        e.starts_with("configs/matmul.yaml:4:") && e.contains("described by `machine:`"),
        "{e}"
    );
}

#[test]
fn gpu_mma_reads_back_and_is_checked() {
    let k = matmul();
    let path = Path::new("configs/matmul.yaml");
    for mma in [Mma::Tf32, Mma::Tf32x3] {
        let plan = crate::fixtures::matmul_tensor_cores(mma);
        let entry = gpu_entry_yaml(&k, "cuda", "H100", Some(90), None, &plan, &[]);
        assert!(entry.contains(&format!("mma: {}", mma.name())), "{entry}");
        let text = merge_entry(&k, path, None, key("cuda", "H100", &[]), &entry).unwrap();
        assert_eq!(
            entries(&k, path, &text).unwrap().gpu(Backend::Cuda)[0].plan,
            plan
        );
    }
    let plan = "      items: [32, 4, 1]\n      tile: [128, 64, 16]\n";
    let cfg = |backend: &str, gpu: &str| {
        read(&format!(
            "kernel: matmul\nentries:\n  - backend: {backend}\n    gpu:\n{gpu}"
        ))
    };
    assert_eq!(
        cfg("cuda", &format!("{plan}      mma: off\n"))
            .unwrap()
            .gpu(Backend::Cuda)[0]
            .plan
            .mma,
        Mma::Off
    );
    let bad = |backend: &str, gpu: &str| cfg(backend, gpu).unwrap_err().0;
    let e = bad("cuda", &format!("{plan}      mma: fp16\n"));
    assert!(
        e.starts_with("configs/matmul.yaml:7:12:") && e.contains("unknown `mma: fp16`; use `off`"),
        "{e}"
    );
    let e = bad("opencl", &format!("{plan}      mma: tf32\n"));
    assert!(
        e.starts_with("configs/matmul.yaml:7:") && e.contains("make it a `cuda` entry"),
        "{e}"
    );
    // Work-items that are not 8 row groups × 4 column pairs per warp.
    let e = bad(
        "cuda",
        "      items: [16, 16, 1]\n      tile: [128, 128, 8]\n      mma: tf32\n",
    );
    assert!(
        e.starts_with("configs/matmul.yaml:5:") && e.contains("must be 4 along dimension 1"),
        "{e}"
    );
    let e = bad(
        "cuda",
        "      items: [32, 4, 1]\n      tile: [32, 64, 8]\n      mma: tf32\n",
    );
    assert!(
        e.starts_with("configs/matmul.yaml:6:") && e.contains("multiple of 2 × `items`"),
        "{e}"
    );
    // Not a contraction: a sum instead of a product.
    let sum = crate::fixtures::compiled(&crate::fixtures::MATMUL.replace("a * b", "a + b"));
    let e = entries(
        &sum,
        path,
        &format!("kernel: matmul\nentries:\n  - backend: cuda\n    gpu:\n{plan}      mma: tf32\n"),
    )
    .unwrap_err()
    .0;
    assert!(
        e.starts_with("configs/matmul.yaml:7:") && e.contains("not the f32 product of two inputs"),
        "{e}"
    );
}

#[test]
fn gpu_warps_read_back_and_are_checked() {
    let k = matmul();
    let path = Path::new("configs/matmul.yaml");
    let plan = GpuPlan {
        warps: vec![2, 4, 1],
        ..crate::fixtures::matmul_register_tiled()
    };
    let entry = gpu_entry_yaml(&k, "opencl", "*", None, None, &plan, &[]);
    assert!(entry.contains("warps: [2, 4, 1]"), "{entry}");
    let text = merge_entry(&k, path, None, key("opencl", "*", &[]), &entry).unwrap();
    assert_eq!(
        entries(&k, path, &text).unwrap().gpu(Backend::OpenCl)[0].plan,
        plan
    );
    let bad = |gpu: &str| {
        read(&format!(
            "kernel: matmul\nentries:\n  - backend: cuda\n    gpu:\n      items: [16, 16, 2]\n{gpu}"
        ))
        .unwrap_err()
        .0
    };
    let e = bad("      warps: [2, 2, 1]\n");
    assert!(
        e.starts_with("configs/matmul.yaml:6:")
            && e.contains("gives 128 lanes per warp; a warp has 32"),
        "{e}"
    );
    let e = bad("      warps: [2, 4, 2]\n");
    assert!(e.contains("a PW dimension"), "{e}");
    let e = bad("      warps: [3, 4, 1]\n");
    assert!(
        e.contains("must be at least 1 and divide `items` (16)"),
        "{e}"
    );
    let e = bad("      warps: [2, 4]\n");
    assert!(e.contains("`warps` has 2 entries"), "{e}");
}
