//! Scalar values and host buffers of every element type: the arguments of
//! the reference interpreter and of the GPU runtimes' untyped launches.

use std::fmt;

pub use half::{bf16, f16};

use crate::types::ScalarType;

// ----------------------------------------------------------------------------
// Variant lists. `numeric!(m!(args))` calls `m!([F32, F64, …], args)`, so the
// per-type code below is written once and expanded for every type. Exported
// (hidden) for the reference interpreter, which writes its arithmetic so.

#[doc(hidden)]
#[macro_export]
macro_rules! numeric {
    ($m:ident!($($a:tt)*)) => {
        $m!([F32, F64, F16, Bf16, I8, I16, I32, I64, U8, U16, U32, U64, Usize], $($a)*)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! any_type {
    ($m:ident!($($a:tt)*)) => {
        $m!([F32, F64, F16, Bf16, I8, I16, I32, I64, U8, U16, U32, U64, Usize, Bool], $($a)*)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! floats {
    ($m:ident!($($a:tt)*)) => {
        $m!([F32, F64, F16, Bf16], $($a)*)
    };
}

/// Like `numeric!`, with the Rust type of each variant.
#[doc(hidden)]
#[macro_export]
macro_rules! numeric_typed {
    ($m:ident!($($a:tt)*)) => {
        $m!(
            [F32 f32, F64 f64, F16 $crate::value::f16, Bf16 $crate::value::bf16, I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32, U64 u64, Usize usize],
            $($a)*
        )
    };
}

/// `on1!([variants], v, x => body)`: `Some(body)` with `x` bound to the
/// payload when `v` is one of the variants, else `None`.
#[doc(hidden)]
#[macro_export]
macro_rules! on1 {
    ([$($V:ident),*], $v:expr, $x:ident => $body:expr) => {
        match $v {
            $(Value::$V($x) => Some($body),)*
            #[allow(unreachable_patterns)]
            _ => None,
        }
    };
}

/// `on2!([variants], a, b, x, y => body)`: `Some(body)` when `a` and `b` are
/// the same variant (one of the list), else `None`.
#[doc(hidden)]
#[macro_export]
macro_rules! on2 {
    ([$($V:ident),*], $a:expr, $b:expr, $x:ident, $y:ident => $body:expr) => {
        match ($a, $b) {
            $((Value::$V($x), Value::$V($y)) => Some($body),)*
            _ => None,
        }
    };
}

// ----------------------------------------------------------------------------
// Values and buffers.

/// One scalar value of the scalar-function language.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    F32(f32),
    F64(f64),
    F16(f16),
    Bf16(bf16),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    Usize(usize),
    Bool(bool),
}

macro_rules! value_impls {
    ($($V:ident $t:ty),*) => {
        impl Value {
            /// The value's type.
            pub fn ty(&self) -> ScalarType {
                match self {
                    $(Value::$V(_) => ScalarType::$V,)*
                }
            }
        }

        impl fmt::Display for Value {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $(Value::$V(x) => fmt::Debug::fmt(x, f),)*
                }
            }
        }

        $(impl From<$t> for Value {
            fn from(x: $t) -> Value {
                Value::$V(x)
            }
        })*
    };
}

value_impls!(
    F32 f32, F64 f64, F16 f16, Bf16 bf16, I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32,
    U64 u64, Usize usize, Bool bool
);

impl Value {
    /// Rust's `as` cast to `to` (`None` for a cast to `bool`, which Rust
    /// does not have either, except from `bool` itself).
    pub fn cast(self, to: ScalarType) -> Option<Value> {
        any_type!(on1!(self, x => x.cast_to(to))).flatten()
    }
}

/// A host buffer of one element type (row-major).
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    F16(Vec<f16>),
    Bf16(Vec<bf16>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    Bool(Vec<bool>),
}

macro_rules! buffer_impls {
    ($($V:ident $t:ty, $as:ident, $as_mut:ident;)*) => {
        impl Buffer {
            /// The element type.
            pub fn ty(&self) -> ScalarType {
                match self {
                    $(Buffer::$V(_) => ScalarType::$V,)*
                }
            }

            /// The number of elements.
            pub fn len(&self) -> usize {
                match self {
                    $(Buffer::$V(v) => v.len(),)*
                }
            }

            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }

            /// Element `i`. Panics if `i` is out of bounds, like slice indexing.
            pub fn get(&self, i: usize) -> Value {
                match self {
                    $(Buffer::$V(v) => Value::$V(v[i]),)*
                }
            }

            /// Sets element `i`. Panics if `i` is out of bounds or the value's
            /// type is not the element type.
            pub fn set(&mut self, i: usize, x: Value) {
                match (self, x) {
                    $((Buffer::$V(v), Value::$V(x)) => v[i] = x,)*
                    (b, x) => panic!("cannot store a {} value in a buffer of {}", x.ty(), b.ty()),
                }
            }

            /// A buffer of `len` zeros (`false`) of type `ty`. Panics for
            /// `usize`, which is not a buffer type.
            pub fn zeros(ty: ScalarType, len: usize) -> Buffer {
                match ty {
                    $(ScalarType::$V => Buffer::$V(vec![<$t>::default(); len]),)*
                    ScalarType::Usize => panic!("usize is not a buffer element type"),
                }
            }

            $(
                #[doc = concat!("The elements, if this is a buffer of `", stringify!($t), "`.")]
                pub fn $as(&self) -> Option<&[$t]> {
                    match self {
                        Buffer::$V(v) => Some(v),
                        _ => None,
                    }
                }

                #[doc = concat!("The elements, mutably, if this is a buffer of `", stringify!($t), "`.")]
                pub fn $as_mut(&mut self) -> Option<&mut [$t]> {
                    match self {
                        Buffer::$V(v) => Some(v),
                        _ => None,
                    }
                }
            )*
        }

        $(impl From<Vec<$t>> for Buffer {
            fn from(v: Vec<$t>) -> Buffer {
                Buffer::$V(v)
            }
        })*
    };
}

buffer_impls! {
    F32 f32, as_f32, as_f32_mut;
    F64 f64, as_f64, as_f64_mut;
    F16 f16, as_f16, as_f16_mut;
    Bf16 bf16, as_bf16, as_bf16_mut;
    I8 i8, as_i8, as_i8_mut;
    I16 i16, as_i16, as_i16_mut;
    I32 i32, as_i32, as_i32_mut;
    I64 i64, as_i64, as_i64_mut;
    U8 u8, as_u8, as_u8_mut;
    U16 u16, as_u16, as_u16_mut;
    U32 u32, as_u32, as_u32_mut;
    U64 u64, as_u64, as_u64_mut;
    Bool bool, as_bool, as_bool_mut;
}

/// Rust's `as` cast from a primitive to the type `to`; to and from `f16`
/// and `bf16` through `f32` (`x as f32`, then rounded to nearest, ties to
/// even; `f32::from(h)`, then `as`).
pub trait Cast: Copy {
    fn cast_to(self, to: ScalarType) -> Option<Value>;
}

macro_rules! cast_arms {
    ([$($V:ident $t:ty),*], $x:expr, $to:expr) => {
        match $to {
            $(ScalarType::$V => Some(Value::$V($x as $t)),)*
            ScalarType::F16 => Some(Value::F16(f16::from_f32($x as f32))),
            ScalarType::Bf16 => Some(Value::Bf16(bf16::from_f32($x as f32))),
            ScalarType::Bool => None,
        }
    };
}

macro_rules! impl_cast {
    ($($src:ty),*) => {$(
        impl Cast for $src {
            #[allow(clippy::unnecessary_cast, clippy::cast_lossless)]
            fn cast_to(self, to: ScalarType) -> Option<Value> {
                let x = self;
                cast_arms!(
                    [F32 f32, F64 f64, I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32,
                     U64 u64, Usize usize],
                    x,
                    to
                )
            }
        }
    )*};
}

impl_cast!(f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, usize, u128);

macro_rules! impl_half_cast {
    ($($src:ty),*) => {$(
        impl Cast for $src {
            fn cast_to(self, to: ScalarType) -> Option<Value> {
                self.to_f32().cast_to(to)
            }
        }
    )*};
}

impl_half_cast!(f16, bf16);

impl Cast for bool {
    fn cast_to(self, to: ScalarType) -> Option<Value> {
        if to == ScalarType::Bool {
            Some(Value::Bool(self))
        } else {
            (self as u8).cast_to(to)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_are_rust_as_casts() {
        assert_eq!(Value::F32(-1.5).cast(ScalarType::U8), Some(Value::U8(0)));
        assert_eq!(Value::F32(300.0).cast(ScalarType::U8), Some(Value::U8(255)));
        assert_eq!(
            Value::F64(f64::NAN).cast(ScalarType::I32),
            Some(Value::I32(0))
        );
        assert_eq!(
            Value::I32(-1).cast(ScalarType::U16),
            Some(Value::U16(u16::MAX))
        );
        assert_eq!(
            Value::U64(u64::MAX).cast(ScalarType::F32),
            Some(Value::F32(u64::MAX as f32))
        );
        assert_eq!(Value::Bool(true).cast(ScalarType::I64), Some(Value::I64(1)));
        assert_eq!(Value::I32(1).cast(ScalarType::Bool), None);
    }

    /// Casts to and from `f16` and `bf16` go through `f32` and round to
    /// nearest, ties to even.
    #[test]
    fn half_casts_go_through_f32() {
        assert_eq!(
            Value::F64(0.1).cast(ScalarType::F16),
            Some(Value::F16(f16::from_f32(0.1)))
        );
        // 2049 lies halfway between the f16 values 2048 and 2050: even wins.
        assert_eq!(
            Value::I32(2049).cast(ScalarType::F16),
            Some(Value::F16(f16::from_f32(2048.0)))
        );
        assert_eq!(
            Value::I32(70000).cast(ScalarType::F16),
            Some(Value::F16(f16::INFINITY))
        );
        assert_eq!(
            Value::Bf16(bf16::from_f32(-2.75)).cast(ScalarType::I32),
            Some(Value::I32(-2))
        );
        assert_eq!(
            Value::F16(f16::from_f32(1.5)).cast(ScalarType::Bf16),
            Some(Value::Bf16(bf16::from_f32(1.5)))
        );
        assert_eq!(Value::F16(f16::ONE).cast(ScalarType::Bool), None);
    }
}
