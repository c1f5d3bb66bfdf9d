//! A kernel of stages' intermediates, kept from one call to the next.
//!
//! An intermediate of a whole call (the scores of an attention head, 4 MiB
//! at a sequence of 1024) is larger than what the allocator recycles: a new
//! `Vec` of it is fresh pages from the OS on every call, each one faulted in
//! and cleared by the kernel, and returned at the end (some 40 % of the
//! attention example's time on the 2-core AMD EPYC, Zen 3). Each
//! intermediate's buffer so stays with its kernel's entry point between
//! calls, in pages already mapped, refilled with zeros (the interpreter's
//! intermediates start at zero) unless its stage writes all of it.

use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, PoisonError};

/// The largest buffer kept (bytes): a larger one is returned to the
/// allocator after each call, as a `Vec` would be, so that what a kernel
/// holds between calls stays bounded.
const KEEP_MAX: usize = 1 << 28;

/// The buffer one intermediate of one entry point keeps between calls
/// (a `static` of the generated code).
pub struct Kept<T> {
    slot: Mutex<Option<Vec<T>>>,
}

impl<T: Copy + Default> Kept<T> {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Kept {
            slot: Mutex::new(None),
        }
    }

    /// `len` elements, in the kept buffer where one is free and large
    /// enough, else in a new one of zeros (`T::default()`). With `zero`,
    /// a kept buffer is refilled with zeros; without, it keeps the last
    /// call's values, for an intermediate its stage writes whole before any
    /// stage reads it (the refill cost the attention example 5 % of its
    /// time). Calls at the same time each get their own buffer; one is kept
    /// when they end.
    pub fn take(&'static self, len: usize, zero: bool) -> KeptBuf<T> {
        let kept = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let buf = match kept {
            Some(mut v) if v.capacity() >= len => {
                if zero {
                    v.clear();
                }
                v.truncate(len);
                v.resize(len, T::default());
                v
            }
            _ => vec![T::default(); len],
        };
        KeptBuf { buf, home: self }
    }
}

/// An intermediate's buffer for one call: a `[T]`, kept by its [`Kept`]
/// when the call ends.
pub struct KeptBuf<T: 'static> {
    buf: Vec<T>,
    home: &'static Kept<T>,
}

impl<T> Deref for KeptBuf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf
    }
}

impl<T> DerefMut for KeptBuf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf
    }
}

impl<T> Drop for KeptBuf<T> {
    fn drop(&mut self) {
        if std::mem::size_of_val(self.buf.as_slice()) > KEEP_MAX {
            return;
        }
        let mut slot = self
            .home
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The larger of two buffers (calls at the same time) stays.
        if slot
            .as_ref()
            .is_none_or(|v| v.capacity() < self.buf.capacity())
        {
            *slot = Some(std::mem::take(&mut self.buf));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_buffer_is_reused_and_zeroed() {
        static KEPT: Kept<f32> = Kept::new();
        let first_ptr = {
            let mut b = KEPT.take(1000, true);
            assert!(b.iter().all(|&x| x == 0.0));
            b.fill(7.0);
            b.as_ptr()
        };
        let b = KEPT.take(600, true);
        assert_eq!(b.len(), 600);
        assert_eq!(
            b.as_ptr(),
            first_ptr,
            "the kept buffer serves a smaller call"
        );
        assert!(b.iter().all(|&x| x == 0.0), "refilled with zeros");
    }

    #[test]
    fn a_buffer_written_whole_keeps_its_values_and_grows_with_zeros() {
        static KEPT: Kept<i64> = Kept::new();
        KEPT.take(4, false).copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(&KEPT.take(3, false)[..], &[1, 2, 3]);
        let b = KEPT.take(4, false);
        assert_eq!(&b[..3], &[1, 2, 3]);
        assert_eq!(b[3], 0, "past the last call's length: zeros");
    }

    #[test]
    fn calls_at_the_same_time_get_their_own_buffers() {
        static KEPT: Kept<u32> = Kept::new();
        let mut a = KEPT.take(10, true);
        let mut b = KEPT.take(20, false);
        a.fill(1);
        b.fill(2);
        assert!(a.iter().all(|&x| x == 1) && b.iter().all(|&x| x == 2));
        drop(a);
        drop(b);
        assert_eq!(KEPT.take(20, true).len(), 20);
    }

    #[test]
    fn a_buffer_larger_than_the_limit_is_not_kept() {
        static KEPT: Kept<u8> = Kept::new();
        drop(KEPT.take(KEEP_MAX + 1, false));
        assert!(KEPT.slot.lock().unwrap().is_none());
    }
}
