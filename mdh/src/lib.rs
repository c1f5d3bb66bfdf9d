//! mdh facade (being written).
pub use mdh_core::Error;
pub use mdh_macros::mdh;
