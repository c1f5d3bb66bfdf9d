//! Reference interpreter. (Being written.)
