//! The machine code (SASS) of a CUBIN, read without a GPU: `nvdisasm`
//! (PyPI's `nvidia-cuda-nvdisasm` wheel, or a CUDA toolkit) disassembles
//! what [`nvrtc_resources`](crate::cuda::nvrtc_resources) compiled, and
//! [`Function`] counts what its loops execute. Tests use it to check that
//! a kernel's hot loop is what the plan asks for (FMAs fed from registers,
//! few shared-memory loads, no division calls).

use crate::cuda::pip_nvidia_dirs;
use mdh_rt::Error;
use std::path::PathBuf;

use crate::backend;

/// `nvdisasm`: `MDH_NVDISASM` (the program), the `PATH`, then the pip
/// wheels of a `--user` or virtualenv install (`nvidia/*/bin/nvdisasm`:
/// the wheel's folder is named after its CUDA version).
pub fn nvdisasm() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MDH_NVDISASM").map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("nvdisasm"));
    let in_wheels = pip_nvidia_dirs().into_iter().flat_map(|d| {
        let mut found: Vec<PathBuf> = std::fs::read_dir(d)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("bin/nvdisasm"))
            .collect();
        // The newest wheel first (cu13 before cu12).
        found.sort();
        found.into_iter().rev()
    });
    on_path.chain(in_wheels).find(|p| p.is_file())
}

/// The SASS of `cubin` (`nvdisasm -c`: code sections only).
pub fn disassemble(cubin: &[u8]) -> Result<String, Error> {
    let tool = nvdisasm().ok_or_else(|| {
        backend(
            "nvdisasm was not found: install it with `pip install --user nvidia-cuda-nvdisasm` \
             (or put a CUDA toolkit's bin folder on PATH, or set MDH_NVDISASM)",
        )
    })?;
    let dir = std::env::temp_dir().join(format!("mdh-sass-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| backend(format!("{}: {e}", dir.display())))?;
    // One file per call: tests disassemble from several threads.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let file = dir.join(format!(
        "{}.cubin",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::write(&file, cubin).map_err(|e| backend(format!("{}: {e}", file.display())))?;
    let out = std::process::Command::new(&tool)
        .arg("-c")
        .arg(&file)
        .output();
    let _ = std::fs::remove_file(&file);
    let out = out.map_err(|e| backend(format!("{}: {e}", tool.display())))?;
    if !out.status.success() {
        return Err(backend(format!(
            "{} failed: {}",
            tool.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// One instruction: its address and its text without the address and the
/// `;` (`@P0 FFMA R4, R5, R6, R4`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instr {
    pub addr: u64,
    pub text: String,
}

impl Instr {
    /// The opcode with its modifiers, without a predicate (`LDS.U.128`).
    pub fn opcode(&self) -> &str {
        let mut words = self.text.split_whitespace();
        let first = words.next().unwrap_or_default();
        if first.starts_with('@') {
            words.next().unwrap_or_default()
        } else {
            first
        }
    }

    /// Whether the opcode is `base` or `base.<modifiers>`.
    pub fn is(&self, base: &str) -> bool {
        let op = self.opcode();
        op == base || op.strip_prefix(base).is_some_and(|m| m.starts_with('.'))
    }
}

/// The instructions of one function of a disassembled CUBIN.
#[derive(Clone, Debug, Default)]
pub struct Function {
    pub name: String,
    pub instrs: Vec<Instr>,
    /// Branch labels and the address they mark.
    labels: Vec<(String, u64)>,
}

/// What one loop executes per trip.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopMix {
    pub instrs: usize,
    /// Fused multiply-adds of `f32` (`FFMA`).
    pub ffma: usize,
    /// Loads from shared memory (`LDS`, any width).
    pub lds: usize,
    /// Tensor-core matrix multiply-adds (`HMMA`, TF32 included).
    pub hmma: usize,
}

/// The multiply-adds of one thread in an `HMMA.1688` (a warp's 16 × 8 × 8).
pub const HMMA_1688_FMAS: usize = 16 * 8 * 8 / 32;

impl LoopMix {
    /// The multiply-adds per thread: FP32 FMAs and the tensor cores'.
    pub fn fmas(&self) -> usize {
        self.ffma + HMMA_1688_FMAS * self.hmma
    }

    pub fn ffma_share(&self) -> f64 {
        self.ffma as f64 / self.instrs.max(1) as f64
    }

    pub fn lds_per_ffma(&self) -> f64 {
        self.lds as f64 / self.ffma.max(1) as f64
    }
}

impl Function {
    /// The functions of `nvdisasm -c` output, each starting at its
    /// `.text.NAME:` line.
    pub fn parse_all(sass: &str) -> Vec<Function> {
        let mut fns: Vec<Function> = Vec::new();
        let mut pending: Vec<String> = Vec::new();
        for line in sass.lines() {
            let t = line.trim();
            if let Some(name) = t.strip_prefix(".text.").and_then(|n| n.strip_suffix(':')) {
                fns.push(Function {
                    name: name.to_owned(),
                    ..Default::default()
                });
                pending.clear();
                continue;
            }
            let Some(f) = fns.last_mut() else { continue };
            if let Some(label) = t.strip_suffix(':').filter(|l| l.starts_with(".L")) {
                pending.push(label.to_owned());
            } else if let Some((addr, text)) = instruction(t) {
                for label in pending.drain(..) {
                    f.labels.push((label, addr));
                }
                f.instrs.push(Instr { addr, text });
            }
        }
        fns
    }

    /// The loops, as address ranges `[head, back branch]`: a branch to a
    /// label at or before it.
    pub fn loops(&self) -> Vec<(u64, u64)> {
        self.instrs
            .iter()
            .filter(|i| i.is("BRA"))
            .filter_map(|i| {
                let target = i
                    .text
                    .split_whitespace()
                    .last()?
                    .trim_matches('`')
                    .trim_matches(|c| c == '(' || c == ')');
                let &(_, head) = self.labels.iter().find(|(l, _)| l == target)?;
                (head <= i.addr).then_some((head, i.addr))
            })
            .collect()
    }

    /// The instructions of one loop trip over `[head, end]` (a trip runs
    /// them all when the loop body has no branches; nested loops count once).
    pub fn mix(&self, (head, end): (u64, u64)) -> LoopMix {
        let body = self
            .instrs
            .iter()
            .filter(|i| (head..=end).contains(&i.addr));
        let mut m = LoopMix::default();
        for i in body {
            m.instrs += 1;
            m.ffma += usize::from(i.is("FFMA"));
            m.lds += usize::from(i.is("LDS"));
            m.hmma += usize::from(i.is("HMMA"));
        }
        m
    }

    /// The hot loop: among the innermost loops (containing no other), the
    /// one with the most multiply-adds per thread ([`LoopMix::fmas`]); of
    /// equals, the shortest.
    pub fn hot_loop(&self) -> Option<LoopMix> {
        self.hot_loop_range().map(|r| self.mix(r))
    }

    /// The address range of [`Function::hot_loop`].
    pub fn hot_loop_range(&self) -> Option<(u64, u64)> {
        let loops = self.loops();
        loops
            .iter()
            .copied()
            .filter(|&(h, e)| {
                !loops
                    .iter()
                    .any(|&(h2, e2)| (h2, e2) != (h, e) && h <= h2 && e2 <= e)
            })
            .map(|r| (r, self.mix(r)))
            .filter(|(_, m)| m.fmas() > 0)
            .max_by(|(_, a), (_, b)| a.fmas().cmp(&b.fmas()).then(b.instrs.cmp(&a.instrs)))
            .map(|(r, _)| r)
    }

    /// How often each opcode (with its modifiers, `LDS.U.128`) occurs over
    /// `[head, end]`: a loop's whole instruction mix, to compare two
    /// kernels' hot loops.
    pub fn opcodes(&self, (head, end): (u64, u64)) -> std::collections::BTreeMap<String, usize> {
        let mut m = std::collections::BTreeMap::new();
        for i in self
            .instrs
            .iter()
            .filter(|i| (head..=end).contains(&i.addr))
        {
            *m.entry(i.opcode().to_owned()).or_insert(0) += 1;
        }
        m
    }

    /// The instructions `base` (any modifiers: `LDGSTS` counts
    /// `LDGSTS.E.BYPASS.128`).
    pub fn count(&self, base: &str) -> usize {
        self.instrs.iter().filter(|i| i.is(base)).count()
    }

    /// The instructions `base` of 128-bit accesses (`LDS.128`,
    /// `LDG.E.128`, `STS.128`: one per vector of 16 bytes).
    pub fn wide(&self, base: &str) -> usize {
        self.instrs
            .iter()
            .filter(|i| i.is(base) && i.opcode().split('.').any(|m| m == "128"))
            .count()
    }

    /// Calls of the integer division and remainder routines that the
    /// compiler emits for divisors it does not know (`__cuda_sm20_div_s64`,
    /// `__cuda_sm20_rem_u32`, …).
    pub fn division_calls(&self) -> usize {
        self.instrs
            .iter()
            .filter(|i| i.is("CALL") && (i.text.contains("_div_") || i.text.contains("_rem_")))
            .count()
    }
}

/// `/*0120*/  @P0 FFMA R4, R5, R6, R4 ;  /* 0x… */` → (0x120, the text).
fn instruction(line: &str) -> Option<(u64, String)> {
    let rest = line.strip_prefix("/*")?;
    let (addr, rest) = rest.split_once("*/")?;
    let addr = u64::from_str_radix(addr.trim(), 16).ok()?;
    let text = rest.split(';').next()?.trim();
    (!text.is_empty()).then(|| (addr, text.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of `nvdisasm -c` output (cut from a real kernel).
    const SASS: &str = r#"
	.section	.text.mdh_main,"ax",@progbits
	.sectioninfo	@"SHI_REGISTERS=40"
        .text.mdh_main:
        /*0000*/                   LDC R1, c[0x0][0x28] ;                      /* 0x00000a00ff017b82 */
        /*0010*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm20_div_s64) ;  /* 0x0000001000007944 */
.L_x_3:
        /*0020*/                   LDS R8, [R3] ;                              /* 0x0000000003087984 */
        /*0030*/                   LDS.64 R10, [R3+0x20] ;                     /* 0x0000200003087984 */
        /*0040*/                   FFMA R4, R8, R10, R4 ;                      /* 0x0000000a08047223 */
        /*0050*/                   FFMA R5, R8, R11, R5 ;                      /* 0x0000000b08057223 */
        /*0060*/               @P0 BRA `(.L_x_3) ;                             /* 0xfffffffc00000947 */
        /*0070*/                   EXIT ;                                      /* 0x000000000000794d */
        .text.other:
        /*0000*/                   EXIT ;                                      /* 0x000000000000794d */
"#;

    #[test]
    fn reads_functions_loops_and_calls() {
        let fns = Function::parse_all(SASS);
        assert_eq!(
            fns.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
            ["mdh_main", "other"]
        );
        let f = &fns[0];
        assert_eq!(f.instrs.len(), 8);
        assert_eq!(f.loops(), [(0x20, 0x60)]);
        let m = f.hot_loop().unwrap();
        assert_eq!(
            m,
            LoopMix {
                instrs: 5,
                ffma: 2,
                lds: 2,
                hmma: 0,
            }
        );
        assert_eq!(m.lds_per_ffma(), 1.0);
        assert_eq!(f.division_calls(), 1);
        assert_eq!(fns[1].hot_loop(), None);
        assert!(f.instrs[6].is("BRA") && f.instrs[3].is("LDS") && !f.instrs[3].is("LD"));
    }
}
