//! The run-time description of a kernel's index space and views: what the
//! generated code and the interpreter both need to validate arguments and to
//! turn index functions into linear offsets. One source of truth: generated
//! kernels embed a `KernelDesc` constant built by [`KernelDesc::from_kernel`],
//! and the interpreter builds the same value from the parsed spec.

use std::borrow::Cow;

use crate::error::Error;
use crate::types::{DimKind, ScalarType};

/// A size expression in postfix form over the size-parameter values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOp {
    Const(u64),
    Param(usize),
    Add,
    Sub,
    Mul,
}

pub type SizeCode = Cow<'static, [SizeOp]>;

/// One component of an index function: `Σ dims[d]·i_d + Σ sizes[s]·S_s + constant`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffineDesc {
    pub dims: Cow<'static, [i64]>,
    pub sizes: Cow<'static, [i64]>,
    pub constant: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessDesc {
    pub components: Cow<'static, [AffineDesc]>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufDesc {
    pub name: Cow<'static, str>,
    /// The element type (tensor cores on 16-bit inputs need to know it).
    pub ty: ScalarType,
    pub shape: Cow<'static, [SizeCode]>,
    pub accesses: Cow<'static, [AccessDesc]>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelDesc {
    pub name: Cow<'static, str>,
    pub size_params: Cow<'static, [Cow<'static, str>]>,
    pub dims: Cow<'static, [SizeCode]>,
    pub kinds: Cow<'static, [DimKind]>,
    pub inputs: Cow<'static, [BufDesc]>,
    pub outputs: Cow<'static, [BufDesc]>,
    /// Whether the kernel is contraction-shaped: its scalar function is the
    /// product of two `f32` inputs (one access each) into one `f32` output
    /// combined with PW(+) (matmul, batched matmul, tensor contractions),
    /// what tensor cores compute (see `GpuPlan::mma`).
    pub contraction: bool,
}

/// What a call's arguments say of its sizes: the values of the size
/// parameters and the lengths of its input and output buffers (what
/// [`KernelDesc::bind`] checks).
#[derive(Clone, Copy, Debug)]
pub struct ArgSizes<'a> {
    pub sizes: &'a [usize],
    pub in_lens: &'a [usize],
    pub out_lens: &'a [usize],
}

/// The index space of a call while it is bound: the sizes, the extents
/// they give the md_hom dimensions, and whether one is empty (no point: no
/// access is evaluated).
#[derive(Clone, Copy)]
struct IndexSpace<'a> {
    sizes: &'a [usize],
    extents: &'a [usize],
    empty: bool,
}

/// The validated sizes of one call: all lengths checked, all accesses in bounds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bound {
    /// Size-parameter values.
    pub sizes: Vec<usize>,
    /// Extent of each md_hom dimension.
    pub extents: Vec<usize>,
    /// Shape of each input / output buffer.
    pub in_shapes: Vec<Vec<usize>>,
    pub out_shapes: Vec<Vec<usize>>,
    /// Per buffer and access: the linear offset `base + Σ coef[d]·i_d`.
    pub in_linear: Vec<Vec<Linear>>,
    pub out_linear: Vec<Vec<Linear>>,
}

/// Per buffer of one direction (inputs or outputs): its shape, and its
/// accesses flattened (the halves of a [`Bound`]).
type BoundBufs = (Vec<Vec<usize>>, Vec<Vec<Linear>>);

/// An access flattened to a row-major linear offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linear {
    pub base: isize,
    pub coefs: Vec<isize>,
}

impl Linear {
    /// The offset of the access at point `idx` (all in bounds once validated).
    #[inline(always)]
    pub fn at(&self, idx: &[usize]) -> usize {
        let mut o = self.base;
        for (c, i) in self.coefs.iter().zip(idx) {
            o += c * *i as isize;
        }
        o as usize
    }
}

/// What a kernel description is made from: the compiler's checked kernel
/// (mdh-core implements it for its `Kernel`, so this crate needs no front end).
pub trait Describe {
    fn describe(&self) -> KernelDesc;
}

impl KernelDesc {
    /// The description of a parsed (and checked) kernel.
    pub fn from_kernel<K: Describe + ?Sized>(k: &K) -> KernelDesc {
        k.describe()
    }

    fn overflow(&self, what: String) -> Error {
        Error::SizeOverflow {
            kernel: self.name.to_string(),
            what,
        }
    }

    /// Evaluates a size expression; `None` on overflow or a negative value.
    pub fn eval_size(code: &[SizeOp], sizes: &[usize]) -> Option<usize> {
        let mut stack: Vec<usize> = Vec::with_capacity(4);
        for op in code {
            match *op {
                SizeOp::Const(c) => stack.push(usize::try_from(c).ok()?),
                SizeOp::Param(p) => stack.push(*sizes.get(p)?),
                SizeOp::Add | SizeOp::Sub | SizeOp::Mul => {
                    let b = stack.pop()?;
                    let a = stack.pop()?;
                    stack.push(match op {
                        SizeOp::Add => a.checked_add(b)?,
                        SizeOp::Sub => a.checked_sub(b)?,
                        _ => a.checked_mul(b)?,
                    });
                }
            }
        }
        if stack.len() == 1 {
            stack.pop()
        } else {
            None
        }
    }

    /// The number of elements of buffer `b` (one of this kernel's) at
    /// `sizes`; an error if it overflows.
    pub fn elements(&self, b: &BufDesc, sizes: &[usize]) -> Result<usize, Error> {
        b.shape
            .iter()
            .try_fold(1usize, |n, c| n.checked_mul(Self::eval_size(c, sizes)?))
            .ok_or_else(|| self.overflow(format!("the number of elements of `{}`", b.name)))
    }

    /// [`KernelDesc::bind`] with buffers of exactly the lengths their shapes
    /// have at `sizes` (what the macro knows of a tuned entry's sizes).
    pub fn bind_sizes(&self, sizes: &[usize]) -> Result<Bound, Error> {
        let lens = |bufs: &[BufDesc]| -> Result<Vec<usize>, Error> {
            bufs.iter().map(|b| self.elements(b, sizes)).collect()
        };
        self.bind(sizes, &lens(&self.inputs)?, &lens(&self.outputs)?)
    }

    /// Checks sizes, buffer lengths and that every access stays in bounds
    /// over the whole index space; returns what the kernels need to index.
    pub fn bind(
        &self,
        sizes: &[usize],
        in_lens: &[usize],
        out_lens: &[usize],
    ) -> Result<Bound, Error> {
        let extents = self
            .dims
            .iter()
            .enumerate()
            .map(|(d, c)| {
                Self::eval_size(c, sizes)
                    .ok_or_else(|| self.overflow(format!("the size of md_hom dimension {d}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Total number of points must fit usize too (kernels count them);
        // an empty dimension makes it 0, however large the others (2 × 2^63
        // × 0 points are none, not an overflow).
        let empty = extents.contains(&0);
        if !empty {
            extents
                .iter()
                .try_fold(1usize, |a, &e| a.checked_mul(e))
                .ok_or_else(|| self.overflow("the number of points of the index space".into()))?;
        }
        let bind_bufs = |bufs: &[BufDesc], lens: &[usize]| -> Result<BoundBufs, Error> {
            if bufs.len() != lens.len() {
                return Err(Error::Argument(format!(
                    "kernel `{}`: expected {} buffers, got {}",
                    self.name,
                    bufs.len(),
                    lens.len()
                )));
            }
            let mut shapes = Vec::new();
            let mut linears = Vec::new();
            for (b, &len) in bufs.iter().zip(lens) {
                let shape = b
                    .shape
                    .iter()
                    .enumerate()
                    .map(|(r, c)| {
                        Self::eval_size(c, sizes).ok_or_else(|| {
                            self.overflow(format!("dimension {r} of the shape of `{}`", b.name))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let expected = shape
                    .iter()
                    .try_fold(1usize, |a, &e| a.checked_mul(e))
                    .filter(|&n| n <= isize::MAX as usize)
                    .ok_or_else(|| {
                        self.overflow(format!("the number of elements of `{}`", b.name))
                    })?;
                if expected != len {
                    return Err(Error::BufferLength {
                        kernel: self.name.to_string(),
                        buffer: b.name.to_string(),
                        expected,
                        actual: len,
                    });
                }
                let space = IndexSpace {
                    sizes,
                    extents: &extents,
                    empty,
                };
                let mut lin = Vec::new();
                for a in 0..b.accesses.len() {
                    lin.push(self.linearize(b, a, &shape, &space)?);
                }
                shapes.push(shape);
                linears.push(lin);
            }
            Ok((shapes, linears))
        };
        let (in_shapes, in_linear) = bind_bufs(&self.inputs, in_lens)?;
        let (out_shapes, out_linear) = bind_bufs(&self.outputs, out_lens)?;
        let bound = Bound {
            sizes: sizes.to_vec(),
            extents,
            in_shapes,
            out_shapes,
            in_linear,
            out_linear,
        };
        if !empty {
            self.check_disjoint_outputs(&bound)?;
        }
        Ok(bound)
    }

    /// Flattens access `a` of buffer `b` of shape `shape` and checks that
    /// it stays inside the buffer: an affine function takes its extreme
    /// values at the corners of the box.
    fn linearize(
        &self,
        b: &BufDesc,
        a: usize,
        shape: &[usize],
        space: &IndexSpace<'_>,
    ) -> Result<Linear, Error> {
        let IndexSpace {
            sizes,
            extents,
            empty,
        } = *space;
        let acc = &b.accesses[a];
        let d = extents.len();
        let mut base: i128 = 0;
        let mut coefs = vec![0i128; d];
        let mut stride: i128 = 1;
        for (r, comp) in acc.components.iter().enumerate().rev() {
            let off = affine_offset(comp, sizes);
            let (lo, hi) = affine_range(comp, sizes, extents);
            if !empty && (lo < 0 || hi >= shape[r] as i128) {
                return Err(Error::IndexOutOfBounds {
                    kernel: self.name.to_string(),
                    buffer: b.name.to_string(),
                    access: a,
                    component: r,
                    min: lo,
                    max: hi,
                    extent: shape[r],
                });
            }
            base += off * stride;
            for (c, &k) in coefs.iter_mut().zip(comp.dims.iter()) {
                *c += k as i128 * stride;
            }
            stride *= shape[r] as i128;
        }
        let to_isize = |v: i128| match isize::try_from(v) {
            Ok(v) => Ok(v),
            // An empty index space reads and writes no element: its linear
            // forms are never evaluated (conv2d with P = 0 and Q = 2^63: an
            // empty image whose row stride is past isize).
            Err(_) if empty => Ok(0),
            Err(_) => Err(self.overflow(format!("an index of `{}`", b.name))),
        };
        Ok(Linear {
            base: to_isize(base)?,
            coefs: coefs.into_iter().map(to_isize).collect::<Result<_, _>>()?,
        })
    }

    /// Two accesses of one output buffer must not write the same element.
    /// Accesses whose images are separated in some component (by their
    /// ranges, or by residues modulo the gcd of that component's
    /// coefficients) are disjoint; anything else is refused.
    fn check_disjoint_outputs(&self, bound: &Bound) -> Result<(), Error> {
        for b in self.outputs.iter() {
            let accs = &b.accesses;
            for x in 0..accs.len() {
                for y in x + 1..accs.len() {
                    let separated = accs[x]
                        .components
                        .iter()
                        .zip(accs[y].components.iter())
                        .any(|(p, q)| {
                            let (plo, phi) = affine_range(p, &bound.sizes, &bound.extents);
                            let (qlo, qhi) = affine_range(q, &bound.sizes, &bound.extents);
                            if phi < qlo || qhi < plo {
                                return true;
                            }
                            if p.dims == q.dims {
                                let g = p.dims.iter().fold(0i64, |g, &c| gcd(g, c.abs()));
                                let delta =
                                    affine_offset(p, &bound.sizes) - affine_offset(q, &bound.sizes);
                                return if g == 0 {
                                    delta != 0
                                } else {
                                    delta % g as i128 != 0
                                };
                            }
                            false
                        });
                    if !separated {
                        return Err(Error::OverlappingOutputs {
                            kernel: self.name.to_string(),
                            buffer: b.name.to_string(),
                        });
                    }
                }
            }
        }
        Ok(())
    }
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The size-dependent constant part of an affine component.
pub fn affine_offset(c: &AffineDesc, sizes: &[usize]) -> i128 {
    c.constant as i128
        + c.sizes
            .iter()
            .zip(sizes)
            .map(|(&k, &s)| k as i128 * s as i128)
            .sum::<i128>()
}

/// Minimum and maximum of an affine component over the index space box.
pub fn affine_range(c: &AffineDesc, sizes: &[usize], extents: &[usize]) -> (i128, i128) {
    let off = affine_offset(c, sizes);
    let (mut lo, mut hi) = (off, off);
    for (&k, &e) in c.dims.iter().zip(extents) {
        let span = k as i128 * (e as i128 - 1).max(0);
        if span < 0 {
            lo += span;
        } else {
            hi += span;
        }
    }
    (lo, hi)
}
