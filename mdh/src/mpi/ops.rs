//! The combine operators as MPI operations, and the typed outputs the
//! collectives move (object-safe, so that one call handles outputs of
//! different element types).

use std::os::raw::{c_int, c_void};

use mpi::collective::{SystemOperation, UnsafeUserOperation};
use mpi::datatype::{Equivalence, PartitionMut};
use mpi::ffi::MPI_Datatype;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::{CommunicatorCollectives, Root};

use mdh_rt::desc::Linear;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes sent by this process's collectives ([`super::bytes_sent`]).
pub(crate) static BYTES_SENT: AtomicU64 = AtomicU64::new(0);

/// Counts the bytes of a send buffer of `n` elements of `T`.
fn count_sent<T>(n: usize) {
    let bytes = (n * std::mem::size_of::<T>()) as u64;
    BYTES_SENT.fetch_add(bytes, Ordering::Relaxed);
}

/// An element type the collectives move, as MPI's datatype `Bits`: MPI's
/// own types as themselves, the 16-bit floats (which MPI has not) as their
/// bits, combined only by user operations (`Op::builtin` is `None` for
/// them).
///
/// # Safety
///
/// `Self` and `Bits` have the same size and alignment, and every bit
/// pattern of one is a valid value of the other.
pub unsafe trait Wire: Copy + Default + 'static {
    type Bits: Equivalence + Copy;
}

macro_rules! wire_as_itself {
    ($($t:ty),*) => {$(
        // SAFETY: the same type.
        unsafe impl Wire for $t {
            type Bits = $t;
        }
    )*};
}
wire_as_itself!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool);

// SAFETY: `half`'s types are `repr(transparent)` over a `u16`, and every
// `u16` is one of their values.
unsafe impl Wire for mdh_rt::value::f16 {
    type Bits = u16;
}
// SAFETY: as for `f16`.
unsafe impl Wire for mdh_rt::value::bf16 {
    type Bits = u16;
}

/// `v` as MPI moves it.
fn bits<T: Wire>(v: &[T]) -> &[T::Bits] {
    // SAFETY: `Wire`'s promise (same layout, every pattern valid); the
    // borrow of `v` guards the slice.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const T::Bits, v.len()) }
}

/// `v` as MPI moves it, to be written.
fn bits_mut<T: Wire>(v: &mut [T]) -> &mut [T::Bits] {
    // SAFETY: as in `bits`, with the unique borrow of `v`.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut T::Bits, v.len()) }
}

/// A combine operator over `T`, as generated for a kernel's output access.
pub trait Combine<T> {
    fn combine(a: T, b: T) -> T;
}

/// MPI's signature for user operations: `inout[i] = combine(in[i], inout[i])`
/// (`in` holds the lower ranks' values, so order is kept).
unsafe extern "C" fn apply<T: Copy, C: Combine<T>>(
    input: *mut c_void,
    inout: *mut c_void,
    len: *mut c_int,
    _ty: *mut MPI_Datatype,
) {
    // SAFETY: MPI passes two buffers of `*len` elements of the datatype the
    // collective was called with, which is `T`'s (`Output<T>` only calls
    // collectives over `[T]`), and they do not overlap.
    unsafe {
        let n = (*len).max(0) as usize;
        let a = std::slice::from_raw_parts(input as *const T, n);
        let b = std::slice::from_raw_parts_mut(inout as *mut T, n);
        for (x, y) in a.iter().zip(b) {
            *y = C::combine(*x, *y);
        }
    }
}

/// The built-in operators MPI has (for numbers, not `bool`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    Sum,
    Product,
    Max,
    Min,
}

/// One output access's combine operator: how MPI applies it, and the
/// function itself for local fix-ups.
pub struct Op<T> {
    builtin: Option<Builtin>,
    user: unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_int, *mut MPI_Datatype),
    commutative: bool,
    combine: fn(T, T) -> T,
}

impl<T: Copy + 'static> Op<T> {
    /// The operator `C`: an MPI built-in if `builtin` names one, else a
    /// user operation over `C::combine` (`commutative` for PW, not for PS).
    pub fn new<C: Combine<T>>(builtin: Option<Builtin>, commutative: bool) -> Self {
        Op {
            builtin,
            user: apply::<T, C>,
            commutative,
            combine: C::combine,
        }
    }

    fn system(&self) -> Option<SystemOperation> {
        self.builtin.map(|b| match b {
            Builtin::Sum => SystemOperation::sum(),
            Builtin::Product => SystemOperation::product(),
            Builtin::Max => SystemOperation::max(),
            Builtin::Min => SystemOperation::min(),
        })
    }

    fn user(&self) -> UnsafeUserOperation {
        // SAFETY: `user` is `apply::<T, C>`, which MPI calls only in the
        // collectives of `Output<T>`, all over buffers of `T` (moved as
        // `T::Bits`, of `T`'s layout: `Wire`).
        unsafe { UnsafeUserOperation::new(self.commutative, self.user) }
    }
}

/// What the collectives of a NOD call do to one output buffer, whatever
/// its element type.
pub trait OutBuf {
    /// Combines access `a`'s values at `pts` across `comm` (PW).
    fn all_reduce(&mut self, comm: &SimpleCommunicator, a: usize, pts: &Points);
    /// Prefix-combines access `a` across `comm` in rank order (PS): every
    /// point of the box (`all`) gets the lower ranks' total on its left,
    /// the totals being the box's last slice along the scanned dimension
    /// (`totals`; the dimension has `ext` points in the box and `inner`
    /// points of the kept dimensions inside it).
    fn scan(
        &mut self,
        comm: &SimpleCommunicator,
        a: usize,
        all: &Points,
        totals: &Points,
        inner: usize,
        ext: usize,
    );
    /// Gathers every rank's values (`recv[q]`: rank `q`'s points, which it
    /// sends from its `send` points) to every rank, or to `root` only.
    fn gather(
        &mut self,
        comm: &SimpleCommunicator,
        root: Option<usize>,
        send: &[Points],
        recv: &[Vec<Points>],
    ) -> Result<(), String>;
}

/// An output buffer of a NOD call and the operators of its accesses.
pub struct Output<'a, T> {
    data: &'a mut [T],
    ops: Vec<Op<T>>,
}

impl<'a, T> Output<'a, T> {
    pub fn new(data: &'a mut [T], ops: Vec<Op<T>>) -> Self {
        Output { data, ops }
    }

    /// The buffer (a fused epilogue maps its combined values in place).
    pub fn data_mut(&mut self) -> &mut [T] {
        self.data
    }

    fn pack(&self, pts: &Points, out: &mut Vec<T>)
    where
        T: Copy,
    {
        // Offsets are in bounds: `Job` checked the buffer's length against
        // the call's shapes, and the points lie inside the index space.
        pts.for_each(|o| out.push(self.data[o]));
    }

    fn unpack(&mut self, pts: &Points, vals: &[T])
    where
        T: Copy,
    {
        let mut n = 0;
        pts.for_each(|o| {
            self.data[o] = vals[n];
            n += 1;
        });
    }
}

impl<T: Wire> OutBuf for Output<'_, T> {
    fn all_reduce(&mut self, comm: &SimpleCommunicator, a: usize, pts: &Points) {
        let mut send = Vec::with_capacity(pts.count());
        self.pack(pts, &mut send);
        let mut recv = vec![T::default(); send.len()];
        count_sent::<T>(send.len());
        match self.ops[a].system() {
            Some(op) => comm.all_reduce_into(bits(&send), bits_mut(&mut recv), op),
            None => comm.all_reduce_into(bits(&send), bits_mut(&mut recv), &self.ops[a].user()),
        }
        self.unpack(pts, &recv);
    }

    fn scan(
        &mut self,
        comm: &SimpleCommunicator,
        a: usize,
        all: &Points,
        last: &Points,
        inner: usize,
        ext: usize,
    ) {
        let mut totals = Vec::with_capacity(last.count());
        self.pack(last, &mut totals);
        let mut carry = vec![T::default(); totals.len()];
        count_sent::<T>(totals.len());
        match self.ops[a].system() {
            Some(op) => comm.exclusive_scan_into(bits(&totals), bits_mut(&mut carry), op),
            None => {
                comm.exclusive_scan_into(bits(&totals), bits_mut(&mut carry), &self.ops[a].user())
            }
        }
        if comm.rank() == 0 {
            return; // the first part has nothing on its left (its `carry` is undefined)
        }
        let combine = self.ops[a].combine;
        // The n-th point's total drops the scanned dimension from n.
        let mut n = 0;
        all.for_each(|o| {
            let j = n / (ext * inner) * inner + n % inner;
            self.data[o] = combine(carry[j], self.data[o]);
            n += 1;
        });
    }

    fn gather(
        &mut self,
        comm: &SimpleCommunicator,
        root: Option<usize>,
        send: &[Points],
        recv: &[Vec<Points>],
    ) -> Result<(), String> {
        let counts: Vec<usize> = recv
            .iter()
            .map(|ps| ps.iter().map(Points::count).sum())
            .collect();
        let total: usize = counts.iter().sum();
        let to_count = |n: usize| {
            mpi::Count::try_from(n).map_err(|_| {
                format!("{total} results are more than one MPI collective moves (2^31 - 1); use more ranks or the distributed placement")
            })
        };
        let mut displs = Vec::with_capacity(counts.len());
        let mut at = 0;
        for &c in &counts {
            displs.push(to_count(at)?);
            at += c;
        }
        let counts: Vec<mpi::Count> = counts.into_iter().map(to_count).collect::<Result<_, _>>()?;
        to_count(total)?;
        let mut mine = Vec::new();
        for p in send {
            self.pack(p, &mut mine);
        }
        count_sent::<T>(mine.len());
        let mut all = vec![T::default(); total];
        match root {
            None => {
                let mut part = PartitionMut::new(bits_mut(&mut all), &counts[..], &displs[..]);
                comm.all_gather_varcount_into(bits(&mine), &mut part);
            }
            Some(r) => {
                let root_proc = comm.process_at_rank(r as mpi::Rank);
                if comm.rank() as usize == r {
                    let mut part = PartitionMut::new(bits_mut(&mut all), &counts[..], &displs[..]);
                    root_proc.gather_varcount_into_root(bits(&mine), &mut part);
                } else {
                    root_proc.gather_varcount_into(bits(&mine));
                    return Ok(());
                }
            }
        }
        for (q, ps) in recv.iter().enumerate() {
            let mut at = displs[q] as usize;
            for p in ps {
                let n = p.count();
                self.unpack(p, &all[at..at + n]);
                at += n;
            }
        }
        Ok(())
    }
}

/// The points of a box (row-major over `dims`; the others at the box's
/// lower bound) as offsets through an output access.
pub struct Points<'a> {
    pub lin: &'a Linear,
    pub region: Vec<(usize, usize)>,
    pub dims: &'a [usize],
}

impl Points<'_> {
    pub fn count(&self) -> usize {
        self.dims
            .iter()
            .map(|&d| self.region[d].1 - self.region[d].0)
            .product()
    }

    /// Calls `f` with the offset of each point, in order.
    pub fn for_each(&self, mut f: impl FnMut(usize)) {
        if self.count() == 0 {
            return;
        }
        let mut idx: Vec<usize> = self.region.iter().map(|r| r.0).collect();
        let Some((&last, outer)) = self.dims.split_last() else {
            return f(self.lin.at(&idx));
        };
        let (lo, hi) = self.region[last];
        let step = self.lin.coefs[last];
        loop {
            idx[last] = lo;
            let start = self.lin.at(&idx) as isize;
            for i in 0..(hi - lo) as isize {
                f((start + i * step) as usize);
            }
            // Odometer over the outer dimensions.
            let mut done = true;
            for &d in outer.iter().rev() {
                idx[d] += 1;
                if idx[d] < self.region[d].1 {
                    done = false;
                    break;
                }
                idx[d] = self.region[d].0;
            }
            if done {
                return;
            }
        }
    }
}
