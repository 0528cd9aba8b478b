// runtime.cuh: library objects (context, stream, buffers) and error reporting.
#pragma once
#include <cuda_runtime.h>
#include <stdint.h>
#include <string>
#include "cuzk_gpu.h"

void set_error(const std::string& msg);
int fail(int code, const std::string& msg);

// Checks a CUDA call; on failure records "file:line: call: error" and returns.
#define CK(call)                                                                              \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            return fail(e_ == cudaErrorMemoryAllocation ? CUZK_ERR_NOMEM : CUZK_ERR_CUDA,     \
                        std::string(__FILE__) + ":" + std::to_string(__LINE__) + ": " #call ": " + \
                            cudaGetErrorString(e_));                                          \
        }                                                                                     \
    } while (0)

#define RET(call)                    \
    do {                             \
        int r_ = (call);             \
        if (r_ != CUZK_OK) return r_; \
    } while (0)

// A device allocation that grows on demand and is reused (scratch).
struct dev_scratch {
    void* p = nullptr;
    size_t bytes = 0;
    int ensure(size_t want);
    void release();
    template <class T>
    T* as() const { return (T*)p; }
};

// A device. gen counts device resets (cuzk_ctx_reset): every object records the gen it
// was made in, and one from an earlier gen is only deleted on the host, since the
// reset already released its device and pinned memory.
struct cuzk_ctx {
    int dev;
    int gen = 0;
};

struct cuzk_stream {
    cuzk_ctx* ctx;
    int gen = 0;
    cudaStream_t s = nullptr;
    // Pinned staging: two halves so a host memcpy overlaps the previous DMA.
    uint8_t* pinned = nullptr;
    size_t pinned_bytes = 0;
    size_t gather_fill = 0;  // stream_upload_gather's fill size (gather_fill_bytes)
    cudaEvent_t ev[2] = {nullptr, nullptr};
    size_t msm_chunk = 0;  // 0 = default
    cuzk_knobs knobs{};    // cuzk_stream_set_knobs; zero fields: the library's choice
    // Streamed bases (cuzk_bases.host): chunks are copied on their own stream into two
    // buffers, the next chunk's copy beside this chunk's compute. Made on first use.
    cudaStream_t copy = nullptr;
    cudaEvent_t copied[2] = {nullptr, nullptr}, freed[2] = {nullptr, nullptr};
    int sm_count = 0;      // the device's multiprocessors: sizes the MSM's parallel stages
    // MSM scratch, kept across calls.
    dev_scratch keys, vals, keys_alt, vals_alt, sort_tmp, bstart, bend, units, uoff, desc,
        partials, buckets, segs, segs2, bases_chunk, bases_chunk2, scalars, tmp, ulen, uorder, ulen_alt, uorder_alt,
        counts,  // word 0: the most units of one bucket; word 1: the digits written
        bitlen;  // the scalars' bit lengths, 256 bins (msm.cuh's k_bitlen)
};

struct cuzk_buf {
    cuzk_ctx* ctx;
    void* d;
    size_t bytes;
    int gen;
};

struct cuzk_bases {
    cuzk_ctx* ctx;
    int gen = 0;
    int group;
    size_t count, elem;  // number of points, bytes per point
    void* d = nullptr;     // resident copy, or
    void* host = nullptr;  // pinned host copy streamed per MSM
    // Fixed-base precomputation (cuzk_bases_precompute): d holds pc_f copies of the
    // set, copy k at d + k*count being 2^(pc_c*k) times each point, so the MSM's
    // windows w and w + pc_f share buckets. pc_f = 0: none.
    int pc_c = 0, pc_f = 0;
};

int set_device(cuzk_ctx* ctx);
// stale says whether an object made in generation gen outlived a reset of ctx.
inline bool stale(const cuzk_ctx* ctx, int gen) { return ctx->gen != gen; }
// fault_point is where CUZK_FAULT_INJECT makes a call fail (tests; see cuzk_gpu.h).
int fault_point(cudaStream_t st);
int stream_upload(cuzk_stream* s, void* dst, const void* host, size_t bytes);
// stream_copy_engine makes s's copy stream and its events for streamed bases, once.
int stream_copy_engine(cuzk_stream* s);
int stream_upload_gather(cuzk_stream* s, int count, const cuzk_upload_seg* segs);
int stream_download(cuzk_stream* s, void* host, const void* src, size_t bytes);
