//! What each kernel of a CUBIN takes of a multiprocessor: registers,
//! stack, spills and static shared memory. ptxas' verbose report
//! (`-Xptxas -v`, in NVRTC's log) says all of it; the CUBIN itself records
//! all but the spills. Both are read: the CUDA 13.0 toolkit's libnvrtc on
//! an H200 machine once returned an empty log for sources whose reports
//! pip's NVRTC 13.0 and 13.5 give, and a kernel that the report misses is
//! then still described, from the CUBIN.

use std::collections::{HashMap, HashSet};

use mdh_rt::Error;

use super::nvrtc::{check_arch, nvrtc_raw};
use crate::backend;

/// What one kernel of a CUBIN takes: the resources that bound its
/// occupancy, and whether it spills.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelResources {
    /// The kernel's (mangled) name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes of stack frame per thread (local memory: spilled registers,
    /// and arrays indexed at run time).
    pub stack_bytes: u64,
    /// Bytes stored to and loaded from local memory for spilled registers.
    /// `None` where ptxas' report did not cover the kernel (only the CUBIN
    /// was read, which does not record them; `stack_bytes` bounds them).
    pub spill_stores: Option<u64>,
    pub spill_loads: Option<u64>,
    /// Bytes of static shared memory per block.
    pub shared_bytes: u64,
}

impl KernelResources {
    /// Bytes spilled and loaded back per thread, where the report says.
    pub fn spill_bytes(&self) -> Option<u64> {
        Some(self.spill_stores? + self.spill_loads?)
    }
}

/// A CUBIN and what each of its kernels takes.
#[derive(Clone, Debug)]
pub struct CompiledCubin {
    pub cubin: Vec<u8>,
    pub kernels: Vec<KernelResources>,
    /// NVRTC's log (with ptxas' `-v` report).
    pub log: String,
}

/// Compiles CUDA C `source` to a CUBIN for the real architecture `arch`
/// (`"sm_90"`) with ptxas' verbose report (`-Xptxas -v`), and reads per
/// kernel its registers, stack, spills and shared memory. Needs NVRTC, not
/// a GPU: what a kernel will cost on a device, seen without one.
pub fn nvrtc_resources(source: &str, arch: &str) -> Result<CompiledCubin, Error> {
    check_arch(arch)?;
    if !arch.starts_with("sm_") {
        return Err(backend(format!(
            "`{arch}` is a virtual architecture; a CUBIN needs a real one such as sm_90"
        )));
    }
    let opts = [
        format!("--gpu-architecture={arch}"),
        "-Xptxas".to_owned(),
        "-v".to_owned(),
    ];
    let out = nvrtc_raw(source, &opts, true)?;
    let cubin = out.cubin.ok_or_else(|| {
        backend(format!(
            "NVRTC compiled the source for {arch} but returned no CUBIN"
        ))
    })?;
    let mut kernels = parse_ptxas_report(&out.log);
    // A CUBIN this reader does not understand (a future format) leaves the
    // report as it is.
    for k in cubin_resources(&cubin).unwrap_or_default() {
        if !kernels.iter().any(|r| r.name == k.name) {
            kernels.push(k);
        }
    }
    Ok(CompiledCubin {
        kernels,
        cubin,
        log: out.log,
    })
}

/// The kernels of ptxas' `-v` report, which reads per kernel:
/// ```text
/// ptxas info    : Compiling entry function 'mdh_main' for 'sm_90'
/// ptxas info    : Function properties for mdh_main
/// ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
/// ptxas info    : Used 106 registers, used 1 barriers, 8192 bytes smem
/// ```
fn parse_ptxas_report(log: &str) -> Vec<KernelResources> {
    // The number before `unit` in `line` ("0 bytes spill stores").
    fn before(line: &str, unit: &str) -> Option<u64> {
        let at = line.find(unit)?;
        line[..at].split_whitespace().last()?.parse().ok()
    }
    let mut kernels: Vec<KernelResources> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default();
            kernels.push(KernelResources {
                name: name.to_owned(),
                spill_stores: Some(0),
                spill_loads: Some(0),
                ..Default::default()
            });
        } else if let Some(k) = kernels.last_mut() {
            if line.contains("bytes stack frame") {
                k.stack_bytes = before(line, " bytes stack frame").unwrap_or(0);
                k.spill_stores = Some(before(line, " bytes spill stores").unwrap_or(0));
                k.spill_loads = Some(before(line, " bytes spill loads").unwrap_or(0));
            } else if line.contains("Used ") {
                k.registers = before(line, " registers").unwrap_or(0) as u32;
                k.shared_bytes = before(line, " bytes smem").unwrap_or(0);
            }
        }
    }
    kernels
}

/// `.nv.info` attributes (the CUBIN's per-function table): registers per
/// thread, and the stack frame in bytes.
const EIATTR_FRAME_SIZE: u8 = 0x11;
const EIATTR_REGCOUNT: u8 = 0x2f;
/// The `.nv.info` record format with a 16-bit size and a payload.
const EIFMT_SVAL: u8 = 0x04;
/// The shared memory CUDA reserves per block from sm_90 on, which the
/// CUBIN counts in each kernel's shared section (a `.nv.shared.reserved.*`
/// section marks such a CUBIN) and ptxas' report does not.
const RESERVED_SHARED: u64 = 1024;

/// What the CUBIN `cubin` (an ELF file) records of each of its kernels:
/// registers and stack frame (the `.nv.info` table), static shared memory
/// (the size of its `.nv.shared.NAME` section). Spills are not recorded
/// (`None`). An `Err` where `cubin` is not a 64-bit little-endian ELF file
/// or a table runs past its end.
pub fn cubin_resources(cubin: &[u8]) -> Result<Vec<KernelResources>, Error> {
    let elf = Elf::new(cubin)
        .ok_or_else(|| backend("the CUBIN is not a 64-bit little-endian ELF file"))?;
    elf.kernels()
        .ok_or_else(|| backend("the CUBIN's section or symbol tables run past its end"))
}

/// The section headers and string tables of an ELF64 little-endian file,
/// read with bounds checks (a malformed file gives `None`, never a panic).
struct Elf<'a> {
    bytes: &'a [u8],
    sections: Vec<Section>,
    /// The offset of the section-name string table.
    names: usize,
}

struct Section {
    name: u32,
    kind: u32,
    offset: usize,
    size: usize,
    link: u32,
}

const SHT_SYMTAB: u32 = 2;
const STT_FUNC: u8 = 2;

impl<'a> Elf<'a> {
    fn new(bytes: &'a [u8]) -> Option<Self> {
        // ELF magic, class 64-bit, little-endian.
        if bytes.get(..6)? != &b"\x7fELF\x02\x01"[..] {
            return None;
        }
        let shoff = u64_at(bytes, 0x28)? as usize;
        let (entsize, count, names) = (
            u16_at(bytes, 0x3a)? as usize,
            u16_at(bytes, 0x3c)? as usize,
            u16_at(bytes, 0x3e)? as usize,
        );
        let sections = (0..count)
            .map(|i| {
                let at = shoff.checked_add(i.checked_mul(entsize)?)?;
                Some(Section {
                    name: u32_at(bytes, at)?,
                    kind: u32_at(bytes, at + 4)?,
                    offset: u64_at(bytes, at + 24)? as usize,
                    size: u64_at(bytes, at + 32)? as usize,
                    link: u32_at(bytes, at + 40)?,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let names = sections.get(names)?.offset;
        Some(Elf {
            bytes,
            sections,
            names,
        })
    }

    /// The NUL-terminated string at `at`.
    fn text(&self, at: usize) -> Option<&'a str> {
        let rest = self.bytes.get(at..)?;
        std::str::from_utf8(&rest[..rest.iter().position(|&b| b == 0)?]).ok()
    }

    fn section_name(&self, s: &Section) -> Option<&'a str> {
        self.text(self.names.checked_add(s.name as usize)?)
    }

    fn contents(&self, s: &Section) -> Option<&'a [u8]> {
        self.bytes.get(s.offset..s.offset.checked_add(s.size)?)
    }

    fn kernels(&self) -> Option<Vec<KernelResources>> {
        let mut functions = Vec::new();
        let (mut entries, mut shared) = (HashSet::new(), HashMap::new());
        let mut reserved = false;
        let mut info: &[u8] = &[];
        for s in &self.sections {
            let name = self.section_name(s)?;
            if s.kind == SHT_SYMTAB {
                // Functions by symbol index (an `.nv.info` record names
                // its function so).
                let strings = self.sections.get(s.link as usize)?.offset;
                for (i, sym) in self.contents(s)?.chunks_exact(24).enumerate() {
                    if sym[4] & 0xf == STT_FUNC {
                        let name = self.text(strings.checked_add(u32_at(sym, 0)? as usize)?)?;
                        functions.push((i as u32, name));
                    }
                }
            } else if name == ".nv.info" {
                info = self.contents(s)?;
            } else if let Some(k) = name.strip_prefix(".nv.info.") {
                // Only kernels (entry functions) have a table of their own.
                entries.insert(k);
            } else if name.starts_with(".nv.shared.reserved.") {
                reserved = true;
            } else if let Some(k) = name.strip_prefix(".nv.shared.") {
                shared.insert(k, s.size as u64);
            }
        }
        functions.retain(|(_, name)| entries.contains(name));
        let mut kernels: Vec<KernelResources> = functions
            .iter()
            .map(|&(_, name)| {
                let shared = shared.get(name).copied().unwrap_or(0);
                KernelResources {
                    name: name.to_owned(),
                    shared_bytes: if reserved {
                        shared.saturating_sub(RESERVED_SHARED)
                    } else {
                        shared
                    },
                    ..Default::default()
                }
            })
            .collect();
        // Records: format, attribute, then a 16-bit value, or a 16-bit
        // size and that many bytes (EIFMT_SVAL); the two read here hold
        // the function's symbol index and the value.
        let mut rest = info;
        while rest.len() >= 4 {
            let (format, attr, size) = (rest[0], rest[1], u16_at(rest, 2)? as usize);
            let payload = if format == EIFMT_SVAL {
                rest.get(4..4 + size)?
            } else {
                &[]
            };
            if let (Some(sym), Some(value)) = (u32_at(payload, 0), u32_at(payload, 4)) {
                if let Some(k) = functions.iter().position(|&(i, _)| i == sym) {
                    match attr {
                        EIATTR_REGCOUNT => kernels[k].registers = value,
                        EIATTR_FRAME_SIZE => kernels[k].stack_bytes = u64::from(value),
                        _ => {}
                    }
                }
            }
            rest = &rest[4 + payload.len()..];
        }
        Some(kernels)
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_ptxas_report_per_kernel() {
        let log = "ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'mdh_main' for 'sm_90'
ptxas info    : Function properties for mdh_main
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 106 registers, used 1 barriers, 8192 bytes smem
ptxas info    : Compiling entry function 'mdh_combine' for 'sm_90'
ptxas info    : Function properties for mdh_combine
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers";
        assert_eq!(
            parse_ptxas_report(log),
            [
                KernelResources {
                    name: "mdh_main".into(),
                    registers: 106,
                    stack_bytes: 8,
                    spill_stores: Some(4),
                    spill_loads: Some(12),
                    shared_bytes: 8192,
                },
                KernelResources {
                    name: "mdh_combine".into(),
                    registers: 10,
                    spill_stores: Some(0),
                    spill_loads: Some(0),
                    ..Default::default()
                },
            ]
        );
    }

    #[test]
    fn a_file_that_is_no_cubin_is_an_error_not_a_panic() {
        for bytes in [&b""[..], b"\x7fELF", b"\x7fELF\x01\x01", &[0x7f; 100]] {
            assert!(cubin_resources(bytes).is_err(), "{bytes:?}");
        }
        // A header whose section table lies past the end.
        let mut header = b"\x7fELF\x02\x01".to_vec();
        header.resize(0x40, 0);
        header[0x28..0x30].copy_from_slice(&1_000_000u64.to_le_bytes());
        header[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        header[0x3c..0x3e].copy_from_slice(&3u16.to_le_bytes());
        assert!(cubin_resources(&header).is_err());
    }
}
