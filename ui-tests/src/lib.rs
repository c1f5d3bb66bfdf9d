//! trybuild UI tests of the mdh! macro live in tests/.
