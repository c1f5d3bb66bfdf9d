//! A CPU's machine description: what a tuned plan depends on (its vector
//! instruction set, how many cores run its tasks, how large its caches
//! are), as config entries record it (`machine:`) and as the runtime
//! reads it from the machine it runs on (`mdh::machine`). The model name
//! alone says little: one "Intel(R) Xeon(R) Processor" string covers Xeons
//! of different caches, and a plan tuned on one ran 0.85× a vendor BLAS on
//! the next (issue 22).

/// The instruction sets generated kernels are compiled for, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    Avx512,
    Avx2,
    Baseline,
}

impl Isa {
    pub const ALL: [Isa; 3] = [Isa::Avx512, Isa::Avx2, Isa::Baseline];

    /// The name configs and `MDH_ISA` use.
    pub fn name(self) -> &'static str {
        match self {
            Isa::Avx512 => "avx512",
            Isa::Avx2 => "avx2",
            Isa::Baseline => "baseline",
        }
    }

    /// The instruction set called `name` (any case).
    pub fn from_name(name: &str) -> Option<Isa> {
        Isa::ALL
            .into_iter()
            .find(|i| i.name().eq_ignore_ascii_case(name))
    }

    /// The names, for messages: "avx512, avx2, baseline".
    pub fn names() -> String {
        Isa::ALL.map(Isa::name).join(", ")
    }

    /// Vector registers of the register file.
    pub const fn vector_registers(self) -> usize {
        match self {
            Isa::Avx512 => 32,
            Isa::Avx2 | Isa::Baseline => 16,
        }
    }

    /// Bytes of one vector register.
    pub const fn vector_bytes(self) -> usize {
        match self {
            Isa::Avx512 => 64,
            Isa::Avx2 => 32,
            Isa::Baseline => 16,
        }
    }

    /// Registers a register tile leaves to operands (broadcasts, loads, the
    /// loop-invariant inputs of a scalar function): a quarter.
    pub const fn operand_registers(self) -> usize {
        self.vector_registers() / 4
    }

    /// Bytes of accumulators one register tile may hold without spilling:
    /// the register file less its operand registers (AVX-512 1536, AVX2
    /// 384, SSE 192). A tile that needs more spills and collapses (DESIGN.md
    /// §7).
    pub const fn accumulator_bytes(self) -> usize {
        (self.vector_registers() - self.operand_registers()) * self.vector_bytes()
    }
}

/// The config line of the analytical default plan that the macro adds to a
/// kernel's CPU entries (a file's own entries start at line 1).
pub const DEFAULT_LINE: u32 = 0;

/// The config line of the plans of products of few rows that the macro
/// adds before the default plan ([`PlanEntry::rows`]); in no file.
pub const FEW_ROWS_LINE: u32 = u32::MAX;

/// The calls a plan of few rows serves: those where size parameter `param`
/// (the rows' extent) is within `min..=max` (and, for a plan that runs
/// pairs, only on hosts that run them: [`PlanEntry::pairs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowsWithin {
    pub param: usize,
    pub min: usize,
    pub max: usize,
}

impl RowsWithin {
    /// Whether a call of these sizes has such rows.
    pub fn holds(&self, sizes: &[usize]) -> bool {
        sizes
            .get(self.param)
            .is_some_and(|n| (self.min..=self.max).contains(n))
    }
}

/// One CPU config entry of a kernel, as generated code lists them (config
/// file order, the analytical default plan last) for the run-time dispatch
/// (`mdh::machine::rank`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanEntry<'a> {
    /// `*` or a CPU model name.
    pub device: &'a str,
    /// The machine it was tuned on, if the entry says.
    pub machine: Option<Machine>,
    /// The sizes it was tuned for (`None`: any).
    pub sizes: Option<&'a [usize]>,
    /// Its line in the config file; [`DEFAULT_LINE`] for the default plan
    /// the macro adds.
    pub line: u32,
    /// Bytes of its register tile's accumulators, every output together.
    pub accumulator_bytes: usize,
    /// The instruction set whose body runs the entry's plan with its
    /// register tile narrowed to that set's registers (one the tile
    /// outgrows), if generated code compiled one: AVX2 for an entry without
    /// a machine description tuned on AVX-512.
    pub narrowed_for: Option<Isa>,
    /// For an analytical plan of matrix products of few rows (which the
    /// macro adds before the default plan): the rows it serves. The entry
    /// runs only there, and ranks there as an entry tuned at the call's
    /// sizes (`mdh::machine::rank`).
    pub rows: Option<RowsWithin>,
    /// Whether its plan runs a bf16 product's reduction points in pairs
    /// (`vdpbf16ps`) where the host's bodies do ([`Host::bf16_pairs`]). A
    /// plan of few rows that does serves its rows only on such hosts: it
    /// packs B as pairs, which elsewhere its bodies would pack widened to
    /// f32, slower than the plan of the same rows that reads B in place.
    pub pairs: bool,
}

/// A machine kernels run on, as the dispatch sees it (`mdh::machine::host`
/// reads this process's).
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// The CPU's model name (`/proc/cpuinfo`), "" where unknown.
    pub model: String,
    pub machine: Machine,
    /// Whether the task bodies of bf16 products run in pairs here (natively
    /// with AVX-512 BF16, or emulated: `mdh::__rt::bf16_pairs`).
    pub bf16_pairs: bool,
}

/// How an entry fits the host: the rank of `mdh::machine::rank`, best
/// first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fit {
    /// Tuned on this machine: its description is this one's.
    Exact,
    /// Tuned on another machine of this instruction set, this far
    /// ([`Machine::distance`]).
    SameClass(f64),
    /// Without a description, for this CPU's model name: one string covers
    /// machines of different cores and caches (the 2-core Xeon's entries
    /// ran on a 16-core "Intel(R) Xeon(R) Processor" of 2026-11-26, and
    /// one tuned for 1×1000×2048 took matmul 10×500×64 from the `*` entry
    /// of exactly those sizes: 0.059 ms, OpenBLAS 0.007). So it ranks with
    /// the entries for any machine, by sizes, and before them only at
    /// sizes as near.
    Model,
    /// For any machine: `device: "*"` without `machine:`.
    Any,
    /// For this CPU's model name or any machine, but its register tile
    /// outgrows this instruction set's registers ([`PlanEntry::suits`]):
    /// after the default plan, which is fitted to them.
    Spills,
}

impl Fit {
    /// The rank, the machine's distance within it, and the tie-break after
    /// the sizes' distance.
    pub fn rank(self) -> (u8, f64, u8) {
        match self {
            Fit::Exact => (0, 0.0, 0),
            Fit::SameClass(d) => (1, d, 0),
            Fit::Model => (2, 0.0, 0),
            Fit::Any => (2, 0.0, 1),
            Fit::Spills => (3, 0.0, 0),
        }
    }
}

impl PlanEntry<'_> {
    /// Whether this is the analytical default plan the macro adds.
    pub fn is_default(&self) -> bool {
        self.line == DEFAULT_LINE
    }

    /// Whether the entry is for any machine: `device: "*"` without
    /// `machine:` (what `MDH_IGNORE_DEVICE_ENTRIES` keeps).
    pub fn for_any_machine(&self) -> bool {
        self.machine.is_none() && self.device == "*"
    }

    /// How the entry fits `host`; `None` if it must not run there (tuned
    /// for another instruction set, or for another model and no machine
    /// description says more).
    pub fn fit(&self, host: &Host) -> Option<Fit> {
        let fit = match &self.machine {
            // With a description, the model name only records where it was tuned.
            Some(m) if m.isa != host.machine.isa => return None,
            Some(m) if *m == host.machine => Fit::Exact,
            Some(m) => Fit::SameClass(m.distance(&host.machine)),
            None if self.for_any_machine() => Fit::Any,
            None if !host.model.is_empty() && self.device == host.model => Fit::Model,
            None => return None,
        };
        Some(if self.suits(host.machine.isa) {
            fit
        } else {
            Fit::Spills
        })
    }

    /// Whether the entry's plan suits a machine of instruction set `isa`.
    /// One tuned on a described machine suits that machine's instruction
    /// set only. One without a description (`*`, or a model name) suits
    /// AVX-512 and the narrower sets whose registers hold its register
    /// tile's accumulators: a `*` matmul entry tuned on AVX-512 (6 × 64
    /// floats, 24 zmm) spills on AVX2's 16 ymm and ran 15.1 ms at 1024³
    /// where AVX2's default runs 8.7 (the 2-core AMD EPYC, `MDH_ISA=avx2`).
    /// A tile past even AVX-512's registers was chosen as such (measured,
    /// or written by hand): the widest set runs it as given. The default
    /// plan suits every instruction set: the macro fits it to each; an
    /// entry narrowed for `isa` ([`PlanEntry::narrowed_for`]) suits it too.
    /// Generated code compiles an entry's body only for the instruction
    /// sets it suits; the dispatch ranks an unsuited entry after the
    /// default plan, so it never runs beside one.
    pub fn suits(&self, isa: Isa) -> bool {
        match self.machine {
            Some(m) => m.isa == isa,
            None => {
                self.is_default()
                    || isa == Isa::ALL[0]
                    || self.accumulator_bytes <= isa.accumulator_bytes()
                    || self.narrowed_for == Some(isa)
            }
        }
    }
}

/// What a plan's speed depends on, of one CPU. Cache sizes are per core
/// (L1d, L2) or per package (L3) as Linux reports them; `None` where they
/// are not known (no sysfs, or an entry that does not say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Machine {
    pub isa: Isa,
    /// Cores the process may run on (its available parallelism).
    pub cores: usize,
    /// Bytes.
    pub l1d: Option<u64>,
    pub l2: Option<u64>,
    pub l3: Option<u64>,
}

/// A small Zen 3 (AVX2, 2 cores, 32 KiB L1d, 512 KiB L2, 32 MiB L3): the
/// machine of the tests here and of the config parser's (test support).
#[doc(hidden)]
pub const ZEN3: Machine = Machine {
    isa: Isa::Avx2,
    cores: 2,
    l1d: Some(32 << 10),
    l2: Some(512 << 10),
    l3: Some(32 << 20),
};

/// The cache fields of a [`Machine`] in configs and messages, in order.
pub const CACHE_FIELDS: [&str; 3] = ["l1d", "l2", "l3"];

/// How far apart a size unknown on either side counts, as the log of a
/// ratio: as far as a factor of 2 (unknown is neither a match nor far off).
const UNKNOWN_LN_RATIO: f64 = std::f64::consts::LN_2;

impl Machine {
    pub fn caches(&self) -> [Option<u64>; 3] {
        [self.l1d, self.l2, self.l3]
    }

    /// How unlike `other` this machine is, for machines of one instruction
    /// set: the sum of squared log-ratios of the core counts and of each
    /// cache size (the same measure as for tuned sizes), so that twice
    /// and half the L2 are equally far. 0 for equal descriptions.
    pub fn distance(&self, other: &Machine) -> f64 {
        let ln_ratio = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => (a.max(1) as f64 / b.max(1) as f64).ln(),
            _ => UNKNOWN_LN_RATIO,
        };
        let cores = ln_ratio(Some(self.cores as u64), Some(other.cores as u64));
        let caches = self
            .caches()
            .into_iter()
            .zip(other.caches())
            .map(|(a, b)| ln_ratio(a, b));
        std::iter::once(cores).chain(caches).map(|r| r * r).sum()
    }

    /// One line for messages: "avx2, 2 cores, L1d 32K, L2 512K, L3 32M".
    pub fn describe(&self) -> String {
        let caches = ["L1d", "L2", "L3"]
            .iter()
            .zip(self.caches())
            .map(|(n, s)| match s {
                Some(s) => format!("{n} {}", format_size(s)),
                None => format!("{n} unknown"),
            });
        let cores = match self.cores {
            1 => "1 core".to_string(),
            n => format!("{n} cores"),
        };
        [self.isa.name().to_string(), cores]
            .into_iter()
            .chain(caches)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A size as sysfs and configs write it: bytes (`524288`), or kibibytes,
/// mebibytes, gibibytes with a `K`, `M`, `G` suffix (`512K`, `32M`; `KiB`
/// and lower case too). `None` for anything else, zero, or an overflow.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let number = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, unit) = match number.char_indices().last()? {
        (i, 'k') => (&number[..i], 1u64 << 10),
        (i, 'm') => (&number[..i], 1 << 20),
        (i, 'g') => (&number[..i], 1 << 30),
        _ if number.len() == lower.len() => (number, 1),
        // A bare `B`/`iB` without K, M or G.
        _ => return None,
    };
    let digits = digits.trim_end();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits
        .parse::<u64>()
        .ok()?
        .checked_mul(unit)
        .filter(|&n| n > 0)
}

/// A size in the shortest exact form [`parse_size`] reads: `32K`, `1536K`,
/// `32M`, or bytes.
pub fn format_size(bytes: u64) -> String {
    for (unit, suffix) in [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{}{suffix}", bytes / unit);
        }
    }
    bytes.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_sysfs_and_configs_write_them() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("1024K"), Some(1 << 20));
        assert_eq!(parse_size("32768K\n"), Some(32 << 20));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("512KiB"), Some(512 << 10));
        assert_eq!(parse_size("48k"), Some(48 << 10));
        assert_eq!(parse_size("524288"), Some(524288));
        for bad in [
            "",
            "K",
            "32Q",
            "3.5M",
            "-1K",
            "0",
            "0K",
            "32 MB x",
            "B",
            "99999999999999999999G",
        ] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
        for n in [1u64, 1000, 32 << 10, 1536 << 10, 32 << 20, 3 << 30] {
            assert_eq!(parse_size(&format_size(n)), Some(n), "{n}");
        }
        assert_eq!(format_size(32 << 20), "32M");
        assert_eq!(format_size(1536 << 10), "1536K");
    }

    #[test]
    fn isa_names_round_trip() {
        for isa in Isa::ALL {
            assert_eq!(Isa::from_name(isa.name()), Some(isa));
        }
        assert_eq!(Isa::from_name("AVX2"), Some(Isa::Avx2));
        assert_eq!(Isa::from_name("sse9"), None);
    }

    #[test]
    fn machines_are_as_far_apart_as_their_cores_and_caches() {
        let m = ZEN3;
        assert_eq!(m.distance(&m), 0.0);
        let bigger_l2 = Machine {
            l2: Some(1 << 20),
            ..m
        };
        let smaller_l2 = Machine {
            l2: Some(256 << 10),
            ..m
        };
        let many_cores = Machine { cores: 64, ..m };
        let d = m.distance(&bigger_l2);
        assert!((d - std::f64::consts::LN_2.powi(2)).abs() < 1e-12, "{d}");
        assert!(
            (m.distance(&smaller_l2) - d).abs() < 1e-12,
            "twice and half"
        );
        assert_eq!(d, bigger_l2.distance(&m), "symmetric");
        assert!(m.distance(&many_cores) > d);
        let unknown = Machine { l3: None, ..m };
        assert!(
            (m.distance(&unknown) - d).abs() < 1e-12,
            "unknown: a factor 2"
        );
        assert_eq!(m.describe(), "avx2, 2 cores, L1d 32K, L2 512K, L3 32M",);
        assert!(unknown.describe().ends_with("L3 unknown"));
    }
}
