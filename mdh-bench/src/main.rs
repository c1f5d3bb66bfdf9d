//! `mdh-bench`: mdh's CPU kernels against OpenBLAS, oneDNN, faer, C/OpenMP and plain
//! rayon loops, and the same kernels through OpenCL (`mdh-opencl`, on the
//! first OpenCL device, e.g. PoCL on the CPU; skipped with a note without
//! one), side by side in one process.
//!
//! ```text
//! cargo run --release -p mdh-bench -- [--quick] [--csv FILE] [--png FILE] [--case SUBSTRING[,SUBSTRING...]]
//! cargo run --release -p mdh-bench --features mpi -- --mpi [--quick]   # the node layer, see `mpi`
//! ```
//!
//! For each case every implementation is warmed up and then timed; the
//! median of the repetitions is reported (repetitions adapt to the run time:
//! about 1 s per implementation under `--quick`, 5 s otherwise). Every peer's
//! result is compared with mdh's (relative tolerance [`cases::RTOL`] for
//! floats, exact for integers); a disagreement is printed loudly and makes the
//! exit code 1. Writes a CSV
//! (`case,impl,median_s,reps,gflops,gbs,mdh_speedup,versus,agrees,pct_of_roof`;
//! `mdh_speedup` = peer median / median of `versus`, > 1 when mdh is faster;
//! `versus` is `mdh` for the CPU peers and `mdh-cuda` for cuBLAS) and a PNG
//! bar chart of `mdh_speedup` for every case and peer. Where a CUDA device is
//! present, every case gains `mdh-cuda` rows (and the BLAS cases `cublas`
//! rows), see [`cuda`].
//!
//! Before the cases the run measures the machine's roofs on all threads
//! (see [`roof`]): the f32 FMA peak of the widest instruction set (AVX-512,
//! AVX2+FMA or the baseline, chosen at run time; a register-only loop), the
//! streaming bandwidth (read-only sum, copy, triad over buffers of 4× the
//! last-level cache) and the L2 bandwidth (a sum over half the L2 per
//! thread, repeated). They are printed above the table (name, rate,
//! threads, instruction set), and every row gains `% of roof`: the
//! shortest time the case's flops and bytes allow, `flops / min(FMA peak,
//! flops/bytes × streaming bandwidth)` (the bandwidth being the fastest of
//! sum, copy and triad; a case with flops alone is held against the FMA
//! peak, one with bytes alone against the bandwidth), over its median, in
//! percent. The CSV gains `pct_of_roof`, the PNG a second panel of it.

mod blas;
mod cases;
mod chart;
mod cuda;
mod dnnl;
mod harness;
mod kernels;
#[cfg(feature = "mpi")]
mod mpi;
mod omp;
mod opencl;
mod roof;

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use harness::Plan;

struct Args {
    quick: bool,
    /// The node layer over MPI instead of the single-machine cases.
    mpi: bool,
    csv: PathBuf,
    png: PathBuf,
    case: Option<String>,
}

const USAGE: &str =
    "usage: mdh-bench [--quick] [--csv FILE] [--png FILE] [--case SUBSTRING[,SUBSTRING...]]\n       mdh-bench --mpi [--quick]   (built with --features mpi)";

fn parse_args() -> Result<Args, String> {
    // Default: <workspace>/target/mdh-bench/.
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = manifest
        .parent()
        .unwrap_or(manifest)
        .join("target/mdh-bench");
    let mut args = Args {
        quick: false,
        mpi: false,
        csv: out_dir.join("results.csv"),
        png: out_dir.join("speedups.png"),
        case: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--quick" => args.quick = true,
            "--mpi" => args.mpi = true,
            "--csv" => args.csv = value("--csv")?.into(),
            "--png" => args.png = value("--png")?.into(),
            "--case" => args.case = Some(value("--case")?),
            "-h" | "--help" => {
                println!("{USAGE}\ncases:");
                for (name, _) in cases::CASES {
                    println!("  {name}");
                }
                std::process::exit(0);
            }
            _ => return Err(format!("unknown argument {a:?}\n{USAGE}")),
        }
    }
    Ok(args)
}

/// "2-core Intel(R) Xeon(R) ..." from /proc/cpuinfo.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let n = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{n} cores, {cpu}")
}

struct Row {
    case: &'static str,
    imp: &'static str,
    median_s: f64,
    reps: usize,
    gflops: Option<f64>,
    gbs: Option<f64>,
    /// Median of the implementation the speedup is stated against over
    /// this one's; `None` for a reference row (mdh, mdh-cuda).
    speedup: Option<f64>,
    /// What the speedup is stated against.
    versus: &'static str,
    mismatch: Option<String>,
    /// The case's roof (the shortest time its flops and bytes allow on this
    /// machine, see [`roof`]) over this median, in percent.
    pct_of_roof: Option<f64>,
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if args.mpi {
        #[cfg(feature = "mpi")]
        return mpi::run(args.quick);
        #[cfg(not(feature = "mpi"))]
        {
            eprintln!("mdh-bench --mpi: this build has no MPI; build it with `--features mpi` (needs an MPI library, e.g. Debian's libopenmpi-dev, and libclang)");
            return ExitCode::from(2);
        }
    }
    let plan = if args.quick {
        Plan {
            budget: Duration::from_millis(1000),
            min: 3,
            max: 15,
        }
    } else {
        Plan {
            budget: Duration::from_secs(5),
            min: 5,
            max: 51,
        }
    };
    let selected: Vec<_> = cases::CASES
        .iter()
        .filter(|(name, _)| {
            // Cases whose name contains any of the comma-separated parts.
            args.case
                .as_deref()
                .is_none_or(|c| c.split(',').any(|part| name.contains(part)))
        })
        .collect();
    if selected.is_empty() {
        eprintln!(
            "no case matches {:?}; see --help",
            args.case.unwrap_or_default()
        );
        return ExitCode::from(2);
    }
    if let Some(failed) = blas::fix_core() {
        eprintln!("!!! {failed}");
    }
    let machine = machine();
    eprintln!(
        "mdh-bench{}: {} case(s) on {machine}; rayon threads {}, OpenBLAS threads {} (kernels {})",
        if args.quick { " --quick" } else { "" },
        selected.len(),
        rayon::current_num_threads(),
        blas::threads(),
        blas::corename()
    );

    let started = Instant::now();
    let mut rows: Vec<Row> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let threads = rayon::current_num_threads();
    let sizes = roof::Sizes::for_machine(threads, args.quick);
    eprintln!(
        "roofs: FMA peak, streaming bandwidth over {} buffers, L2 bandwidth over {} per thread",
        mdh::machine::format_size(sizes.stream as u64),
        mdh::machine::format_size(sizes.l2 as u64)
    );
    let roofs = match roof::measure(sizes, threads) {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("\n!!! {e}\n");
            failures.push(e);
            None
        }
    };
    let roof_rows = roofs.as_ref().map_or(&[][..], |r| &r.rows[..]);
    for r in roof_rows {
        eprintln!("    {:<16} {:>8.1} {}", r.name, r.rate, r.unit);
    }
    let mut notes: Vec<String> = Vec::new();
    let opts = cases::Opts { quick: args.quick };
    for (i, (name, build)) in selected.iter().enumerate() {
        eprintln!("[{}/{}] {name}", i + 1, selected.len());
        let t = Instant::now();
        let result = build(&opts).and_then(|mut case| {
            eprintln!("    {}", case.what);
            for n in &case.notes {
                eprintln!("    {n}");
                notes.push(format!("{name}: {n}"));
            }
            harness::measure(&mut case, plan, &|line| eprintln!("{line}"))
                .map(|timings| (case, timings))
        });
        let (case, timings) = match result {
            Ok(x) => x,
            Err(e) => {
                eprintln!("\n!!! {name}: ERROR: {e}\n");
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        let median_of = |name: &str| {
            timings
                .iter()
                .find(|t| t.name == name)
                .map(|t| t.median.as_secs_f64())
        };
        for t in &timings {
            let s = t.median.as_secs_f64();
            let speedup = (t.versus != t.name)
                .then(|| median_of(t.versus).map(|v| s / v))
                .flatten();
            if let Some(m) = &t.mismatch {
                eprintln!("\n!!! {name}: {} DISAGREES WITH mdh: {m}\n", t.name);
                failures.push(format!("{name}: {} disagrees with mdh: {m}", t.name));
            }
            rows.push(Row {
                case: name,
                imp: t.name,
                median_s: s,
                reps: t.reps,
                gflops: case.flops.map(|f| f / s / 1e9),
                gbs: case.bytes.map(|b| b / s / 1e9),
                speedup,
                versus: t.versus,
                mismatch: t.mismatch.clone(),
                pct_of_roof: roofs.as_ref().and_then(|r| {
                    let limits = if case.bf16_products {
                        r.limits.of_bf16_products()
                    } else {
                        r.limits
                    };
                    limits.pct_of_roof(case.flops, case.bytes, s)
                }),
            });
        }
        eprintln!("    done in {:.1} s", t.elapsed().as_secs_f64());
    }

    print!("{}", table(&rows, roof_rows, &machine));
    for n in &notes {
        println!("- {n}");
    }
    let mut code = ExitCode::SUCCESS;
    if let Err(e) = write_csv(&args.csv, &rows) {
        eprintln!("!!! {e}");
        code = ExitCode::FAILURE;
    } else {
        println!("CSV: {}", args.csv.display());
    }
    match write_png(&args.png, &machine, &rows) {
        Ok(()) => println!("PNG: {}", args.png.display()),
        Err(e) => {
            eprintln!("!!! {e}");
            code = ExitCode::FAILURE;
        }
    }
    println!("total {:.1} s", started.elapsed().as_secs_f64());
    if !failures.is_empty() {
        eprintln!("\n!!! {} FAILURE(S):", failures.len());
        for f in &failures {
            eprintln!("!!!   {f}");
        }
        code = ExitCode::FAILURE;
    }
    code
}

/// The bar charts of the rows' speedups over their peers and of every
/// row's % of roof (where the roofs were measured).
fn write_png(png: &std::path::Path, machine: &str, rows: &[Row]) -> Result<(), String> {
    let panel = |caption, scale, bar: &dyn Fn(&Row) -> Option<chart::Bar>| chart::Panel {
        caption,
        scale,
        bars: rows.iter().filter_map(bar).collect(),
    };
    let speedups = panel(
        format!("mdh speedup over peers ({machine})"),
        chart::Scale::Speedup,
        &|r| {
            Some(chart::Bar {
                label: match r.versus {
                    "mdh" => format!("{} vs {}", r.case, r.imp),
                    v => format!("{}: {v} vs {}", r.case, r.imp),
                },
                value: r.speedup?,
                highlight: false,
            })
        },
    );
    let roofs = panel(
        format!("% of roof, measured in the same run ({machine})"),
        chart::Scale::PercentOfRoof,
        &|r| {
            Some(chart::Bar {
                label: format!("{}: {}", r.case, r.imp),
                value: r.pct_of_roof?,
                highlight: r.imp == r.versus,
            })
        },
    );
    let mut panels = vec![speedups];
    if !roofs.bars.is_empty() {
        panels.push(roofs);
    }
    std::fs::create_dir_all(png.parent().unwrap_or(std::path::Path::new(".")))
        .map_err(|e| e.to_string())
        .and_then(|()| chart::draw(png, &panels))
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map_or(String::new(), |v| format!("{v:.prec$}"))
}

/// A Markdown table (readable in a terminal, pasteable into mdh-bench/README.md),
/// under the roofs of the machine.
fn table(rows: &[Row], roofs: &[roof::Roof], machine: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nmdh-bench on {machine}; mdh speedup = peer median / mdh median, or / mdh-cuda median where it says so (> 1: mdh faster)\n"
    );
    if !roofs.is_empty() {
        let _ = writeln!(
            s,
            "Roofs, measured in this run; % of roof = a row's rate over its case's roofline, min(FMA peak, flops/bytes × the fastest stream rate); bf16 products: the bf16 pair peak for the FMA peak, where measured\n"
        );
        let _ = writeln!(s, "| roof | rate | threads | ISA | how |");
        let _ = writeln!(s, "|---|---:|---:|---|---|");
        for r in roofs {
            let _ = writeln!(
                s,
                "| {} | {:.1} {} | {} | {} | {} |",
                r.name, r.rate, r.unit, r.threads, r.isa, r.how
            );
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "| case | impl | median (ms) | GFLOP/s | GB/s | % of roof | mdh speedup | reps | agrees |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---|");
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {:.3} | {} | {} | {} | {} | {} | {} |",
            r.case,
            r.imp,
            r.median_s * 1e3,
            opt(r.gflops, 1),
            opt(r.gbs, 1),
            opt(r.pct_of_roof, 1),
            match (r.speedup, r.versus) {
                (None, _) => String::new(),
                (Some(x), "mdh") => format!("{x:.2}"),
                (Some(x), v) => format!("{x:.2} (vs {v})"),
            },
            r.reps,
            if r.imp == "mdh" {
                "(reference)"
            } else if r.mismatch.is_none() {
                "yes"
            } else {
                "**NO**"
            }
        );
    }
    let best = best_peers(rows);
    if !best.is_empty() {
        let _ = writeln!(
            s,
            "\nmdh against the fastest CPU peer of each case (its median / mdh's; the mdh-* rows are mdh itself, not peers)\n"
        );
        let _ = writeln!(s, "| case | fastest peer | mdh speedup |");
        let _ = writeln!(s, "|---|---|---:|");
        for (case, imp, x) in best {
            let _ = writeln!(s, "| {case} | {imp} | {x:.2} |");
        }
    }
    s
}

/// Per case, the CPU peer with the smallest speedup (the fastest peer) and
/// that speedup: what mdh must beat.
fn best_peers(rows: &[Row]) -> Vec<(&str, &str, f64)> {
    let mut best: Vec<(&str, &str, f64)> = Vec::new();
    for r in rows
        .iter()
        // mdh's own rows (`mdh-opencl`, `mdh-unfused`, `mdh-matmul`, ...:
        // mdh on another backend or another kernel) are no peers.
        .filter(|r| r.versus == "mdh" && !r.imp.starts_with("mdh"))
    {
        let Some(x) = r.speedup else { continue };
        match best.iter_mut().find(|b| b.0 == r.case) {
            Some(b) if x < b.2 => *b = (r.case, r.imp, x),
            Some(_) => {}
            None => best.push((r.case, r.imp, x)),
        }
    }
    best
}

fn write_csv(path: &std::path::Path, rows: &[Row]) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).map_err(fail)?);
    writeln!(
        f,
        "case,impl,median_s,reps,gflops,gbs,mdh_speedup,versus,agrees,pct_of_roof"
    )
    .map_err(fail)?;
    for r in rows {
        writeln!(
            f,
            "{},{},{:.9},{},{},{},{},{},{},{}",
            r.case,
            r.imp,
            r.median_s,
            r.reps,
            opt(r.gflops, 3),
            opt(r.gbs, 3),
            opt(r.speedup, 4),
            r.versus,
            r.mismatch.is_none(),
            opt(r.pct_of_roof, 2)
        )
        .map_err(fail)?;
    }
    f.flush().map_err(fail)
}
