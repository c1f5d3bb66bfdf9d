// mdh CUDA-on-CPU prelude: lets CUDA C kernel source compile with a C++20
// host compiler (g++ >= 11) and run on the CPU. Used by `mdh_gpu::cuda_sim`
// to execute generated CUDA kernels in tests on machines without a GPU.
//
// Execution model
// ---------------
// * The blocks of a grid are distributed over a few OS worker threads
//   (`mdh_sim::launch`); each worker runs one block at a time, to completion.
// * The threads of one block are *fibers* (ucontext) on that worker: a fiber
//   runs until it reaches a barrier (`__syncthreads`, a warp shuffle,
//   `__syncwarp`, ...), then the next fiber runs. A barrier is released when
//   every live thread of its group (block or warp) waits at it. Threads that
//   returned no longer count (as on current GPUs). When no fiber can run and no
//   barrier can be released, the block deadlocked: the program reports it and
//   exits with status 3 instead of hanging.
// * Fibers run in thread order, each as far as it can: a missing
//   `__syncthreads` between a write and a read of shared memory shows up
//   deterministically as a wrong result instead of a rare race.
// * `__shared__` expands to `static thread_local`: one instance per worker
//   thread, and a worker runs the fibers of exactly one block at a time, so all
//   threads of a block see the same shared variables and blocks running on
//   other workers see their own. (Contents are not reset between blocks, just
//   as shared memory is uninitialised on a GPU.)
// * Warps are 32 consecutive linear thread ids (x fastest). Shuffles exchange
//   through a per-warp buffer and two warp barriers.
// * Global-memory atomics are real atomics (GCC `__atomic` builtins): blocks
//   run in parallel on several workers.
// * Only light C/C++ headers are included, to keep compile times short: the
//   tests compile one program per generated kernel.
//
// * Dynamic shared memory (`extern __shared__ T name[];`, which `cuda_sim.rs`
//   rewrites into `#define name ((T*)mdh_sim::dynamic_shared())`) is one area
//   per worker of the launch's size, filled with 0xFF bytes at the start and
//   followed by an inaccessible page: an access past its end faults.
// * `MDH_CUDA_SIM` is defined: sources may emulate what the CPU cannot run
//   (inline PTX) under it.
//
// Limits (documented in `cuda_sim.rs`): no cooperative groups, no textures/surfaces, no
// `__constant__` uploads from the host, shuffle/vote masks are ignored (all
// live lanes of the warp must take part), shuffled values are at most 8 bytes.
#pragma once
#define MDH_CUDA_SIM 1

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <type_traits>

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

// ---------------------------------------------------------------- qualifiers
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __shared__ static thread_local
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__

// ---------------------------------------------------------------- vector types
struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1) : x(x_), y(y_), z(z_) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

#define MDH_SIM_VEC2(T, N)                                                                   \
    struct N##2 {                                                                            \
        T x, y;                                                                              \
    };                                                                                       \
    inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define MDH_SIM_VEC4(T, N)                                                                   \
    struct N##4 {                                                                            \
        T x, y, z, w;                                                                        \
    };                                                                                       \
    inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
MDH_SIM_VEC2(float, float)
MDH_SIM_VEC4(float, float)
MDH_SIM_VEC2(double, double)
MDH_SIM_VEC4(double, double)
MDH_SIM_VEC2(int, int)
MDH_SIM_VEC4(int, int)
MDH_SIM_VEC2(unsigned int, uint)
MDH_SIM_VEC4(unsigned int, uint)
#undef MDH_SIM_VEC2
#undef MDH_SIM_VEC4
struct float3 {
    float x, y, z;
};
inline float3 make_float3(float x, float y, float z) { return float3{x, y, z}; }
struct int3 {
    int x, y, z;
};
inline int3 make_int3(int x, int y, int z) { return int3{x, y, z}; }
inline uint3 make_uint3(unsigned int x, unsigned int y, unsigned int z) { return uint3{x, y, z}; }

constexpr int warpSize = 32;

// ---------------------------------------------------------------- runtime
namespace mdh_sim {

[[noreturn]] inline void fail(const char* what) {
    fprintf(stderr, "mdh cuda_sim: %s\n", what);
    fflush(stderr);
    _Exit(3);
}

enum class State { Ready, WaitBlock, WaitWarp, Done };

struct Fiber {
    ucontext_t ctx;
    uint3 tid;
    unsigned int warp, lane;
    State state;
};

constexpr unsigned int kMaxThreads = 1024;
constexpr unsigned int kMaxWarps = kMaxThreads / 32;

// One per worker thread: runs the fibers of one block at a time.
struct Block {
    ucontext_t sched;
    Fiber* fibers = nullptr;
    unsigned int n = 0; // threads per block
    char* stack_map = nullptr;
    size_t stack_map_bytes = 0, stack_bytes = 0, stack_slot = 0;
    unsigned int live = 0, block_waiting = 0;
    unsigned int warp_live[kMaxWarps], warp_waiting[kMaxWarps];
    unsigned long long exchange[kMaxThreads]; // 32 slots per warp
    void (*body)(void*) = nullptr;
    void* body_ctx = nullptr;
    char* dyn_map = nullptr; // dynamic shared memory, then a guard page
    size_t dyn_map_bytes = 0;
    char* dyn = nullptr;
};

inline thread_local Block* tl_block = nullptr;
inline thread_local Fiber* tl_fiber = nullptr;

} // namespace mdh_sim

// The built-in variables. threadIdx is switched with the fiber; blockIdx is
// per worker; blockDim and gridDim are the same for the whole launch.
inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;

namespace mdh_sim {

inline void fiber_entry() {
    Block* b = tl_block;
    b->body(b->body_ctx);
    tl_fiber->state = State::Done;
    // returning resumes uc_link = the scheduler
}

inline void wait_block() {
    Fiber* f = tl_fiber;
    Block* b = tl_block;
    f->state = State::WaitBlock;
    b->block_waiting++;
    if (swapcontext(&f->ctx, &b->sched) != 0) fail("swapcontext failed");
}

inline void wait_warp() {
    Fiber* f = tl_fiber;
    Block* b = tl_block;
    f->state = State::WaitWarp;
    b->warp_waiting[f->warp]++;
    if (swapcontext(&f->ctx, &b->sched) != 0) fail("swapcontext failed");
}

// A separate function: getcontext "returns twice" for the compiler.
__attribute__((noinline)) inline void init_fiber(Block& b, unsigned int i) {
    Fiber& f = b.fibers[i];
    if (getcontext(&f.ctx) != 0) fail("getcontext failed");
    f.ctx.uc_stack.ss_sp = b.stack_map + i * b.stack_slot + (b.stack_slot - b.stack_bytes);
    f.ctx.uc_stack.ss_size = b.stack_bytes;
    f.ctx.uc_link = &b.sched;
    makecontext(&f.ctx, fiber_entry, 0);
    f.state = State::Ready;
}

inline void run_block(Block& b, uint3 block_idx) {
    blockIdx = block_idx;
    const unsigned int n = b.n, nwarps = (n + 31) / 32;
    b.live = n;
    b.block_waiting = 0;
    for (unsigned int w = 0; w < nwarps; ++w) {
        b.warp_waiting[w] = 0;
        b.warp_live[w] = n - 32 * w < 32 ? n - 32 * w : 32;
    }
    for (unsigned int i = 0; i < n; ++i) init_fiber(b, i);
    while (b.live > 0) {
        bool progress = false;
        for (unsigned int i = 0; i < n; ++i) {
            Fiber& f = b.fibers[i];
            if (f.state != State::Ready) continue;
            tl_fiber = &f;
            threadIdx = f.tid;
            if (swapcontext(&b.sched, &f.ctx) != 0) fail("swapcontext failed");
            progress = true;
            if (f.state == State::Done) {
                b.live--;
                b.warp_live[f.warp]--;
            }
        }
        // Release warp barriers whose live lanes all wait, then the block
        // barrier when every live thread waits at it.
        for (unsigned int w = 0; w < nwarps; ++w) {
            if (b.warp_waiting[w] > 0 && b.warp_waiting[w] == b.warp_live[w]) {
                b.warp_waiting[w] = 0;
                for (unsigned int l = 0; l < 32 && 32 * w + l < n; ++l)
                    if (b.fibers[32 * w + l].state == State::WaitWarp) b.fibers[32 * w + l].state = State::Ready;
                progress = true;
            }
        }
        if (b.live > 0 && b.block_waiting == b.live) {
            b.block_waiting = 0;
            for (unsigned int i = 0; i < n; ++i)
                if (b.fibers[i].state == State::WaitBlock) b.fibers[i].state = State::Ready;
            progress = true;
        }
        if (!progress && b.live > 0) {
            fail("deadlock: some threads of a block wait at __syncthreads() while others wait at a warp-level "
                 "operation (shuffle, vote, __syncwarp) that cannot complete");
        }
    }
    tl_fiber = nullptr;
}

inline size_t stack_size() {
    size_t kib = 256;
    if (const char* s = getenv("MDH_SIM_STACK_KIB")) kib = strtoul(s, nullptr, 10);
    if (kib < 16) kib = 16;
    return kib * 1024;
}

struct Launch {
    dim3 grid, block;
    unsigned long long nblocks;
    unsigned long long next; // the next block to run (atomic)
    size_t stack_bytes, page;
    void (*body)(void*);
    void* body_ctx;
    size_t shared_bytes; // dynamic shared memory per block
};

// The dynamic shared memory of the calling thread's block.
inline void* dynamic_shared() { return tl_block->dyn; }

inline void* worker(void* p) {
    Launch& L = *static_cast<Launch*>(p);
    Block* b = new Block;
    b->body = L.body;
    b->body_ctx = L.body_ctx;
    b->n = L.block.x * L.block.y * L.block.z;
    b->stack_bytes = L.stack_bytes;
    b->fibers = new Fiber[b->n];
    // One mapping: [guard][stack 0][guard][stack 1]... (an overflow faults).
    b->stack_slot = L.stack_bytes + L.page;
    b->stack_map_bytes = b->stack_slot * b->n;
    b->stack_map = static_cast<char*>(mmap(nullptr, b->stack_map_bytes, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (b->stack_map == MAP_FAILED) fail("cannot map the fiber stacks");
    for (unsigned int i = 0; i < b->n; ++i) {
        mprotect(b->stack_map + i * b->stack_slot, L.page, PROT_NONE);
        Fiber& f = b->fibers[i];
        f.tid = uint3{i % L.block.x, (i / L.block.x) % L.block.y, i / (L.block.x * L.block.y)};
        f.warp = i / 32;
        f.lane = i % 32;
    }
    // Dynamic shared memory ending at a guard page (16-byte aligned start).
    const size_t dyn = (L.shared_bytes + 15) / 16 * 16, dyn_pages = (dyn + L.page - 1) / L.page * L.page;
    b->dyn_map_bytes = dyn_pages + L.page;
    b->dyn_map = static_cast<char*>(
        mmap(nullptr, b->dyn_map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (b->dyn_map == MAP_FAILED) fail("cannot map the dynamic shared memory");
    mprotect(b->dyn_map + dyn_pages, L.page, PROT_NONE);
    b->dyn = b->dyn_map + (dyn_pages - dyn);
    memset(b->dyn, 0xFF, dyn);
    tl_block = b;
    for (;;) {
        unsigned long long id = __atomic_fetch_add(&L.next, 1ull, __ATOMIC_RELAXED);
        if (id >= L.nblocks) break;
        uint3 bi{static_cast<unsigned int>(id % L.grid.x), static_cast<unsigned int>((id / L.grid.x) % L.grid.y),
                 static_cast<unsigned int>(id / (1ull * L.grid.x * L.grid.y))};
        run_block(*b, bi);
    }
    tl_block = nullptr;
    munmap(b->dyn_map, b->dyn_map_bytes);
    munmap(b->stack_map, b->stack_map_bytes);
    delete[] b->fibers;
    delete b;
    return nullptr;
}

// Runs `body(ctx)` (a call of the kernel) for every thread of every block.
inline void launch_raw(dim3 grid, dim3 block, size_t shared_bytes, void (*body)(void*), void* ctx) {
    gridDim = grid;
    blockDim = block;
    const unsigned long long nthreads = 1ull * block.x * block.y * block.z;
    Launch L{grid, block, 1ull * grid.x * grid.y * grid.z, 0, 0, 0, body, ctx, shared_bytes};
    if (nthreads == 0 || L.nblocks == 0) return;
    if (nthreads > kMaxThreads) fail("more than 1024 threads per block");
    L.page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    L.stack_bytes = (stack_size() + L.page - 1) / L.page * L.page;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned long workers = cpus > 0 ? static_cast<unsigned long>(cpus) : 1;
    if (workers > 16) workers = 16; // each worker maps 2 areas per thread of a block
    if (const char* s = getenv("MDH_SIM_THREADS")) workers = strtoul(s, nullptr, 10);
    if (workers < 1) workers = 1;
    if (workers > L.nblocks) workers = static_cast<unsigned long>(L.nblocks);
    if (workers == 1) {
        worker(&L);
        return;
    }
    pthread_t* pool = new pthread_t[workers];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    for (unsigned long i = 0; i < workers; ++i)
        if (pthread_create(&pool[i], &attr, worker, &L) != 0) fail("cannot start a worker thread");
    for (unsigned long i = 0; i < workers; ++i) pthread_join(pool[i], nullptr);
    pthread_attr_destroy(&attr);
    delete[] pool;
}

// Runs the callable `f` (a lambda that calls the kernel) for every thread,
// with `shared_bytes` of dynamic shared memory per block.
template <class F> inline void launch(dim3 grid, dim3 block, size_t shared_bytes, const F& f) {
    launch_raw(
        grid, block, shared_bytes, [](void* p) { (*static_cast<const F*>(p))(); },
        const_cast<void*>(static_cast<const void*>(&f)));
}
template <class F> inline void launch(dim3 grid, dim3 block, const F& f) { launch(grid, block, 0, f); }

// ---- warp exchange: every live lane writes, waits, reads, waits.
template <class T> inline unsigned long long to_bits(T v) {
    static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffled values must be at most 8 bytes");
    unsigned long long u = 0;
    memcpy(&u, &v, sizeof(T));
    return u;
}
template <class T> inline T from_bits(unsigned long long u) {
    T v;
    memcpy(&v, &u, sizeof(T));
    return v;
}

// Returns the value of lane `src` of the caller's warp, or `v` when `src` is
// negative or not a thread of the block.
template <class T> inline T exchange(T v, int src) {
    Fiber* f = tl_fiber;
    Block* b = tl_block;
    unsigned long long* slots = &b->exchange[32ull * f->warp];
    slots[f->lane] = to_bits(v);
    wait_warp();
    T r = v;
    const unsigned int n = b->n;
    if (src >= 0 && src < 32 && 32 * f->warp + static_cast<unsigned int>(src) < n) r = from_bits<T>(slots[src]);
    wait_warp();
    return r;
}

inline unsigned int lane_id() { return tl_fiber->lane; }

} // namespace mdh_sim

// ---------------------------------------------------------------- sync
inline void __syncthreads() { mdh_sim::wait_block(); }
inline void __syncwarp(unsigned int = 0xffffffffu) { mdh_sim::wait_warp(); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_block() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline void __threadfence_system() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

// ---------------------------------------------------------------- shuffles, votes
template <class T> inline T __shfl_sync(unsigned int, T v, int src, int width = warpSize) {
    const int lane = static_cast<int>(mdh_sim::lane_id());
    const int base = lane - lane % width;
    return mdh_sim::exchange(v, base + ((src % width) + width) % width);
}
template <class T> inline T __shfl_down_sync(unsigned int, T v, unsigned int delta, int width = warpSize) {
    const int lane = static_cast<int>(mdh_sim::lane_id());
    const int base = lane - lane % width;
    const int src = lane + static_cast<int>(delta);
    return mdh_sim::exchange(v, src < base + width ? src : -1);
}
template <class T> inline T __shfl_up_sync(unsigned int, T v, unsigned int delta, int width = warpSize) {
    const int lane = static_cast<int>(mdh_sim::lane_id());
    const int base = lane - lane % width;
    const int src = lane - static_cast<int>(delta);
    return mdh_sim::exchange(v, src >= base ? src : -1);
}
template <class T> inline T __shfl_xor_sync(unsigned int, T v, int mask, int width = warpSize) {
    const int lane = static_cast<int>(mdh_sim::lane_id());
    const int base = lane - lane % width;
    const int src = lane ^ mask;
    return mdh_sim::exchange(v, (src >= base && src < base + width) ? src : -1);
}
inline unsigned int __ballot_sync(unsigned int, int pred) {
    using namespace mdh_sim;
    Fiber* f = tl_fiber;
    Block* b = tl_block;
    unsigned long long* slots = &b->exchange[32ull * f->warp];
    slots[f->lane] = pred ? 1 : 0;
    wait_warp();
    // Lanes that take part are waiting or ready now; lanes that exited are Done.
    unsigned int r = 0;
    for (unsigned int l = 0; l < 32 && 32 * f->warp + l < b->n; ++l)
        if (b->fibers[32 * f->warp + l].state != State::Done && slots[l]) r |= 1u << l;
    wait_warp();
    return r;
}
inline int __any_sync(unsigned int m, int pred) { return __ballot_sync(m, pred) != 0; }
inline int __all_sync(unsigned int m, int pred) {
    // lanes that have exited do not vote
    unsigned int live = __ballot_sync(m, 1);
    return (__ballot_sync(m, pred) & live) == live;
}
inline unsigned int __activemask() { return 0xffffffffu; }

// ---------------------------------------------------------------- atomics
// GCC's `__atomic` builtins (lock-free for 4- and 8-byte types); floating
// point read-modify-writes are compare-and-swap loops. The value parameters
// are not deduced (`std::type_identity_t`), so that
// `atomicAdd(&unsigned_counter, 1)` converts `1` as CUDA's overloads do.
template <class T> using mdh_sim_same = std::type_identity_t<T>;
namespace mdh_sim {
template <class T, class F> inline T atomic_update(T* p, F f) {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T desired = f(old);
    while (!__atomic_compare_exchange(p, &old, &desired, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) desired = f(old);
    return old;
}
} // namespace mdh_sim
template <class T> inline T atomicAdd(T* p, mdh_sim_same<T> v) {
    if constexpr (std::is_integral_v<T>)
        return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    else
        return mdh_sim::atomic_update(p, [v](T x) { return static_cast<T>(x + v); });
}
template <class T> inline T atomicSub(T* p, mdh_sim_same<T> v) {
    if constexpr (std::is_integral_v<T>)
        return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);
    else
        return mdh_sim::atomic_update(p, [v](T x) { return static_cast<T>(x - v); });
}
template <class T> inline T atomicExch(T* p, mdh_sim_same<T> v) {
    T old;
    __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
    return old;
}
template <class T> inline T atomicAnd(T* p, mdh_sim_same<T> v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
template <class T> inline T atomicOr(T* p, mdh_sim_same<T> v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
template <class T> inline T atomicXor(T* p, mdh_sim_same<T> v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); }
template <class T> inline T atomicCAS(T* p, mdh_sim_same<T> expected, mdh_sim_same<T> desired) {
    __atomic_compare_exchange(p, &expected, &desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected; // the old value in both cases
}
template <class T> inline T atomicMax(T* p, mdh_sim_same<T> v) {
    return mdh_sim::atomic_update(p, [v](T x) { return x < v ? v : x; });
}
template <class T> inline T atomicMin(T* p, mdh_sim_same<T> v) {
    return mdh_sim::atomic_update(p, [v](T x) { return v < x ? v : x; });
}
inline unsigned int atomicInc(unsigned int* p, unsigned int limit) {
    return mdh_sim::atomic_update(p, [limit](unsigned int x) { return x >= limit ? 0u : x + 1u; });
}
inline unsigned int atomicDec(unsigned int* p, unsigned int limit) {
    return mdh_sim::atomic_update(p, [limit](unsigned int x) { return (x == 0u || x > limit) ? limit : x - 1u; });
}
// The _block / _system scoped variants behave like the device-wide ones.
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin

// ---------------------------------------------------------------- math
// min/max as in CUDA: overloads for every arithmetic pair (usual conversions).
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> min(A a, B b) {
    using C = std::common_type_t<A, B>;
    C x = static_cast<C>(a), y = static_cast<C>(b);
    return y < x ? y : x;
}
template <class A, class B, class = std::enable_if_t<std::is_arithmetic_v<A> && std::is_arithmetic_v<B>>>
inline std::common_type_t<A, B> max(A a, B b) {
    using C = std::common_type_t<A, B>;
    C x = static_cast<C>(a), y = static_cast<C>(b);
    return x < y ? y : x;
}
inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __log2f(float x) { return log2f(x); }
inline float __powf(float a, float b) { return powf(a, b); }
inline float __sinf(float x) { return sinf(x); }
inline float __cosf(float x) { return cosf(x); }
inline float __tanf(float x) { return tanf(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsqrt_rn(float x) { return sqrtf(x); }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline int __float_as_int(float x) {
    int r;
    memcpy(&r, &x, 4);
    return r;
}
inline float __int_as_float(int x) {
    float r;
    memcpy(&r, &x, 4);
    return r;
}
inline unsigned int __float_as_uint(float x) {
    unsigned int r;
    memcpy(&r, &x, 4);
    return r;
}
inline float __uint_as_float(unsigned int x) {
    float r;
    memcpy(&r, &x, 4);
    return r;
}
inline long long __double_as_longlong(double x) {
    long long r;
    memcpy(&r, &x, 8);
    return r;
}
inline double __longlong_as_double(long long x) {
    double r;
    memcpy(&r, &x, 8);
    return r;
}
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz(static_cast<unsigned int>(x)); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll(static_cast<unsigned long long>(x)); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline int __mul24(int a, int b) { return a * b; }
inline unsigned int __umul24(unsigned int a, unsigned int b) { return a * b; }
inline int __mulhi(int a, int b) { return static_cast<int>((1ll * a * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return static_cast<unsigned int>((1ull * a * b) >> 32);
}
template <class T> inline T __ldg(const T* p) { return *p; }

// ---------------------------------------------------------------- host side
namespace mdh_sim {

// Buffers live in their own mapping and start 256-byte aligned (as
// cudaMalloc's do), less than 256 bytes before an inaccessible page: accesses
// further past the end fault (SIGSEGV). Canary bytes on both sides catch
// writes just before the start or just after the end.
struct Buffer {
    char* map = nullptr;
    size_t map_bytes = 0;
    char* data = nullptr;
    size_t bytes = 0;
    char* end = nullptr; // the inaccessible page
};
constexpr size_t kCanary = 256;
constexpr unsigned char kCanaryByte = 0xA5;

struct Bytes {
    char* data = nullptr;
    size_t size = 0;
};

inline void arg_path(char* out, size_t cap, const char* dir, int i) {
    if (snprintf(out, cap, "%s/arg%d.bin", dir, i) >= static_cast<int>(cap)) fail("the run folder's path is too long");
}

inline Bytes read_arg(const char* dir, int i) {
    char path[4096];
    arg_path(path, sizeof path, dir, i);
    FILE* f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "mdh cuda_sim: cannot open %s: %s\n", path, strerror(errno));
        _Exit(3);
    }
    Bytes v;
    size_t cap = 0, got;
    for (;;) {
        if (v.size == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            v.data = static_cast<char*>(realloc(v.data, cap));
            if (!v.data) fail("out of memory");
        }
        got = fread(v.data + v.size, 1, cap - v.size, f);
        if (got == 0) break;
        v.size += got;
    }
    fclose(f);
    return v;
}

inline void write_arg(const char* dir, int i, const char* data, size_t n) {
    char path[4096];
    arg_path(path, sizeof path, dir, i);
    FILE* f = fopen(path, "wb");
    if (!f || (n > 0 && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
        fprintf(stderr, "mdh cuda_sim: cannot write %s\n", path);
        _Exit(3);
    }
}

template <class T> inline T* load_buffer(const char* dir, int i, Buffer& b) {
    Bytes v = read_arg(dir, i);
    if (v.size % sizeof(T) != 0) {
        fprintf(stderr, "mdh cuda_sim: argument %d has %zu bytes, not a multiple of its element size %zu\n", i,
                     v.size, sizeof(T));
        _Exit(3);
    }
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t before = (kCanary + 256 + v.size + page - 1) / page * page;
    b.map_bytes = before + page;
    b.map = static_cast<char*>(
        mmap(nullptr, b.map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (b.map == MAP_FAILED) fail("cannot map a buffer");
    b.end = b.map + before;
    mprotect(b.end, page, PROT_NONE);
    b.bytes = v.size;
    b.data = reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(b.end - v.size) & ~uintptr_t(255));
    memset(b.map, kCanaryByte, before);
    if (v.size > 0) memcpy(b.data, v.data, v.size);
    free(v.data);
    return reinterpret_cast<T*>(b.data);
}

inline void store_buffer(const char* dir, int i, const Buffer& b) {
    for (char* p = b.data - kCanary; p < b.data; ++p)
        if (static_cast<unsigned char>(*p) != kCanaryByte) {
            fprintf(stderr, "mdh cuda_sim: the kernel wrote %td bytes before the start of argument %d\n",
                         b.data - p, i);
            _Exit(3);
        }
    for (char* p = b.data + b.bytes; p < b.end; ++p)
        if (static_cast<unsigned char>(*p) != kCanaryByte) {
            fprintf(stderr, "mdh cuda_sim: the kernel wrote %td bytes past the end of argument %d\n",
                         p - (b.data + b.bytes) + 1, i);
            _Exit(3);
        }
    write_arg(dir, i, b.data, b.bytes);
}

template <class T> inline T load_scalar(const char* dir, int i) {
    Bytes v = read_arg(dir, i);
    if (v.size != sizeof(T)) {
        fprintf(stderr, "mdh cuda_sim: scalar argument %d has %zu bytes, its C type has %zu\n", i, v.size,
                     sizeof(T));
        _Exit(3);
    }
    T x;
    memcpy(&x, v.data, sizeof(T));
    free(v.data);
    return x;
}

inline size_t parse_bytes(const char* s) {
    char* end = nullptr;
    unsigned long v = strtoul(s, &end, 10);
    if (!end || *end != '\0' || v > 0xffffffffu) fail("bad shared memory size on the command line");
    return static_cast<size_t>(v);
}

inline unsigned int parse_dim(const char* s) {
    char* end = nullptr;
    unsigned long v = strtoul(s, &end, 10);
    if (!end || *end != '\0' || v == 0 || v > 0xffffffffu) fail("bad launch dimension on the command line");
    return static_cast<unsigned int>(v);
}

} // namespace mdh_sim
