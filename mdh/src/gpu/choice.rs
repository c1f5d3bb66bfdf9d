//! Which plan a GPU call takes: the kernel's config entries ([`GpuEntry`])
//! ranked by the sizes they were tuned for, then by how they match the
//! device ([`DeviceMatch`]: named for it, tuned on another device of its
//! CUDA architecture, for any device), else the default plan fitted to the
//! device; and why, for `MDH_EXPLAIN=1` ([`explain_choice`]).

use mdh_rt::desc::{Bound, KernelDesc};
use mdh_rt::gpu_plan::GpuPlan;

use super::{defaults, CallPlan, DeviceLimits, KernelInfo};
use crate::machine::{size_distance, sizes_text};

/// A tuned GPU plan from the kernel's config.
pub struct GpuEntry {
    pub plan: GpuPlan,
    /// A device name pattern: `*`, or a part of the device's name.
    pub device: &'static str,
    /// The CUDA architecture it was tuned on, as a compute capability
    /// (`arch: sm_90` in the config: 90): it also serves the other devices
    /// of that architecture.
    pub arch: Option<u32>,
    pub sizes: Option<&'static [usize]>,
}

/// A GPU call as the choice of its plan sees it: the kernel (`desc`,
/// `info`), the call's sizes (`bound`), the kernel's config entries, and the
/// device it runs on (its name and limits).
#[derive(Clone, Copy)]
pub struct CallDesc<'a> {
    pub desc: &'a KernelDesc,
    pub bound: &'a Bound,
    pub info: &'a KernelInfo,
    pub entries: &'a [GpuEntry],
    pub device: &'a str,
    pub lim: DeviceLimits,
}

/// How a config entry matches the device a call runs on, best first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceMatch {
    /// `device:` is a part of the device's name: tuned on such a device.
    Named,
    /// Tuned on another device of the same CUDA architecture (`arch:`).
    SameArch,
    /// `device: "*"`: for any device.
    Any,
}

impl DeviceMatch {
    /// How `e` matches the device called `device` with limits `lim`;
    /// `None`: not at all (tuned on another device, of another or unknown
    /// architecture).
    pub fn of(e: &GpuEntry, device: &str, lim: DeviceLimits) -> Option<DeviceMatch> {
        if e.device == "*" {
            Some(DeviceMatch::Any)
        } else if device.to_lowercase().contains(&e.device.to_lowercase()) {
            Some(DeviceMatch::Named)
        } else if e.arch.is_some() && e.arch == lim.cuda_arch {
            Some(DeviceMatch::SameArch)
        } else {
            None
        }
    }
}

impl CallDesc<'_> {
    /// The plan for the call, resolved and laid out (see
    /// [`CallDesc::chosen_plan`]): the entry's as its fit was checked.
    pub fn choose(&self) -> CallPlan {
        match self.chosen_entry() {
            Some((.., p)) => p,
            None => CallPlan::new(self.desc, self.info, self.bound, &self.default_plan()),
        }
    }

    /// The plan for the call: the entry with the nearest sizes that is
    /// valid and fits the device, at equal distance one tuned on this
    /// device before one tuned on another device of its architecture before
    /// a `*` one; else the fitted default.
    pub fn chosen_plan(&self) -> GpuPlan {
        match self.chosen_entry() {
            Some((i, ..)) => self.entries[i].plan.clone(),
            None => self.default_plan(),
        }
    }

    /// The fitted default plan of the call.
    fn default_plan(&self) -> GpuPlan {
        defaults::default_plan(self.desc, self.bound, self.info, self.device, self.lim)
    }

    /// The entry [`CallDesc::chosen_plan`] takes, by index into `entries`,
    /// how it matches the device and its plan for the call; `None`: the
    /// fitted default plan.
    fn chosen_entry(&self) -> Option<(usize, DeviceMatch, CallPlan)> {
        let CallDesc {
            desc,
            bound,
            info,
            entries,
            device,
            lim,
        } = *self;
        let mut candidates: Vec<(f64, DeviceMatch, usize)> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.plan.validate(desc).is_ok())
            .filter_map(|(i, e)| {
                let m = DeviceMatch::of(e, device, lim)?;
                // As on a GPU nobody tuned for (as the CPU entries' rule).
                if m != DeviceMatch::Any && crate::machine::ignore_device_entries() {
                    return None;
                }
                Some((size_distance(e.sizes, &bound.sizes), m, i))
            })
            .collect();
        // A stable sort: among equals, the file's order.
        candidates.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        candidates.into_iter().find_map(|(_, m, i)| {
            let p = CallPlan::new(desc, info, bound, &entries[i].plan);
            p.fits(lim).then_some((i, m, p))
        })
    }

    /// Which plan the call takes and why, in one line (what
    /// `MDH_EXPLAIN=1` prints when a call is prepared).
    pub fn explain_choice(&self) -> String {
        let (desc, device) = (self.desc, self.device);
        let at = sizes_text(&desc.size_params, &self.bound.sizes);
        let what = match self.chosen_entry() {
            None => format!(
                "the analytical default plan: no entry for this device, its architecture or any \
                 device is valid here and fits it (MDH_AUTOTUNE=1 tunes this call on the device: \
                 docs/guide/03-tuning.md, \"Run-time tuning on the user's GPU\"); {}",
                defaults::explain(desc, self.bound, self.info, device, self.lim)
            ),
            Some((i, m, _)) => {
                let e = &self.entries[i];
                let arch = e.arch.map_or(String::new(), |a| format!(", arch sm_{a}"));
                let why = match m {
                    DeviceMatch::Named => "tuned on this device".to_string(),
                    DeviceMatch::SameArch => format!(
                        "tuned on another device of its architecture (sm_{})",
                        e.arch.unwrap_or_default()
                    ),
                    DeviceMatch::Any => "for any device".to_string(),
                };
                let sizes = e.sizes.map_or("for any sizes".to_string(), |s| {
                    format!("sizes nearest {}", sizes_text(&desc.size_params, s))
                });
                format!("the entry for device {:?}{arch}: {why}; {sizes}", e.device)
            }
        };
        format!("{} at {at} on {device}: {what}", desc.name)
    }
}

// The test builds its kernel with the interpreter's front end.
#[cfg(all(test, feature = "reference"))]
mod tests {
    use super::*;
    use crate::gpu::{bind_sizes, cuda_arch_limits};

    /// Which entry a call takes: nearest sizes first; at equal distance
    /// one named for the device, then one tuned on another device of its
    /// CUDA architecture, then `*`; an entry of another architecture (or
    /// of an unknown one, on OpenCL) never.
    #[test]
    fn entries_of_the_same_architecture_serve_other_devices() {
        use mdh_core::codegen::c_expr::Dialect;
        let k = mdh_core::fixtures::matmul();
        let desc = KernelDesc::from_kernel(&k);
        let info = crate::reference::kernel_info(&k, Dialect::Cuda);
        let sizes = [256, 256, 256];
        let bound = bind_sizes(&desc, &sizes).unwrap();
        let plan = |w: usize| GpuPlan {
            items: vec![w, 8, 1],
            tile: vec![w, 8, 8],
            ..GpuPlan::default_for(&desc)
        };
        let entry = |w, device, arch, sizes| GpuEntry {
            plan: plan(w),
            device,
            arch,
            sizes,
        };
        const AT: Option<&[usize]> = Some(&[256, 256, 256]);
        const FAR: Option<&[usize]> = Some(&[8, 8, 8]);
        let entries = [
            entry(1, "*", None, AT),
            entry(2, "NVIDIA H100 80GB HBM3", Some(90), AT),
            entry(4, "NVIDIA A100-SXM4-80GB", Some(80), AT),
            entry(8, "NVIDIA H200", Some(90), FAR),
        ];
        let (h200, h100, l4) = ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA L4");
        let sm = cuda_arch_limits;
        // The call at these sizes; each check names its entries and device.
        let at = CallDesc {
            desc: &desc,
            bound: &bound,
            info,
            entries: &[],
            device: "",
            lim: sm("sm_90"),
        };
        let chosen = |entries, device, lim| {
            CallDesc {
                entries,
                device,
                lim,
                ..at
            }
            .chosen_plan()
        };
        // The H100's own entry; on an H200 the H100's (same architecture)
        // before `*`, and before the H200's own at far sizes.
        assert_eq!(chosen(&entries, h100, sm("sm_90")), plan(2));
        assert_eq!(chosen(&entries, h200, sm("sm_90")), plan(2));
        assert_eq!(
            DeviceMatch::of(&entries[1], h200, sm("sm_90")),
            Some(DeviceMatch::SameArch)
        );
        // An A100 takes its own; a device of another architecture `*`.
        assert_eq!(
            chosen(&entries, "NVIDIA A100-SXM4-80GB", sm("sm_80")),
            plan(4)
        );
        assert_eq!(chosen(&entries, l4, sm("sm_89")), plan(1));
        assert_eq!(DeviceMatch::of(&entries[1], l4, sm("sm_89")), None);
        // OpenCL devices have no CUDA architecture: names and `*` only.
        let ocl = DeviceLimits {
            cuda_arch: None,
            ..sm("sm_90")
        };
        assert_eq!(chosen(&entries, h200, ocl), plan(1));
        // Without a `*` entry the H200's own at far sizes still beats
        // the default, and the H100's is taken only by same-architecture
        // devices.
        assert_eq!(chosen(&entries[1..], h200, sm("sm_90")), plan(2));
        assert_eq!(chosen(&entries[3..], h200, sm("sm_90")), plan(8));
        let default = chosen(&[], l4, sm("sm_89"));
        assert_ne!(default, plan(2));
        assert_eq!(chosen(&entries[1..2], l4, sm("sm_89")), default);
        // What MDH_EXPLAIN=1 says of each choice.
        let say = |entries, device, lim| {
            CallDesc {
                entries,
                device,
                lim,
                ..at
            }
            .explain_choice()
        };
        assert_eq!(
            say(&entries, h200, sm("sm_90")),
            "matmul at I=256, K=256, J=256 on NVIDIA H200: the entry for device \"NVIDIA H100 80GB HBM3\", arch sm_90: tuned on another device of its architecture (sm_90); sizes nearest I=256, K=256, J=256"
        );
        let s = say(&entries, h100, sm("sm_90"));
        assert!(s.contains(": tuned on this device;"), "{s}");
        let s = say(&entries, l4, sm("sm_89"));
        assert!(s.contains("device \"*\": for any device;"), "{s}");
        let s = say(&entries[1..2], l4, sm("sm_89"));
        assert!(s.contains("the analytical default plan: no entry for this device, its architecture or any device is valid here and fits it (MDH_AUTOTUNE=1 tunes"), "{s}");
        assert!(
            s.contains("class contraction, ranked by the throughput model (derived), FP32:\n  -> "),
            "{s}"
        );
    }
}
