//! GPU runtimes of mdh. The OpenCL and CUDA back ends are not built yet: the
//! `opencl` and `cuda` features exist so that code can name them, and this
//! crate offers nothing that pretends to run a kernel.
