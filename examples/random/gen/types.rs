//! The element types the generator draws from: the compiler's.

pub use mdh_core::spec::ScalarType as Ty;

/// The number types of buffers, params and bindings (`bool` is drawn
/// apart).
pub const NUMBERS: [Ty; 10] = [
    Ty::F32,
    Ty::F64,
    Ty::I8,
    Ty::I16,
    Ty::I32,
    Ty::I64,
    Ty::U8,
    Ty::U16,
    Ty::U32,
    Ty::U64,
];
