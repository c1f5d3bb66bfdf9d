//! What the generated OpenCL and CUDA wrappers share: choosing the plan for
//! one call (the tuned entry for the device and the nearest sizes, or the
//! heuristic default, fitted to the device's limits), completing the source
//! template, and the launch geometry of its kernels. Backend types stay in
//! the wrappers; this module knows only sizes.

use mdh_core::codegen::gpu::{PASS_ITEMS, SCAN_CHUNK};
use mdh_core::desc::{Bound, KernelDesc};
use mdh_core::gpu_plan::{defines, local_elems, GpuPlan, Resolved};
use mdh_core::spec::DimKind;
use mdh_core::Error;

/// What a generated wrapper knows about its kernel besides its `desc()`.
pub struct KernelInfo {
    /// The source template (see `mdh_core::codegen::gpu`).
    pub template: &'static str,
    /// Bytes of one element of each input buffer (local-memory budget).
    pub in_bytes: &'static [usize],
    /// Bytes of one partial result of each output access.
    pub acc_bytes: &'static [usize],
    /// Whether each output access's operator has a neutral element.
    pub identity: &'static [bool],
}

/// A tuned GPU plan from the kernel's config.
pub struct GpuEntry {
    pub plan: GpuPlan,
    /// A device name pattern: `*`, or a part of the device's name.
    pub device: &'static str,
    pub sizes: Option<&'static [usize]>,
}

/// The limits of the device a call runs on.
#[derive(Clone, Copy, Debug)]
pub struct DeviceLimits {
    pub max_items: usize,
    pub local_bytes: u64,
}

/// Everything a wrapper needs to launch one call.
#[derive(Clone, Debug)]
pub struct Job {
    /// The complete source: definitions for this call + the template.
    pub source: String,
    /// Work-items in all and per work-group of `mdh_main`.
    pub main_global: usize,
    pub main_local: usize,
    /// Elements of each output access's buffer of partial results (1 when
    /// unused: devices refuse empty buffers).
    pub partial_len: usize,
    /// Work-items of `mdh_combine`, when the second pass runs.
    pub combine_global: Option<usize>,
    /// The kernels of the scans of PS dimensions, in launch order, with
    /// their work-items in all.
    pub scans: Vec<(String, usize)>,
    /// Work-items per work-group of the passes.
    pub pass_local: usize,
}

/// One kernel launch of a [`Job`], as 1-D ranges. Its arguments, in this
/// order: the input buffers (when `inputs`), the output buffers, the buffers
/// of partial results (when `partials`), the params.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Launch {
    pub kernel: String,
    pub inputs: bool,
    pub partials: bool,
    /// Work-items in all (a multiple of `local`) and per work-group.
    pub global: usize,
    pub local: usize,
}

impl Launch {
    /// The launch as CUDA grid and block dimensions (blocks along x).
    pub fn grid_block(&self) -> Result<([u32; 3], [u32; 3]), Error> {
        let dim = |n: usize| {
            u32::try_from(n).map_err(|_| {
                Error::Argument(format!(
                    "launching `{}`: {n} blocks or threads exceed CUDA's 32-bit launch dimensions; use smaller sizes or a plan with fewer, larger blocks",
                    self.kernel
                ))
            })
        };
        let blocks = self.global / self.local.max(1);
        Ok(([dim(blocks)?, 1, 1], [dim(self.local)?, 1, 1]))
    }
}

impl Job {
    /// The launches of the call, in order: `mdh_main`, the second pass
    /// across work-groups, the scans.
    pub fn launches(&self) -> Vec<Launch> {
        let pass = |kernel: String, partials: bool, global: usize| Launch {
            kernel,
            inputs: false,
            partials,
            global,
            local: self.pass_local,
        };
        let mut l = vec![Launch {
            kernel: "mdh_main".into(),
            inputs: true,
            partials: true,
            global: self.main_global,
            local: self.main_local,
        }];
        l.extend(
            self.combine_global
                .map(|g| pass("mdh_combine".into(), true, g)),
        );
        l.extend(
            self.scans
                .iter()
                .map(|(kernel, g)| pass(kernel.clone(), false, *g)),
        );
        l
    }
}

/// What the generated wrappers ask of a device of either runtime.
pub trait GpuDevice {
    /// The limits plans are fitted to.
    fn limits(&self) -> DeviceLimits;
}

#[cfg(feature = "opencl")]
impl GpuDevice for mdh_gpu::opencl::Device {
    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            max_items: self.max_work_group_size(),
            local_bytes: self.local_mem_bytes(),
        }
    }
}

/// Shared memory one block may declare statically (`__shared__` arrays, as
/// the generated CUDA C does), on every architecture.
pub const CUDA_STATIC_SHARED_BYTES: u64 = 48 * 1024;

#[cfg(feature = "cuda")]
impl GpuDevice for mdh_gpu::cuda::Device {
    fn limits(&self) -> DeviceLimits {
        DeviceLimits {
            max_items: self.max_threads_per_block(),
            local_bytes: self.shared_mem_per_block().min(CUDA_STATIC_SHARED_BYTES),
        }
    }
}

fn round_up(n: usize, m: usize) -> usize {
    n.div_ceil(m) * m
}

fn distance(a: &[usize], b: &[usize]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| ((x.max(1) as f64).ln() - (y.max(1) as f64).ln()).powi(2))
        .sum()
}

/// Local memory a resolved plan needs, in bytes: the tiles of cached
/// inputs and, when PW dimensions are split across work-items, the
/// reduction tree (a partial result and a flag per work-item and output
/// access).
fn local_bytes(desc: &KernelDesc, info: &KernelInfo, bound: &Bound, r: &Resolved) -> u64 {
    let tiles: u64 = local_elems(desc, bound, r)
        .iter()
        .zip(info.in_bytes)
        .map(|(&n, &eb)| (n as u64).saturating_mul(eb as u64))
        .fold(0, u64::saturating_add);
    let pw_items: usize = (0..r.items.len())
        .filter(|&x| desc.kinds[x] == DimKind::Pw)
        .map(|x| r.items[x])
        .product();
    let tree = if pw_items > 1 {
        let per_item: usize = info.acc_bytes.iter().map(|b| b + 1).sum();
        (r.threads_per_group() * per_item) as u64
    } else {
        0
    };
    tiles.saturating_add(tree)
}

/// The default plan shrunk until it fits the device: fewer work-items,
/// then no local memory.
fn fitted_default(
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    lim: DeviceLimits,
) -> Resolved {
    let mut plan = GpuPlan::default_for(desc);
    loop {
        let r = plan.resolve(&desc.kinds, &bound.extents);
        let fits = r.threads_per_group() <= lim.max_items
            && local_bytes(desc, info, bound, &r) <= lim.local_bytes;
        if fits {
            return r;
        }
        if plan.local.iter().any(|&l| l) {
            plan.local.iter_mut().for_each(|l| *l = false);
            continue;
        }
        // Halve the largest work-item count (tiles along with it).
        let x = (0..plan.items.len())
            .max_by_key(|&x| r.items[x])
            .unwrap_or(0);
        if r.items[x] <= 1 {
            return r;
        }
        plan.items[x] = r.items[x] / 2;
        plan.tile[x] = plan.tile[x].div_ceil(2).max(plan.items[x]);
    }
}

/// The plan for one call: the entry for this device with the nearest sizes
/// that is valid and fits the device, else the fitted default.
pub fn choose(
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    entries: &[GpuEntry],
    device: &str,
    lim: DeviceLimits,
) -> Resolved {
    let name = device.to_lowercase();
    let mut candidates: Vec<&GpuEntry> = entries
        .iter()
        .filter(|e| e.device == "*" || name.contains(&e.device.to_lowercase()))
        .filter(|e| e.plan.validate(desc).is_ok())
        .collect();
    candidates.sort_by(|a, b| {
        let da = a.sizes.map_or(f64::MAX, |s| distance(s, &bound.sizes));
        let db = b.sizes.map_or(f64::MAX, |s| distance(s, &bound.sizes));
        da.total_cmp(&db)
    });
    for e in candidates {
        let r = e.plan.resolve(&desc.kinds, &bound.extents);
        if r.threads_per_group() <= lim.max_items
            && local_bytes(desc, info, bound, &r) <= lim.local_bytes
        {
            return r;
        }
    }
    fitted_default(desc, bound, info, lim)
}

/// The source and launch geometry of one call; `None` when there is
/// nothing to compute (a kept dimension is empty). `forced`: this plan
/// instead of the configured ones (an `Err` if it is invalid or does not fit
/// the device).
pub fn job(
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    entries: &[GpuEntry],
    forced: Option<&GpuPlan>,
    device: &str,
    lim: DeviceLimits,
) -> Result<Option<Job>, Error> {
    let kinds = &desc.kinds;
    let ext = &bound.extents;
    if (0..ext.len()).any(|x| kinds[x].is_kept() && ext[x] == 0) {
        return Ok(None);
    }
    if let Some(dim) = (0..ext.len()).find(|&x| ext[x] == 0) {
        if info.identity.iter().any(|&i| !i) {
            return Err(Error::EmptyReduction {
                kernel: desc.name.to_string(),
                dim,
            });
        }
    }
    let r = match forced {
        None => choose(desc, bound, info, entries, device, lim),
        Some(plan) => {
            plan.validate(desc).map_err(|e| {
                Error::Argument(format!(
                    "kernel `{}`: invalid plan: {}",
                    desc.name, e.message
                ))
            })?;
            let r = plan.resolve(kinds, ext);
            let bytes = local_bytes(desc, info, bound, &r);
            if r.threads_per_group() > lim.max_items || bytes > lim.local_bytes {
                return Err(Error::Argument(format!(
                    "kernel `{}`: the plan needs {} work-items and {bytes} bytes of local memory per work-group; the device allows {} and {}",
                    desc.name,
                    r.threads_per_group(),
                    lim.max_items,
                    lim.local_bytes
                )));
            }
            r
        }
    };
    Ok(Some(job_for(desc, bound, info, &r)))
}

/// The launches of the scan along dimension `d` of extent `n` on `lines`
/// lines (see `mdh_core::codegen::gpu`): a work-group per chunk, and for
/// lines of several chunks a work-group per line (the carries) and a
/// work-item per element after the first chunk.
fn scan_launches(d: usize, n: usize, lines: usize) -> Vec<(String, usize)> {
    let mut l = vec![(
        format!("mdh_scan{d}"),
        lines * n.div_ceil(SCAN_CHUNK) * PASS_ITEMS,
    )];
    if n > SCAN_CHUNK {
        l.push((format!("mdh_scan{d}_carry"), lines * PASS_ITEMS));
        l.push((
            format!("mdh_scan{d}_add"),
            round_up(lines * (n - SCAN_CHUNK), PASS_ITEMS),
        ));
    }
    l
}

/// The job of a given resolved plan (also what the tuner measures).
pub fn job_for(desc: &KernelDesc, bound: &Bound, info: &KernelInfo, r: &Resolved) -> Job {
    let kinds = &desc.kinds;
    let ext = &bound.extents;
    let kept_points: usize = (0..ext.len())
        .filter(|&x| kinds[x].is_kept())
        .map(|x| ext[x])
        .product();
    let pw_groups = r.pw_groups(kinds);
    let source = format!("{}\n{}", defines(desc, bound, r), info.template);
    Job {
        source,
        main_global: r.group_count() * r.threads_per_group(),
        main_local: r.threads_per_group(),
        partial_len: if pw_groups > 1 {
            pw_groups * kept_points
        } else {
            1
        },
        combine_global: (pw_groups > 1).then(|| round_up(kept_points, PASS_ITEMS)),
        scans: (0..ext.len())
            .rev()
            .filter(|&x| kinds[x] == DimKind::Ps && ext[x] > 1)
            .flat_map(|x| scan_launches(x, ext[x], kept_points / ext[x]))
            .collect(),
        pass_local: PASS_ITEMS,
    }
}

/// `NAME::{opencl,cuda}::source(&Sizes)`: the complete source for these
/// sizes on a device without limits (`#error` with the reason when the sizes
/// do not fit the kernel).
pub fn source(
    desc: &KernelDesc,
    info: &KernelInfo,
    entries: &[GpuEntry],
    sizes: &[usize],
) -> String {
    let lens = |bufs: &[mdh_core::desc::BufDesc]| -> Option<Vec<usize>> {
        bufs.iter()
            .map(|b| {
                b.shape.iter().try_fold(1usize, |a, c| {
                    a.checked_mul(KernelDesc::eval_size(c, sizes)?)
                })
            })
            .collect()
    };
    let bound = match (lens(&desc.inputs), lens(&desc.outputs)) {
        (Some(i), Some(o)) => desc.bind(sizes, &i, &o),
        _ => Err(Error::SizeOverflow {
            kernel: desc.name.to_string(),
            what: "a buffer's shape".into(),
        }),
    };
    let lim = DeviceLimits {
        max_items: mdh_core::gpu_plan::MAX_ITEMS,
        local_bytes: CUDA_STATIC_SHARED_BYTES,
    };
    match bound {
        Ok(bound) => {
            let r = choose(desc, &bound, info, entries, "*", lim);
            job_for(desc, &bound, info, &r).source
        }
        Err(e) => format!("#error \"{}\"\n", e.to_string().replace('"', "'")),
    }
}
