//! What the generated OpenCL and CUDA wrappers share: choosing the plan for
//! one call (a plan kept by run-time tuning, [`mod@tune`]; else the tuned entry
//! for the device and the nearest sizes, or the heuristic default, fitted
//! to the device's limits), completing the source template, and the launch
//! geometry of its kernels. Backend types stay in the wrappers; this module
//! knows only sizes.

use mdh_rt::desc::{Bound, BufDesc, KernelDesc};
use mdh_rt::gpu_plan::{
    cuda_arch_number, defines, local_align, local_elems, GpuPlan, Resolved, MAX_ITEMS, PASS_ITEMS,
    SCAN_CHUNK,
};
use mdh_rt::names;
use mdh_rt::types::{elem_bytes, DimKind, ScalarType};
use mdh_rt::value::{Buffer, Value};
use mdh_rt::Error;

pub mod bench;
pub mod calls;
mod choice;
pub mod defaults;
mod devices;
mod epilogue;
pub mod model;
pub mod space;
pub mod tune;
pub use calls::{call, launch, Call, CallKernel, Wrapped};
pub use choice::{CallDesc, DeviceMatch, GpuEntry};
pub use devices::tuned_plan;
pub use epilogue::Epilogue;
pub use mdh_gpu::device::{
    BufArg, DeviceCompute, DeviceLimits, GpuDevice, KernelArgs, Launch, MainResources, RawArg,
    RawDevice, WithRaw,
};
pub use tune::{tune, TuneReport};

/// A device buffer of elements `T` on device `D` (`mdh::opencl::Buffer<T>`,
/// `mdh::cuda::CudaSlice<T>`): what the generated `launch` takes.
pub type Buf<D, T> = <D as RawDevice>::Buf<T>;

/// What a generated wrapper knows about its kernel besides its `desc()`.
pub struct KernelInfo {
    /// The source template (see mdh-core's `codegen::gpu`).
    pub template: &'static str,
    /// Bytes of one element of each input buffer (local-memory budget).
    pub in_bytes: &'static [usize],
    /// Bytes of one partial result of each output access.
    pub acc_bytes: &'static [usize],
    /// Whether each output access's operator has a neutral element.
    pub identity: &'static [bool],
    /// The element types of the input buffers, of the output buffers and
    /// of the params: what run-time tuning makes its data of.
    pub in_types: &'static [ScalarType],
    pub out_types: &'static [ScalarType],
    pub param_types: &'static [ScalarType],
}

/// Everything a wrapper needs to launch one call.
#[derive(Clone, Debug)]
pub struct Job {
    /// The complete source: definitions for this call + the template.
    pub source: String,
    /// Work-items in all and per work-group of `mdh_main`.
    pub main_global: usize,
    pub main_local: usize,
    /// Bytes of dynamic shared memory of `mdh_main` (CUDA; 0 when its
    /// local tiles are static arrays, see [`SharedLayout`]).
    pub main_shared: usize,
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
            shared_bytes: 0,
        };
        let mut l = vec![Launch {
            kernel: "mdh_main".into(),
            inputs: true,
            partials: true,
            global: self.main_global,
            local: self.main_local,
            // At most a device's opt-in limit (a few hundred KiB).
            shared_bytes: u32::try_from(self.main_shared).unwrap_or(u32::MAX),
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

/// Shared memory one block may declare statically (`__shared__` arrays),
/// on every architecture; more is dynamic shared memory that the launch
/// opts in to (see [`SharedLayout`]).
pub const CUDA_STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// The shared memory one block may use after opting in, by CUDA
/// architecture (`sm_80`: 163 KiB, `sm_90`: 227 KiB; the CUDA C
/// Programming Guide's table of compute capabilities), for fitting plans
/// without a device; `None` for an architecture not in the table. A
/// device reports its own (`Device::shared_mem_per_block_optin`).
pub fn cuda_optin_shared_bytes(arch: &str) -> Option<u64> {
    let kib = match arch
        .trim_start_matches("sm_")
        .trim_start_matches("compute_")
    {
        "70" | "72" => 96,
        "75" => 64,
        "80" | "87" => 163,
        "86" | "89" => 99,
        "90" | "90a" | "100" | "100a" | "103" => 227,
        "120" => 99,
        _ => return None,
    };
    Some(kib * 1024)
}

/// The limits of CUDA architecture `arch` (e.g. `"sm_90"`) for plans fitted
/// without a device: 1024 threads per block and the architecture's opt-in
/// shared memory (48 KiB for an architecture not in the table).
pub fn cuda_arch_limits(arch: &str) -> DeviceLimits {
    DeviceLimits {
        max_items: MAX_ITEMS,
        local_bytes: cuda_optin_shared_bytes(arch).unwrap_or(CUDA_STATIC_SHARED_BYTES),
        cuda_arch: cuda_arch_number(arch),
        compute: DeviceCompute::default(),
    }
}

fn round_up(n: usize, m: usize) -> usize {
    n.div_ceil(m) * m
}

/// Where `mdh_main`'s local memory lies: the tiles of cached inputs, laid
/// out one after the other (each aligned to [`local_align`]), and the
/// reduction tree when PW dimensions are split across work-items (a partial
/// result and a flag per work-item and output access). On CUDA the tiles
/// are static `__shared__` arrays while all of it fits the 48 KiB a block
/// may declare statically, else they move to dynamic shared memory
/// (`extern __shared__`, at `offsets`; the tree stays static), which the
/// launch sizes and opts in to up to the device's limit. OpenCL kernels
/// declare all of it (the definitions of the dynamic layout go unused).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedLayout {
    /// Per input: the byte offset of its tiles in dynamic shared memory.
    pub offsets: Vec<u64>,
    /// Bytes of the tiles (alignment gaps included).
    pub tiles: u64,
    /// Bytes of the reduction tree.
    pub tree: u64,
    /// Whether the tiles are in dynamic shared memory (on CUDA).
    pub dynamic: bool,
}

impl SharedLayout {
    pub fn new(desc: &KernelDesc, info: &KernelInfo, bound: &Bound, r: &Resolved) -> Self {
        let mut offsets = Vec::new();
        let mut end = 0u64;
        for (&n, &eb) in local_elems(desc, bound, r).iter().zip(info.in_bytes) {
            let bytes = (n as u64).saturating_mul(eb as u64);
            let align = local_align(eb) as u64;
            let at = if bytes == 0 {
                end
            } else {
                end.div_ceil(align) * align
            };
            offsets.push(at);
            end = at.saturating_add(bytes);
        }
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
        SharedLayout {
            offsets,
            tiles: end,
            tree,
            dynamic: end.saturating_add(tree) > CUDA_STATIC_SHARED_BYTES,
        }
    }

    /// All bytes of local memory.
    pub fn total(&self) -> u64 {
        self.tiles.saturating_add(self.tree)
    }

    /// Bytes of dynamic shared memory the launch of `mdh_main` passes.
    pub fn dynamic_bytes(&self) -> u64 {
        if self.dynamic {
            self.tiles
        } else {
            0
        }
    }

    /// The definitions of the layout (see `mdh_rt::names::DYN_SHARED`).
    fn defines(&self) -> String {
        use std::fmt::Write;
        let mut s = format!("#define {} {}\n", names::DYN_SHARED, u8::from(self.dynamic));
        for (b, o) in self.offsets.iter().enumerate() {
            let _ = writeln!(s, "#define {} {o}", names::dyn_offset(b));
        }
        s
    }
}

/// Local memory a resolved plan needs, in bytes ([`SharedLayout::total`]):
/// what plan fitting weighs against a device's local (shared) memory.
pub fn local_bytes(desc: &KernelDesc, info: &KernelInfo, bound: &Bound, r: &Resolved) -> u64 {
    SharedLayout::new(desc, info, bound, r).total()
}

/// A plan resolved at one call's sizes, with its local memory laid out:
/// what fitting checks and the call's job is made of, so that a call
/// resolves its plan and lays out its local memory once.
#[derive(Clone, Debug)]
pub struct CallPlan {
    pub r: Resolved,
    pub shared: SharedLayout,
}

impl CallPlan {
    /// `plan` resolved at the extents of `bound`, its local memory laid out.
    pub fn new(desc: &KernelDesc, info: &KernelInfo, bound: &Bound, plan: &GpuPlan) -> Self {
        let r = plan.resolve(&desc.kinds, &bound.extents);
        let shared = SharedLayout::new(desc, info, bound, &r);
        CallPlan { r, shared }
    }

    /// Whether it fits a device of limits `lim`: its work-items per
    /// work-group, its local memory, and its reduction tree, which stays a
    /// static array on CUDA (see [`SharedLayout`]), within the static limit.
    pub fn fits(&self, lim: DeviceLimits) -> bool {
        self.r.threads_per_group() <= lim.max_items
            && self.shared.total() <= lim.local_bytes
            && self.shared.tree <= CUDA_STATIC_SHARED_BYTES
    }
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
    let p = match forced {
        None => CallDesc {
            desc,
            bound,
            info,
            entries,
            device,
            lim,
        }
        .choose(),
        Some(plan) => fit(desc, bound, info, plan, lim)?,
    };
    Ok(Some(job_for(desc, bound, info, &p)))
}

/// `plan` resolved for one call and laid out, or an `Err` if it is invalid or does not
/// fit the device (work-items per work-group, local memory): what a forced
/// plan must pass, and the tuner's constraint check.
pub fn fit(
    desc: &KernelDesc,
    bound: &Bound,
    info: &KernelInfo,
    plan: &GpuPlan,
    lim: DeviceLimits,
) -> Result<CallPlan, Error> {
    plan.validate(desc).map_err(|e| {
        Error::Argument(format!(
            "kernel `{}`: invalid plan: {}",
            desc.name, e.message
        ))
    })?;
    let p = CallPlan::new(desc, info, bound, plan);
    if !p.fits(lim) {
        let (r, shared) = (&p.r, &p.shared);
        return Err(Error::Argument(format!(
            "kernel `{}`: the plan needs {} work-items and {} bytes of local memory per work-group ({} of them for the reduction tree, which may take at most {CUDA_STATIC_SHARED_BYTES}); the device allows {} and {}: make `items` or `tile` smaller, or cache fewer inputs in local memory",
            desc.name,
            r.threads_per_group(),
            shared.total(),
            shared.tree,
            lim.max_items,
            lim.local_bytes
        )));
    }
    Ok(p)
}

/// The launches of the scan along dimension `d` of extent `n` on `lines`
/// lines (see mdh-core's `codegen::gpu`): a work-group per chunk, and for
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

/// The job of a call's plan (also what the tuner measures).
pub fn job_for(desc: &KernelDesc, bound: &Bound, info: &KernelInfo, p: &CallPlan) -> Job {
    let CallPlan { r, shared } = p;
    let kinds = &desc.kinds;
    let ext = &bound.extents;
    let kept_points = DimKind::kept_points(kinds, ext);
    let pw_groups = r.pw_groups(kinds);
    let source = format!(
        "{}{}\n{}",
        defines(desc, bound, r),
        shared.defines(),
        info.template
    );
    Job {
        source,
        main_global: r.group_count() * r.threads_per_group(),
        main_local: r.threads_per_group(),
        main_shared: shared.dynamic_bytes() as usize,
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

/// The bound of a call with buffers of exactly the sizes' shapes.
pub fn bind_sizes(desc: &KernelDesc, sizes: &[usize]) -> Result<Bound, Error> {
    let lens = |bufs: &[BufDesc]| -> Option<Vec<usize>> {
        bufs.iter()
            .map(|b| {
                b.shape.iter().try_fold(1usize, |a, c| {
                    a.checked_mul(KernelDesc::eval_size(c, sizes)?)
                })
            })
            .collect()
    };
    match (lens(&desc.inputs), lens(&desc.outputs)) {
        (Some(i), Some(o)) => desc.bind(sizes, &i, &o),
        _ => Err(Error::SizeOverflow {
            kernel: desc.name.to_string(),
            what: "a buffer's shape".into(),
        }),
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
    let bound = bind_sizes(desc, sizes);
    let lim = DeviceLimits {
        max_items: MAX_ITEMS,
        local_bytes: CUDA_STATIC_SHARED_BYTES,
        cuda_arch: None,
        compute: DeviceCompute::default(),
    };
    match bound {
        Ok(bound) => {
            let call = CallDesc {
                desc,
                bound: &bound,
                info,
                entries,
                device: "*",
                lim,
            };
            job_for(desc, &bound, info, &call.choose()).source
        }
        Err(e) => format!("#error \"{}\"\n", e.to_string().replace('"', "'")),
    }
}

// ------------------------------------------------------------------ untyped launches

/// The bytes of a buffer as the device stores them (bool as bytes 0 / 1).
pub fn to_bytes(b: &Buffer) -> Vec<u8> {
    macro_rules! bytes {
        ($($V:ident),*) => {
            match b {
                $(Buffer::$V(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),)*
                Buffer::Bool(v) => v.iter().map(|&x| u8::from(x)).collect(),
            }
        };
    }
    bytes!(F32, F64, F16, Bf16, I8, I16, I32, I64, U8, U16, U32, U64)
}

/// Stores device bytes back into a buffer of the same type and length.
pub fn from_bytes(b: &mut Buffer, bytes: &[u8]) {
    macro_rules! back {
        ($($V:ident $t:ty),*) => {
            match b {
                $(Buffer::$V(v) => {
                    let chunks = bytes.chunks_exact(std::mem::size_of::<$t>());
                    for (x, c) in v.iter_mut().zip(chunks) {
                        let mut a = [0u8; std::mem::size_of::<$t>()];
                        a.copy_from_slice(c);
                        *x = <$t>::from_ne_bytes(a);
                    }
                })*
                Buffer::Bool(v) => v.iter_mut().zip(bytes).for_each(|(x, &c)| *x = c != 0),
            }
        };
    }
    back!(F32 f32, F64 f64, F16 mdh_rt::value::f16, Bf16 mdh_rt::value::bf16, I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32, U64 u64)
}

/// The bytes of a param as the kernel takes it (bool as a byte, usize as
/// 64 bits).
pub fn param_bytes(v: &Value) -> Vec<u8> {
    macro_rules! bytes {
        ($($V:ident),*) => {
            match *v {
                $(Value::$V(x) => x.to_ne_bytes().to_vec(),)*
                Value::Usize(x) => (x as u64).to_ne_bytes().to_vec(),
                Value::Bool(x) => vec![u8::from(x)],
            }
        };
    }
    bytes!(F32, F64, F16, Bf16, I8, I16, I32, I64, U8, U16, U32, U64)
}

/// A [`Job`] compiled and its buffers on a device, ready to be run
/// repeatedly: inputs and outputs as given, zeroed partial results.
pub struct Loaded<D: RawDevice> {
    program: D::Program,
    launches: Vec<Launch>,
    /// Inputs, outputs, partial results: each with its element bytes.
    buffers: Vec<(D::Buffer, usize)>,
    counts: [usize; 3],
    params: Vec<Value>,
}

impl<D: RawDevice> Loaded<D> {
    /// Compiles `job` and uploads its buffers; `acc_bytes`: the bytes of a
    /// partial result per output access ([`KernelInfo::acc_bytes`]).
    pub fn new(
        dev: &D,
        job: &Job,
        acc_bytes: &[usize],
        inputs: &[Buffer],
        outputs: &[Buffer],
        params: &[Value],
    ) -> Result<Loaded<D>, Error> {
        let program = dev.compile(&job.source)?;
        let mut buffers = Vec::new();
        for b in inputs.iter().chain(outputs) {
            buffers.push((dev.upload(&to_bytes(b))?, elem_bytes(b.ty())));
        }
        for &eb in acc_bytes {
            let bytes = calls::bytes(job.partial_len, eb)?;
            buffers.push((dev.upload(&vec![0u8; bytes])?, eb));
        }
        Ok(Loaded {
            program,
            launches: job.launches(),
            buffers,
            counts: [inputs.len(), outputs.len(), acc_bytes.len()],
            params: params.to_vec(),
        })
    }

    /// Runs every launch of the job once, in order; returns their summed
    /// device time.
    pub fn run(&self, dev: &D) -> Result<std::time::Duration, Error> {
        let [i, o, p] = self.counts;
        let bufs = self.buffers.len();
        let mut total = std::time::Duration::ZERO;
        for l in &self.launches {
            let args: Vec<RawArg<'_, D::Buffer>> = l
                .arg_order(i, o, p, self.params.len())
                .into_iter()
                .map(|a| match self.buffers.get(a) {
                    Some((buf, elem)) => RawArg::Buffer { buf, elem: *elem },
                    None => RawArg::Scalar(self.params[a - bufs]),
                })
                .collect();
            total += dev.launch(&self.program, l, &args)?;
        }
        Ok(total)
    }

    /// What the compiler reported of the job's `mdh_main`, if known.
    pub fn resources(&self, dev: &D) -> Option<MainResources> {
        dev.resources(&self.program)
    }

    /// Copies the outputs back into `outputs` (the buffers given to
    /// [`Loaded::new`], same types and lengths).
    pub fn read(&self, dev: &D, outputs: &mut [Buffer]) -> Result<(), Error> {
        let [i, ..] = self.counts;
        for (b, (buf, _)) in outputs.iter_mut().zip(&self.buffers[i..]) {
            let mut bytes = to_bytes(b);
            dev.download(buf, &mut bytes)?;
            from_bytes(b, &bytes);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_arguments_follow_one_order() {
        let main = Launch {
            kernel: "mdh_main".into(),
            inputs: true,
            partials: true,
            global: 64,
            local: 64,
            shared_bytes: 0,
        };
        assert_eq!(main.arg_order(2, 1, 1, 1), vec![0, 1, 2, 3, 4]);
        let scan = Launch {
            inputs: false,
            partials: false,
            ..main.clone()
        };
        assert_eq!(scan.arg_order(2, 1, 1, 1), vec![2, 4]);
    }

    #[test]
    fn bytes_round_trip() {
        let b = Buffer::F32(vec![1.5, -2.0]);
        let mut c = Buffer::F32(vec![0.0; 2]);
        from_bytes(&mut c, &to_bytes(&b));
        assert_eq!(b, c);
        let b = Buffer::Bool(vec![true, false]);
        assert_eq!(to_bytes(&b), vec![1, 0]);
        assert_eq!(param_bytes(&Value::Usize(3)).len(), 8);
    }
}
