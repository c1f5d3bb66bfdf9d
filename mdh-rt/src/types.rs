//! The types a kernel's signature is made of: element types and the kinds
//! of md_hom dimensions.

/// Element types of buffers, params and scalar-function values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    F32,
    F64,
    /// IEEE binary16 (the `half` crate's `f16`): computed in f32, rounded
    /// to the type after each operation.
    F16,
    /// bfloat16 (the `half` crate's `bf16`): computed in f32, rounded to
    /// the type after each operation.
    Bf16,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    /// Only for size parameters, MDA indices and loop counters; not a buffer type.
    Usize,
    Bool,
}

impl ScalarType {
    pub const BUFFER_TYPES: [ScalarType; 13] = [
        ScalarType::F32,
        ScalarType::F64,
        ScalarType::F16,
        ScalarType::Bf16,
        ScalarType::I8,
        ScalarType::I16,
        ScalarType::I32,
        ScalarType::I64,
        ScalarType::U8,
        ScalarType::U16,
        ScalarType::U32,
        ScalarType::U64,
        ScalarType::Bool,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::F16 => "f16",
            ScalarType::Bf16 => "bf16",
            ScalarType::I8 => "i8",
            ScalarType::I16 => "i16",
            ScalarType::I32 => "i32",
            ScalarType::I64 => "i64",
            ScalarType::U8 => "u8",
            ScalarType::U16 => "u16",
            ScalarType::U32 => "u32",
            ScalarType::U64 => "u64",
            ScalarType::Usize => "usize",
            ScalarType::Bool => "bool",
        }
    }

    pub fn from_name(s: &str) -> Option<ScalarType> {
        Some(match s {
            "f32" => ScalarType::F32,
            "f64" => ScalarType::F64,
            "f16" => ScalarType::F16,
            "bf16" => ScalarType::Bf16,
            "i8" => ScalarType::I8,
            "i16" => ScalarType::I16,
            "i32" => ScalarType::I32,
            "i64" => ScalarType::I64,
            "u8" => ScalarType::U8,
            "u16" => ScalarType::U16,
            "u32" => ScalarType::U32,
            "u64" => ScalarType::U64,
            "usize" => ScalarType::Usize,
            "bool" => ScalarType::Bool,
            _ => return None,
        })
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            ScalarType::F32 | ScalarType::F64 | ScalarType::F16 | ScalarType::Bf16
        )
    }

    /// Whether values of the type are stored in 16 bits and computed in
    /// f32 (`f16`, `bf16`): each operation rounds its f32 result to the type.
    pub fn is_half(self) -> bool {
        matches!(self, ScalarType::F16 | ScalarType::Bf16)
    }

    pub fn is_int(self) -> bool {
        !self.is_float() && self != ScalarType::Bool
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ScalarType::I8 | ScalarType::I16 | ScalarType::I32 | ScalarType::I64
        ) || self.is_float()
    }
}

impl std::fmt::Display for ScalarType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a combine operator does to its dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DimKind {
    Cc,
    Pw,
    Ps,
}

impl DimKind {
    /// Whether the dimension survives into the output (CC and PS do).
    pub fn is_kept(self) -> bool {
        self != DimKind::Pw
    }

    /// The kept dimensions (CC and PS) among `kinds`, in increasing order.
    pub fn kept(kinds: &[DimKind]) -> Vec<usize> {
        (0..kinds.len()).filter(|&x| kinds[x].is_kept()).collect()
    }

    /// The points of the kept dimensions among `kinds` at `extents` (one
    /// result per output access each).
    pub fn kept_points(kinds: &[DimKind], extents: &[usize]) -> usize {
        (0..kinds.len())
            .filter(|&x| kinds[x].is_kept())
            .map(|x| extents[x])
            .product()
    }

    /// The reduced (PW) dimensions among `kinds`, in increasing order.
    pub fn reduced(kinds: &[DimKind]) -> Vec<usize> {
        (0..kinds.len()).filter(|&x| !kinds[x].is_kept()).collect()
    }
}

/// Bytes of one element of type `t` (a `bool` is stored as one byte).
pub fn elem_bytes(t: ScalarType) -> usize {
    match t {
        ScalarType::F64 | ScalarType::I64 | ScalarType::U64 | ScalarType::Usize => 8,
        ScalarType::F32 | ScalarType::I32 | ScalarType::U32 => 4,
        ScalarType::I16 | ScalarType::U16 | ScalarType::F16 | ScalarType::Bf16 => 2,
        _ => 1,
    }
}
