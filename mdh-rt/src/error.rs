//! The run-time error of generated kernels, the interpreter and the runtimes.

use std::fmt;

/// Everything that can go wrong when a kernel runs. Generated code never
/// panics on bad arguments: it returns one of these.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A host slice has the wrong number of elements.
    BufferLength {
        kernel: String,
        buffer: String,
        expected: usize,
        actual: usize,
    },
    /// A size expression (a shape, a dimension) overflows `usize` or is negative.
    SizeOverflow { kernel: String, what: String },
    /// An index function maps part of the index space outside its buffer.
    IndexOutOfBounds {
        kernel: String,
        buffer: String,
        /// Which access of the buffer (0-based, in view order).
        access: usize,
        /// Which component of the index tuple.
        component: usize,
        min: i128,
        max: i128,
        extent: usize,
    },
    /// Two accesses of one output buffer may write the same element.
    OverlappingOutputs { kernel: String, buffer: String },
    /// A reduced dimension is empty and its operator has no neutral element.
    EmptyReduction { kernel: String, dim: usize },
    /// The arguments do not fit the kernel (interpreter: wrong buffer types or counts).
    Argument(String),
    /// A kernel specification could not be parsed or checked.
    Spec(String),
    /// A back end (OpenCL, CUDA) is missing or failed.
    Backend(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BufferLength {
                kernel,
                buffer,
                expected,
                actual,
            } => write!(
                f,
                "kernel `{kernel}`: buffer `{buffer}` has {actual} elements, but its shape needs {expected}"
            ),
            Error::SizeOverflow { kernel, what } => write!(
                f,
                "kernel `{kernel}`: {what} overflows or is negative for these sizes"
            ),
            Error::IndexOutOfBounds {
                kernel,
                buffer,
                access,
                component,
                min,
                max,
                extent,
            } => write!(
                f,
                "kernel `{kernel}`: index function #{access} of `{buffer}` reaches indices {min}..={max} in dimension {component}, outside 0..{extent}; make the sizes consistent with the shape"
            ),
            Error::OverlappingOutputs { kernel, buffer } => write!(
                f,
                "kernel `{kernel}`: two index functions of output `{buffer}` write the same elements for these sizes"
            ),
            Error::EmptyReduction { kernel, dim } => write!(
                f,
                "kernel `{kernel}`: dimension {dim} is empty and its user-defined combine operator has no neutral element"
            ),
            Error::Argument(m) | Error::Spec(m) | Error::Backend(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

/// Why a config does not fit a kernel: the offending field and a sentence.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    pub field: &'static str,
    pub message: String,
}
