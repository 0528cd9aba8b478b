/* cuzk_gpu.h: C ABI of the cuzk CUDA library (BLS12-381 MSM, NTT, Groth16 H).
 *
 * All functions return CUZK_OK (0) or a negative error code; cuzk_last_error()
 * then describes the failure (per calling thread). Handles are opaque.
 *
 * Data layouts are gnark-crypto's, so Go slices are passed as raw bytes:
 *   Fr element: 4 little-endian uint64 limbs, Montgomery form (R = 2^256).
 *   G1 affine:  X, Y as 6-limb Fp elements, Montgomery form; (0,0) = infinity.
 *   G2 affine:  X, Y in Fp2 = (A0, A1), each 6-limb Fp.
 * MSM results are per-window sums in XYZZ coordinates (X, Y, ZZ, ZZZ, Montgomery
 * form; ZZ = 0 is infinity): the caller folds them as sum_w 2^(c*w) * W_w.
 */
#ifndef CUZK_GPU_H
#define CUZK_GPU_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUZK_ABI_VERSION 7

enum {
    CUZK_OK = 0,
    CUZK_ERR_CUDA = -1,      /* a CUDA runtime call failed */
    CUZK_ERR_ARG = -2,       /* bad argument */
    CUZK_ERR_NOMEM = -3,     /* device or pinned host allocation failed */
    CUZK_ERR_NODEVICE = -4,  /* no CUDA device / driver */
};

typedef struct cuzk_ctx cuzk_ctx;       /* one device */
typedef struct cuzk_stream cuzk_stream; /* a CUDA stream with its own scratch and pinned staging */
typedef struct cuzk_buf cuzk_buf;       /* device buffer */
typedef struct cuzk_bases cuzk_bases;   /* a base set (G1 or G2), resident or streamed */
typedef struct cuzk_domain cuzk_domain; /* NTT domain tables for one size */

typedef struct {
    char name[256];
    char uuid[40];
    size_t total_mem, free_mem;
    int sm_count, cc_major, cc_minor;
} cuzk_device_info_t;

/* Domain constants, each an Fr element in Montgomery form (gnark's fft.Domain). */
typedef struct {
    uint64_t omega[4], omega_inv[4];   /* Generator, GeneratorInv */
    uint64_t coset[4], coset_inv[4];   /* FrMultiplicativeGen, FrMultiplicativeGenInv */
    uint64_t n_inv[4];                 /* CardinalityInv */
} cuzk_domain_consts_t;

int cuzk_abi_version(void);
const char* cuzk_last_error(void);

int cuzk_device_count(int* n);
int cuzk_device_info(int dev, cuzk_device_info_t* out);

int cuzk_ctx_create(int dev, cuzk_ctx** out);
int cuzk_ctx_destroy(cuzk_ctx* ctx);
/* Waits for all the device's work; an error there means the device faulted (a sticky
 * error: every later call fails too) and needs cuzk_ctx_reset. */
int cuzk_ctx_check(cuzk_ctx* ctx);
/* Resets the device (cudaDeviceReset): all device and pinned memory of the process on
 * it is released, and every stream, buffer, base set and domain made before becomes
 * stale: their destroy functions then only free the handle. Make new ones. */
int cuzk_ctx_reset(cuzk_ctx* ctx);
/* Tests: CUZK_FAULT_INJECT=error:N (a CUDA error) or trap:N (a kernel trap, a sticky
 * fault) makes the N-th MSM call of the process fail. */

/* staging_bytes: size of the stream's reusable pinned host buffer (0 = default 64 MiB). */
int cuzk_stream_create(cuzk_ctx* ctx, size_t staging_bytes, cuzk_stream** out);
int cuzk_stream_destroy(cuzk_stream* s);
/* Waits for the stream's work; returns the first asynchronous error, if any. */
int cuzk_stream_sync(cuzk_stream* s);

int cuzk_buf_alloc(cuzk_ctx* ctx, size_t bytes, cuzk_buf** out);
int cuzk_buf_free(cuzk_buf* b);
size_t cuzk_buf_size(const cuzk_buf* b);
/* Host <-> device copies through the stream's pinned staging buffer; they return when done. */
int cuzk_buf_upload(cuzk_stream* s, cuzk_buf* b, size_t offset, const void* host, size_t bytes);
int cuzk_buf_download(cuzk_stream* s, const cuzk_buf* b, size_t offset, void* host, size_t bytes);
/* Several uploads in one call: piece i copies bytes from host to buf at offset. The
 * pieces are staged through the pinned buffer together, so many small ones cost one
 * synchronization instead of one each. Returns when all are done. */
typedef struct {
    cuzk_buf* buf;
    size_t offset;
    const void* host;
    size_t bytes;
} cuzk_upload_seg;
int cuzk_buf_upload_gather(cuzk_stream* s, int count, const cuzk_upload_seg* segs);

/* group: 1 = G1, 2 = G2. The points are copied; the host memory may be freed after.
 * The set is made resident in device memory when it fits (keeping reserve_bytes free);
 * otherwise (or with CUZK_BASES_FORCE_STREAMED) it is kept in pinned host memory and
 * streamed to the device in chunks by each MSM. */
#define CUZK_BASES_FORCE_STREAMED 1
#define CUZK_BASES_RESIDENT_ONLY 2 /* CUZK_ERR_NOMEM instead of streaming when it does not fit */
int cuzk_bases_create(cuzk_stream* s, int group, const void* host_points, size_t count,
                      size_t reserve_bytes, int flags, cuzk_bases** out);
int cuzk_bases_destroy(cuzk_bases* b);
/* Fixed-base precomputation of a resident set: keeps up to max_copies (2..16) copies
 * of the points on the device, copy k holding 2^(c*k) times each point, so every MSM
 * over the set runs its windows in ceil(windows/copies) bucket sets with the window
 * width c chosen here for the set's size. *c and *copies receive the shape (0 when
 * not precomputed). CUZK_ERR_NOMEM when the copies do not fit while keeping
 * reserve_bytes free; the set is then unchanged and still usable. Calling it again
 * does nothing. */
int cuzk_bases_precompute(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes, int* c,
                          int* copies);
int cuzk_bases_resident(const cuzk_bases* b);
size_t cuzk_bases_device_bytes(const cuzk_bases* b);

/* MSM over bases[base_offset : base_offset+n]. Scalar i is scalars[scalar_offset + i],
 * or scalars[scalar_offset + index[i]] when index (uint32 per point) is non-NULL.
 * Writes up to max_windows XYZZ window sums to out (192 B each for G1, 384 B for G2);
 * *nwin and *c receive the window count and width. */
#define CUZK_MAX_WINDOWS 64
int cuzk_msm(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
             const cuzk_buf* scalars, size_t scalar_offset, const cuzk_buf* index,
             void* out, int* nwin, int* c);
/* nbatch MSMs over the same bases in one pass: vector j's scalar i is
 * scalars[scalar_offset + j*scalar_stride + i] (or + index[i]). out receives nbatch*nwin
 * window sums, vector j's at out[j*nwin]; use it for a batch of small MSMs, which one at
 * a time leave most of the device idle. 1 <= nbatch <= CUZK_MAX_BATCH. */
#define CUZK_MAX_BATCH 1024
int cuzk_msm_batch(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
                   const cuzk_buf* scalars, size_t scalar_offset, size_t scalar_stride, int nbatch,
                   const cuzk_buf* index, void* out, int* nwin, int* c);
/* Same with scalars in host memory (uploaded through the staging buffer). */
int cuzk_msm_host(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
                  const void* host_scalars, void* out, int* nwin, int* c);
/* Largest number of points one MSM pass handles (0 restores the default). For tests. */
int cuzk_stream_set_msm_chunk(cuzk_stream* s, size_t points);

/* Tuning of a stream's work. Set version to CUZK_KNOBS_VERSION and size to
 * sizeof(cuzk_knobs) (a library of another version refuses the set with CUZK_ERR_ARG);
 * a field left 0 keeps the library's choice. The knobs apply to the stream's later
 * calls until set again. */
#define CUZK_KNOBS_VERSION 1
#define CUZK_MSM_C_MIN 4
#define CUZK_MSM_C_MAX 22
typedef struct {
    uint32_t version;
    uint32_t size;
    /* MSM window width (CUZK_MSM_C_MIN..CUZK_MSM_C_MAX bits) over G1 and G2 base sets;
     * 0: chosen per MSM size and batch. A precomputed set keeps the width its copies
     * were made for. */
    int msm_c_g1;
    int msm_c_g2;
} cuzk_knobs;
int cuzk_stream_set_knobs(cuzk_stream* s, const cuzk_knobs* k);

int cuzk_domain_create(cuzk_stream* s, int log_n, const cuzk_domain_consts_t* k, cuzk_domain** out);
int cuzk_domain_destroy(cuzk_domain* d);

/* In-place NTT of 2^log_n Fr elements at buf[offset]. flags: */
#define CUZK_NTT_INVERSE 1 /* use omega^-1 and scale by 1/n */
#define CUZK_NTT_DIT 2     /* bit-reversed input, natural output (else natural in, bit-reversed out) */
int cuzk_ntt(cuzk_stream* s, const cuzk_domain* d, cuzk_buf* buf, size_t offset, int flags);

/* Groth16 H exactly as gnark's computeH: a (at element a_offset) and b hold
 * n_constraints elements each, with room for 2^log_n; c is scratch of the same size,
 * its contents not read: c = a∘b on the constraints, as a satisfied R1CS has it, so
 * only a and b are uploaded. All three are overwritten. On return a[a_offset:] holds
 * h in bit-reversed order (2^log_n elements; the last is zero). den is
 * (coset^n - 1)^-1 in Montgomery form. */
int cuzk_compute_h(cuzk_stream* s, const cuzk_domain* d, cuzk_buf* a, size_t a_offset, cuzk_buf* b,
                   cuzk_buf* c, size_t n_constraints, const uint64_t den[4]);
/* cuzk_compute_h for count solutions at once, each kernel launched once for all of
 * them: solution j's a at a_offset + j*a_stride, its b and c at bc_offset +
 * j*bc_stride (elements). 1 <= count <= CUZK_MAX_BATCH. */
int cuzk_compute_h_batch(cuzk_stream* s, const cuzk_domain* d, cuzk_buf* a, size_t a_offset, size_t a_stride,
                         cuzk_buf* b, cuzk_buf* c, size_t bc_offset, size_t bc_stride, int count,
                         size_t n_constraints, const uint64_t den[4]);

/* Fixed-base multiplication (a key setup's points): scalars times one fixed point G.
 * table holds, for each of nwin windows of c bits (c*nwin >= 255), the points
 * d*2^(c*w)*G for 1 <= d < 2^c at table[w*(2^c-1) + d-1], affine in gnark's layout
 * (group 1: G1, 96 bytes; 2: G2, 192); it is copied to the device. */
typedef struct cuzk_fixed_base cuzk_fixed_base;
int cuzk_fixed_base_create(cuzk_stream* s, int group, const void* table, int c, int nwin, cuzk_fixed_base** out);
int cuzk_fixed_base_destroy(cuzk_fixed_base* fb);
/* host_out[i] = host_scalars[i]*G for i < n: scalars are gnark fr.Elements (Montgomery
 * form, 32 bytes), points affine in gnark's layout, (0, 0) for a zero scalar. */
int cuzk_fixed_base_mul(cuzk_stream* s, cuzk_fixed_base* fb, const void* host_scalars, size_t n, void* host_out);

#ifdef __cplusplus
}
#endif
#endif
