// runtime.cu: devices, contexts, streams, buffers, staging copies, errors.
#include <cstdio>
#include <cstring>
#include <string>
#include <algorithm>
#include <atomic>
#include <memory>
#include <chrono>
#include <mutex>
#include <cstdlib>
#include <thread>
#include <vector>
#include "runtime.cuh"

static thread_local std::string last_error;

void set_error(const std::string& msg) { last_error = msg; }
int fail(int code, const std::string& msg) {
    last_error = msg;
    return code;
}

int dev_scratch::ensure(size_t want) {
    if (want <= bytes) return CUZK_OK;
    if (p) cudaFree(p);
    p = nullptr;
    bytes = 0;
    if (want == 0) return CUZK_OK;
    CK(cudaMalloc(&p, want));
    bytes = want;
    return CUZK_OK;
}

void dev_scratch::release() {
    if (p) cudaFree(p);
    p = nullptr;
    bytes = 0;
}

int set_device(cuzk_ctx* ctx) {
    CK(cudaSetDevice(ctx->dev));
    return CUZK_OK;
}

extern "C" int cuzk_abi_version(void) { return CUZK_ABI_VERSION; }
extern "C" const char* cuzk_last_error(void) { return last_error.c_str(); }

extern "C" int cuzk_device_count(int* n) {
    if (!n) return fail(CUZK_ERR_ARG, "n is NULL");
    *n = 0;
    cudaError_t e = cudaGetDeviceCount(n);
    if (e != cudaSuccess) {
        *n = 0;
        return fail(CUZK_ERR_NODEVICE, std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e));
    }
    return CUZK_OK;
}

extern "C" int cuzk_device_info(int dev, cuzk_device_info_t* out) {
    if (!out) return fail(CUZK_ERR_ARG, "out is NULL");
    memset(out, 0, sizeof(*out));
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, dev));
    snprintf(out->name, sizeof(out->name), "%s", p.name);
    const unsigned char* u = (const unsigned char*)p.uuid.bytes;
    snprintf(out->uuid, sizeof(out->uuid),
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    out->sm_count = p.multiProcessorCount;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    CK(cudaSetDevice(dev));
    CK(cudaMemGetInfo(&out->free_mem, &out->total_mem));
    return CUZK_OK;
}

extern "C" int cuzk_ctx_create(int dev, cuzk_ctx** out) {
    if (!out) return fail(CUZK_ERR_ARG, "out is NULL");
    int n = 0;
    RET(cuzk_device_count(&n));
    if (dev < 0 || dev >= n) return fail(CUZK_ERR_NODEVICE, "device " + std::to_string(dev) + " not present (" + std::to_string(n) + " devices)");
    CK(cudaSetDevice(dev));
    CK(cudaFree(0));  // create the primary context now, so failures surface here
    *out = new cuzk_ctx{dev};
    return CUZK_OK;
}

extern "C" int cuzk_ctx_destroy(cuzk_ctx* ctx) {
    delete ctx;
    return CUZK_OK;
}

extern "C" int cuzk_ctx_check(cuzk_ctx* ctx) {
    if (!ctx) return fail(CUZK_ERR_ARG, "NULL argument");
    RET(set_device(ctx));
    CK(cudaDeviceSynchronize());
    return CUZK_OK;
}

extern "C" int cuzk_ctx_reset(cuzk_ctx* ctx) {
    if (!ctx) return fail(CUZK_ERR_ARG, "NULL argument");
    ctx->gen++;  // even on failure: what was made before cannot be trusted
    // After a sticky fault the driver may report the device busy for a while after the
    // reset (seen on the H200: cudaErrorDevicesUnavailable from the next context), so
    // the reset and the new primary context are tried again for up to 10 s.
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < 50; i++) {
        if (i) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        cudaSetDevice(ctx->dev);
        e = cudaDeviceReset();
        cudaGetLastError();
        if (e != cudaSuccess) continue;
        e = cudaSetDevice(ctx->dev);
        if (e == cudaSuccess) e = cudaFree(0);  // the new primary context
        cudaGetLastError();
        if (e == cudaSuccess) return CUZK_OK;
    }
    return fail(CUZK_ERR_CUDA, std::string("device reset: ") + cudaGetErrorString(e) + " (for 10 s)");
}

namespace {
__global__ void k_trap() { __trap(); }
std::mutex fault_mu;
std::string fault_spec;  // the value the count below belongs to
long fault_calls = 0;
}  // namespace

// CUZK_FAULT_INJECT=error:N or trap:N makes the N-th MSM call (counted from 1 since
// the variable took this value) fail: error returns a CUDA error and leaves the device
// usable, trap runs a kernel that traps, a sticky fault that only a device reset clears.
// An MSM call without the variable forgets the count, so setting the same value again
// counts afresh.
int fault_point(cudaStream_t st) {
    const char* e = getenv("CUZK_FAULT_INJECT");
    if (!e || !*e) {
        std::lock_guard<std::mutex> g(fault_mu);
        fault_spec.clear();
        return CUZK_OK;
    }
    const char* colon = strchr(e, ':');
    if (!colon) return CUZK_OK;
    long n = atol(colon + 1);
    {
        std::lock_guard<std::mutex> g(fault_mu);
        if (fault_spec != e) {
            fault_spec = e;
            fault_calls = 0;
        }
        if (n <= 0 || ++fault_calls != n) return CUZK_OK;
    }
    if (strncmp(e, "trap:", 5) == 0) {
        k_trap<<<1, 1, 0, st>>>();
        CK(cudaStreamSynchronize(st));
        return fail(CUZK_ERR_CUDA, "injected trap did not fault");
    }
    return fail(CUZK_ERR_CUDA, "injected fault (CUZK_FAULT_INJECT)");
}

// Bytes staged per fill of stream_upload_gather: small enough that copies into later
// fills overlap the DMA out of earlier ones for most of an upload (one fill of a
// whole 32 MiB half left the copy and the DMA one after the other: 3.9 ms for a batch
// of 16 solutions of 2^14 in a worker's execution trace, docs/lab/BENCHMARKS.md).
static size_t gather_fill_bytes(size_t pinned) { return std::max<size_t>(1, std::min<size_t>(4u << 20, pinned / 2)); }

extern "C" int cuzk_stream_create(cuzk_ctx* ctx, size_t staging_bytes, cuzk_stream** out) {
    if (!ctx || !out) return fail(CUZK_ERR_ARG, "NULL argument");
    RET(set_device(ctx));
    if (staging_bytes == 0) staging_bytes = 64u << 20;
    staging_bytes = (staging_bytes + 255) & ~(size_t)255;
    cuzk_stream* s = new cuzk_stream();
    s->ctx = ctx;
    s->gen = ctx->gen;
    cudaError_t e = cudaStreamCreateWithFlags(&s->s, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s->ev[0], cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&s->ev[1], cudaEventDisableTiming);
    if (e == cudaSuccess) e = cudaHostAlloc((void**)&s->pinned, staging_bytes, cudaHostAllocDefault);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&s->sm_count, cudaDevAttrMultiProcessorCount, ctx->dev);
    if (e != cudaSuccess) {
        // What was made before the failure is freed with it.
        if (s->pinned) cudaFreeHost(s->pinned);
        for (cudaEvent_t ev : s->ev)
            if (ev) cudaEventDestroy(ev);
        if (s->s) cudaStreamDestroy(s->s);
        delete s;
        return fail(CUZK_ERR_CUDA, std::string("stream create: ") + cudaGetErrorString(e));
    }
    s->pinned_bytes = staging_bytes;
    s->gather_fill = gather_fill_bytes(staging_bytes);
    *out = s;
    return CUZK_OK;
}

extern "C" int cuzk_stream_destroy(cuzk_stream* s) {
    if (!s) return CUZK_OK;
    if (stale(s->ctx, s->gen)) {
        delete s;
        return CUZK_OK;
    }
    cudaSetDevice(s->ctx->dev);
    cudaStreamSynchronize(s->s);
    dev_scratch* all[] = {&s->keys, &s->vals, &s->keys_alt, &s->vals_alt, &s->sort_tmp, &s->bstart,
                          &s->bend, &s->units, &s->uoff, &s->desc, &s->partials, &s->buckets,
                          &s->segs, &s->segs2, &s->bases_chunk, &s->bases_chunk2, &s->scalars, &s->tmp,
                          &s->ulen, &s->uorder, &s->ulen_alt, &s->uorder_alt, &s->counts};
    for (auto* d : all) d->release();
    cudaFreeHost(s->pinned);
    cudaEventDestroy(s->ev[0]);
    cudaEventDestroy(s->ev[1]);
    if (s->copy) {
        cudaStreamSynchronize(s->copy);
        for (cudaEvent_t ev : {s->copied[0], s->copied[1], s->freed[0], s->freed[1]})
            if (ev) cudaEventDestroy(ev);
        cudaStreamDestroy(s->copy);
    }
    cudaStreamDestroy(s->s);
    delete s;
    return CUZK_OK;
}

int stream_copy_engine(cuzk_stream* s) {
    if (s->copy) return CUZK_OK;
    cudaStream_t c = nullptr;
    cudaEvent_t ev[4] = {nullptr, nullptr, nullptr, nullptr};
    cudaError_t e = cudaStreamCreateWithFlags(&c, cudaStreamNonBlocking);
    for (int i = 0; i < 4 && e == cudaSuccess; i++) e = cudaEventCreateWithFlags(&ev[i], cudaEventDisableTiming);
    if (e != cudaSuccess) {
        for (cudaEvent_t x : ev)
            if (x) cudaEventDestroy(x);
        if (c) cudaStreamDestroy(c);
        return fail(CUZK_ERR_CUDA, std::string("copy stream create: ") + cudaGetErrorString(e));
    }
    s->copied[0] = ev[0];
    s->copied[1] = ev[1];
    s->freed[0] = ev[2];
    s->freed[1] = ev[3];
    s->copy = c;
    return CUZK_OK;
}

extern "C" int cuzk_stream_sync(cuzk_stream* s) {
    if (!s) return fail(CUZK_ERR_ARG, "NULL stream");
    RET(set_device(s->ctx));
    CK(cudaStreamSynchronize(s->s));
    CK(cudaGetLastError());
    return CUZK_OK;
}

extern "C" int cuzk_stream_set_msm_chunk(cuzk_stream* s, size_t points) {
    if (!s) return fail(CUZK_ERR_ARG, "NULL stream");
    s->msm_chunk = points;
    return CUZK_OK;
}

extern "C" int cuzk_stream_set_knobs(cuzk_stream* s, const cuzk_knobs* k) {
    if (!s || !k) return fail(CUZK_ERR_ARG, "NULL argument");
    if (k->version != CUZK_KNOBS_VERSION || k->size != sizeof(cuzk_knobs))
        return fail(CUZK_ERR_ARG, "knobs version " + std::to_string(k->version) + " size " + std::to_string(k->size) +
                                      ", want version " + std::to_string(CUZK_KNOBS_VERSION) + " size " +
                                      std::to_string(sizeof(cuzk_knobs)));
    for (int c : {k->msm_c_g1, k->msm_c_g2})
        if (c != 0 && (c < CUZK_MSM_C_MIN || c > CUZK_MSM_C_MAX))
            return fail(CUZK_ERR_ARG, "MSM window width " + std::to_string(c) + " out of range");
    s->knobs = *k;
    return CUZK_OK;
}

// memcpy on several threads: one core copies into pinned memory at about 5-10 GB/s,
// well under the PCIe link, and it was most of a proof's upload time.
static void par_memcpy(void* dst, const void* src, size_t n) {
    const size_t min_part = 4 << 20;
    size_t parts = std::min<size_t>(8, n / min_part);
    if (parts < 2) {
        memcpy(dst, src, n);
        return;
    }
    std::vector<std::thread> th;
    size_t step = (n + parts - 1) / parts;
    for (size_t i = 1; i < parts; i++) {
        size_t off = i * step, len = std::min(step, n - off);
        th.emplace_back([=] { memcpy((uint8_t*)dst + off, (const uint8_t*)src + off, len); });
    }
    memcpy(dst, src, step);
    for (auto& t : th) t.join();
}

// Host -> device through the two pinned halves: the memcpy into one half overlaps the
// DMA out of the other.
int stream_upload(cuzk_stream* s, void* dst, const void* host, size_t bytes) {
    size_t half = s->pinned_bytes / 2;
    const uint8_t* src = (const uint8_t*)host;
    int k = 0;
    for (size_t off = 0; off < bytes; off += half, k ^= 1) {
        size_t n = bytes - off < half ? bytes - off : half;
        CK(cudaEventSynchronize(s->ev[k]));  // this half's previous DMA is done
        par_memcpy(s->pinned + k * half, src + off, n);
        CK(cudaMemcpyAsync((uint8_t*)dst + off, s->pinned + k * half, n, cudaMemcpyHostToDevice, s->s));
        CK(cudaEventRecord(s->ev[k], s->s));
    }
    CK(cudaStreamSynchronize(s->s));
    return CUZK_OK;
}

// Many host -> device copies through the pinned buffer with one synchronization. The
// pieces are laid end to end into fills (a piece crossing a fill's end is split);
// fill j uses slot j % R of the pinned buffer (R slots). Up to 8 threads each copy
// their share of fill 0, then of fill 1, and so on, so fill j is complete about
// (j+1)/F of the way through the copy, and its DMA (issued by this thread as soon as
// every share is in) overlaps the copies of the fills after it. A thread reusing a
// slot first waits for the DMA of the fill that used it before. A batch of small
// solutions is many pieces of hundreds of KiB, which one upload at a time cost a
// synchronization and a single-threaded copy each.
int stream_upload_gather(cuzk_stream* s, int count, const cuzk_upload_seg* segs) {
    struct piece {
        uint8_t* dst;
        const uint8_t* src;
        size_t n, at;  // bytes, offset in the fill
    };
    struct fill_t {
        std::vector<piece> pieces;
        size_t used = 0;
    };
    const size_t fb = s->gather_fill;
    const int R = (int)std::min<size_t>(64, s->pinned_bytes / fb);
    std::vector<fill_t> fills(1);
    for (int i = 0; i < count; i++) {
        uint8_t* dst = (uint8_t*)segs[i].buf->d + segs[i].offset;
        const uint8_t* src = (const uint8_t*)segs[i].host;
        size_t left = segs[i].bytes;
        while (left > 0) {
            if (fills.back().used == fb) fills.emplace_back();
            fill_t& f = fills.back();
            size_t n = std::min(left, fb - f.used);
            f.pieces.push_back({dst, src, n, f.used});
            f.used += n;
            dst += n;
            src += n;
            left -= n;
        }
    }
    if (fills.back().used == 0) fills.pop_back();
    const int F = (int)fills.size();
    if (F == 0) return CUZK_OK;
    size_t total = 0;
    for (const fill_t& f : fills) total += f.used;
    const int T = (int)std::min<size_t>(8, std::max<size_t>(1, total / (1u << 20)));

    std::vector<cudaEvent_t> ev;
    ev.reserve(std::min(R, F));
    for (int k = 0; k < std::min(R, F); k++) {
        cudaEvent_t e;
        cudaError_t ce = cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
        if (ce != cudaSuccess) {
            for (cudaEvent_t made : ev) cudaEventDestroy(made);
            return fail(CUZK_ERR_CUDA, std::string("gathered upload: event create: ") + cudaGetErrorString(ce));
        }
        ev.push_back(e);
    }
    std::unique_ptr<std::atomic<int>[]> copied(new std::atomic<int>[F]);  // shares copied
    std::unique_ptr<std::atomic<bool>[]> issued(new std::atomic<bool>[F]);  // DMA enqueued
    for (int j = 0; j < F; j++) {
        copied[j] = 0;
        issued[j] = false;
    }
    std::atomic<bool> abort{false};
    std::atomic<int> worker_err{CUZK_OK};
    const int dev = s->ctx->dev;
    // Thread t's share of fill j: bytes [t*step, (t+1)*step) of it, into its slot.
    auto copy_share = [&](int j, int t) {
        const fill_t& f = fills[j];
        uint8_t* stage = s->pinned + (size_t)(j % R) * fb;
        const size_t step = (f.used + T - 1) / T, lo = std::min(f.used, t * step), hi = std::min(f.used, lo + step);
        for (const piece& p : f.pieces) {
            size_t a = std::max(lo, p.at), b = std::min(hi, p.at + p.n);
            if (a < b) memcpy(stage + a, p.src + (a - p.at), b - a);
        }
        copied[j].fetch_add(1);
    };
    auto worker = [&](int t) {
        if (t > 0) cudaSetDevice(dev);  // the events belong to this device
        for (int j = 0; j < F && !abort; j++) {
            if (j >= R) {  // slot j % R: fill j - R's DMA must be done with it
                while (!issued[j - R] && !abort) std::this_thread::yield();
                if (abort) break;
                cudaError_t e = cudaEventSynchronize(ev[j % R]);
                if (e != cudaSuccess) {
                    worker_err = CUZK_ERR_CUDA;
                    abort = true;
                    break;
                }
            }
            copy_share(j, t);
        }
    };
    std::vector<std::thread> th;
    for (int t = 1; t < T; t++) th.emplace_back(worker, t);
    // This thread copies its own share of each fill and enqueues each fill's DMA once
    // all T shares are in. Its copy of fill j comes before its wait for fill j, so it
    // never waits on a share it still owes.
    cudaError_t err = cudaSuccess;
    int j = 0;
    // Enqueues the DMAs of fills j .. upto-1 that are fully copied, in order; with
    // wait, waits for each to be.
    auto issue_ready = [&](int upto, bool wait) {
        while (j < upto && err == cudaSuccess) {
            if (copied[j].load() < T) {
                if (!wait || abort) return;
                std::this_thread::yield();
                continue;
            }
            for (const piece& p : fills[j].pieces) {
                err = cudaMemcpyAsync(p.dst, s->pinned + (size_t)(j % R) * fb + p.at, p.n, cudaMemcpyHostToDevice, s->s);
                if (err != cudaSuccess) break;
            }
            if (err == cudaSuccess) err = cudaEventRecord(ev[j % R], s->s);
            if (err != cudaSuccess) break;
            issued[j] = true;
            j++;
        }
    };
    {
        // worker(0) inlined with DMA issuing between its fills.
        for (int k = 0; k < F && !abort && err == cudaSuccess; k++) {
            if (k >= R) {
                // Fill k - R must be issued before its slot can be reused; this thread
                // issues it, so issue everything ready up to it (waiting if needed).
                issue_ready(k - R + 1, true);
                if (err != cudaSuccess || abort) break;
                cudaError_t e = cudaEventSynchronize(ev[k % R]);
                if (e != cudaSuccess) {
                    err = e;
                    break;
                }
            }
            copy_share(k, 0);
            issue_ready(k + 1, false);
        }
        if (err == cudaSuccess && !abort) issue_ready(F, true);
    }
    if (err != cudaSuccess) abort = true;
    for (auto& t : th) t.join();
    cudaError_t serr = cudaStreamSynchronize(s->s);  // every DMA out of the pinned buffer is done
    for (auto& e : ev) cudaEventDestroy(e);
    if (err != cudaSuccess) return fail(CUZK_ERR_CUDA, std::string("gathered upload: ") + cudaGetErrorString(err));
    if (worker_err != CUZK_OK) return fail(CUZK_ERR_CUDA, "gathered upload: waiting for a staging slot failed");
    if (serr != cudaSuccess) return fail(CUZK_ERR_CUDA, std::string("gathered upload: ") + cudaGetErrorString(serr));
    return CUZK_OK;
}

int stream_download(cuzk_stream* s, void* host, const void* src, size_t bytes) {
    size_t half = s->pinned_bytes / 2;
    uint8_t* dst = (uint8_t*)host;
    for (size_t off = 0; off < bytes; off += half) {
        size_t n = bytes - off < half ? bytes - off : half;
        CK(cudaMemcpyAsync(s->pinned, (const uint8_t*)src + off, n, cudaMemcpyDeviceToHost, s->s));
        CK(cudaStreamSynchronize(s->s));
        par_memcpy(dst + off, s->pinned, n);
    }
    return CUZK_OK;
}

extern "C" int cuzk_buf_alloc(cuzk_ctx* ctx, size_t bytes, cuzk_buf** out) {
    if (!ctx || !out) return fail(CUZK_ERR_ARG, "NULL argument");
    RET(set_device(ctx));
    void* d = nullptr;
    CK(cudaMalloc(&d, bytes ? bytes : 1));
    *out = new cuzk_buf{ctx, d, bytes, ctx->gen};
    return CUZK_OK;
}

extern "C" int cuzk_buf_free(cuzk_buf* b) {
    if (!b) return CUZK_OK;
    if (stale(b->ctx, b->gen)) {
        delete b;
        return CUZK_OK;
    }
    cudaSetDevice(b->ctx->dev);
    cudaError_t e = cudaFree(b->d);
    delete b;
    if (e != cudaSuccess) return fail(CUZK_ERR_CUDA, std::string("cudaFree: ") + cudaGetErrorString(e));
    return CUZK_OK;
}

extern "C" size_t cuzk_buf_size(const cuzk_buf* b) { return b ? b->bytes : 0; }

extern "C" int cuzk_buf_upload(cuzk_stream* s, cuzk_buf* b, size_t offset, const void* host, size_t bytes) {
    if (!s || !b || (!host && bytes)) return fail(CUZK_ERR_ARG, "NULL argument");
    if (offset > b->bytes || bytes > b->bytes - offset) return fail(CUZK_ERR_ARG, "upload out of range");
    RET(set_device(s->ctx));
    return stream_upload(s, (uint8_t*)b->d + offset, host, bytes);
}

extern "C" int cuzk_buf_upload_gather(cuzk_stream* s, int count, const cuzk_upload_seg* segs) {
    if (!s || count < 0 || (count > 0 && !segs)) return fail(CUZK_ERR_ARG, "NULL argument");
    for (int i = 0; i < count; i++) {
        const cuzk_upload_seg& g = segs[i];
        if (!g.buf || (!g.host && g.bytes)) return fail(CUZK_ERR_ARG, "upload piece " + std::to_string(i) + ": NULL pointer");
        if (g.buf->ctx != s->ctx) return fail(CUZK_ERR_ARG, "upload piece " + std::to_string(i) + ": buffer of another device");
        if (g.offset > g.buf->bytes || g.bytes > g.buf->bytes - g.offset)
            return fail(CUZK_ERR_ARG, "upload piece " + std::to_string(i) + " out of range");
    }
    RET(set_device(s->ctx));
    return stream_upload_gather(s, count, segs);
}

extern "C" int cuzk_buf_download(cuzk_stream* s, const cuzk_buf* b, size_t offset, void* host, size_t bytes) {
    if (!s || !b || (!host && bytes)) return fail(CUZK_ERR_ARG, "NULL argument");
    if (offset > b->bytes || bytes > b->bytes - offset) return fail(CUZK_ERR_ARG, "download out of range");
    RET(set_device(s->ctx));
    return stream_download(s, host, (const uint8_t*)b->d + offset, bytes);
}

extern "C" int cuzk_bases_create(cuzk_stream* s, int group, const void* host_points, size_t count,
                                 size_t reserve_bytes, int flags, cuzk_bases** out) {
    if (!s || !out || (!host_points && count)) return fail(CUZK_ERR_ARG, "NULL argument");
    if (group != 1 && group != 2) return fail(CUZK_ERR_ARG, "group must be 1 (G1) or 2 (G2)");
    RET(set_device(s->ctx));
    cuzk_bases* b = new cuzk_bases();
    b->ctx = s->ctx;
    b->gen = s->ctx->gen;
    b->group = group;
    b->count = count;
    b->elem = group == 1 ? 96 : 192;
    size_t bytes = count * b->elem;
    size_t fr = 0, tot = 0;
    CK(cudaMemGetInfo(&fr, &tot));
    bool resident = !(flags & CUZK_BASES_FORCE_STREAMED) && bytes + reserve_bytes <= fr;
    if (!resident && (flags & CUZK_BASES_RESIDENT_ONLY)) {
        delete b;
        return fail(CUZK_ERR_NOMEM, "bases of " + std::to_string(bytes) + " bytes do not fit in device memory (" +
                                        std::to_string(fr) + " free, " + std::to_string(reserve_bytes) + " kept free)");
    }
    if (resident && cudaMalloc(&b->d, bytes ? bytes : 1) != cudaSuccess) {
        cudaGetLastError();  // clear; fall back to streaming
        b->d = nullptr;
        resident = false;
    }
    if (resident) {
        int r = stream_upload(s, b->d, host_points, bytes);
        if (r != CUZK_OK) {
            cudaFree(b->d);
            delete b;
            return r;
        }
    } else {
        cudaError_t e = cudaHostAlloc(&b->host, bytes ? bytes : 1, cudaHostAllocDefault);
        if (e != cudaSuccess) {
            delete b;
            return fail(CUZK_ERR_NOMEM, std::string("pinned host copy of bases: ") + cudaGetErrorString(e));
        }
        memcpy(b->host, host_points, bytes);
    }
    *out = b;
    return CUZK_OK;
}

extern "C" int cuzk_bases_destroy(cuzk_bases* b) {
    if (!b) return CUZK_OK;
    if (stale(b->ctx, b->gen)) {
        delete b;
        return CUZK_OK;
    }
    cudaSetDevice(b->ctx->dev);
    if (b->d) cudaFree(b->d);
    if (b->host) cudaFreeHost(b->host);
    delete b;
    return CUZK_OK;
}

extern "C" int cuzk_bases_resident(const cuzk_bases* b) { return b && b->d ? 1 : 0; }
extern "C" size_t cuzk_bases_device_bytes(const cuzk_bases* b) {
    return b && b->d ? b->count * b->elem * (size_t)std::max(b->pc_f, 1) : 0;
}
