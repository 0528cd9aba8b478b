// msm.cu: the MSM entry points of the C ABI (kernels in msm.cuh).
#include <algorithm>
#include "bls12_381.cuh"
#include "runtime.cuh"

// Instantiated in msm_g1.cu and msm_g2.cu.
int msm_g1(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c);
int msm_g2(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
           size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c);

int precompute_g1(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes);
int precompute_g2(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes);

// The cost of one bucket's reduction over one mixed addition (G1 about 12.5, G2 about
// 5.6 when fitted on the H200; G2's additions cost more). Used for precomputed sets and
// for MSMs below the measured table.
static double reduce_ratio(bool g2) { return g2 ? 5.6 : 12.5; }

// Window size by measurement: the fastest c at 2^k points (H200, 2026-12-03, c swept
// with CUZK_MSM_C, windows of ceil(255/c); docs/BENCHMARKS.md) for k = 12, 14, ..., 24;
// the odd k between, not measured, take a c between their neighbours'. n picks the
// entry of log2(n) rounded. The times are flat near the optimum (G1 2^20: 12.73 ms at
// c = 17, 12.86 at 16, 13.01 at 15), and the fitted cost model below picked windows
// measured up to 8% slower (G2 2^20: c = 15, 36.9 ms, against 34.3 at c = 16). G2 2^16
// takes c = 12: the sweep (stage profile on) had 13 ahead by 4%, an A/B without the
// profile had 12 ahead by 5% (6.17 vs 6.48 ms).
static const int kWindowG1[13] = {8, 9, 10, 10, 10, 12, 13, 15, 17, 17, 17, 17, 17};
static const int kWindowG2[13] = {8, 9, 10, 12, 12, 13, 13, 15, 16, 16, 17, 19, 20};

// Cost model for fewer than 2^12 points: minimise n*w mixed additions plus
// R*w*2^(c-1) bucket-reduction work, w = msm_windows(c), R = reduce_ratio.
static int msm_model_c(size_t n, bool g2) {
    const double R = reduce_ratio(g2);
    double best_cost = 1e300;
    int best = 4;
    for (int c = 4; c <= 20; c++) {
        int w = msm_windows(c);
        double cost = (double)n * w + R * w * (double)(1u << (c - 1));
        if (cost < best_cost) {
            best_cost = cost;
            best = c;
        }
    }
    return best;
}

// A batch of nbatch > 1 vectors fills the device with their accumulations together,
// so a vector of n points takes narrower windows than a lone MSM of n points, which
// leaves most SMs idle and trades them for fewer windows. Measured on the H200 for
// batches of 16 (G1:G2 window sizes forced, ms per proof; docs/BENCHMARKS.md): 2^12
// 9:9 0.91 against the single table's 10:12 1.15; 2^14 10:10 2.14 against 2.26; 2^16
// 10:11 6.72 against 6.77. Batches are of at most 2^20 points, so n < 2^17 here.
static const int kBatchWindowG1[5] = {9, 9, 10, 10, 10};
static const int kBatchWindowG2[5] = {9, 10, 10, 10, 11};

// log2(n) rounded: n >= 2^k * sqrt(2) rounds up (3/2 as the cut, close enough).
static int round_log2(size_t n) {
    int k = 0;
    while (k < 40 && ((size_t)3 << k) <= 2 * n) k++;  // smallest k with 3*2^k > 2n
    return k;
}

int msm_choose_c(size_t n, bool g2, uint32_t nbatch, int* nwin) {
    int c;
    const int k = round_log2(n);
    if (nbatch > 1 && k >= 12 && k <= 16) {
        c = g2 ? kBatchWindowG2[k - 12] : kBatchWindowG1[k - 12];
    } else if (n < ((size_t)3 << 10)) {  // nearer 2^11 than 2^12
        c = msm_model_c(n, g2);
    } else {
        // One index, clamped first: the same lookup written as
        // (g2 ? kWindowG2 : kWindowG1)[std::min(std::max(k, 12), 24) - 12] chose c = 12
        // for every lone G1 MSM in a gcc 12 host build (G1 2^24 took 180 ms, not 127).
        const int i = k < 12 ? 0 : (k > 24 ? 12 : k - 12);
        c = g2 ? kWindowG2[i] : kWindowG1[i];
    }
    *nwin = msm_windows(c);
    return c;
}

// Precomputed sets: minimise n*nwin additions plus R*groups*2^(c-1) bucket reduction,
// where groups of windows share a bucket set, so with all windows in one group c grows
// until the buckets cost more than the windows they save.
void msm_precompute_shape(size_t n, bool g2, int maxf, int* c_out, int* f_out) {
    const double R = reduce_ratio(g2);
    double best = 1e300;
    for (int c = 8; c <= 21; c++) {
        int nwin = msm_windows(c);
        int f = std::min(maxf, nwin);
        int groups = (nwin + f - 1) / f;
        f = (nwin + groups - 1) / groups;  // fewest copies for that many groups
        double cost = (double)n * nwin + R * groups * (double)(1u << (c - 1));
        if (cost < best) {
            best = cost;
            *c_out = c;
            *f_out = f;
        }
    }
}

namespace {

int msm_dispatch(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n, const fr_t* scalars,
                 size_t stride, uint32_t nbatch, const uint32_t* index, void* out, int* nwin, int* c) {
    if (base_offset > bases->count || n > bases->count - base_offset) return fail(CUZK_ERR_ARG, "MSM range exceeds base set");
    RET(fault_point(s->s));
    if (bases->group == 1) return msm_g1(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
    return msm_g2(s, bases, base_offset, n, scalars, stride, nbatch, index, out, nwin, c);
}

}  // namespace

extern "C" int cuzk_msm_batch(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
                              const cuzk_buf* scalars, size_t scalar_offset, size_t scalar_stride, int nbatch,
                              const cuzk_buf* index, void* out, int* nwin, int* c) {
    if (!s || !bases || !scalars || !out || !nwin || !c) return fail(CUZK_ERR_ARG, "NULL argument");
    if (nbatch < 1 || nbatch > CUZK_MAX_BATCH) return fail(CUZK_ERR_ARG, "nbatch out of range");
    if (nbatch > 1 && scalar_stride == 0) return fail(CUZK_ERR_ARG, "zero scalar_stride for a batch");
    if (index && n * 4 > index->bytes) return fail(CUZK_ERR_ARG, "index out of range");
    // Without an index the last vector's n scalars must lie inside the buffer (index
    // values are the caller's to keep in range, as for a single MSM).
    size_t last = scalar_offset + (size_t)(nbatch - 1) * scalar_stride;
    if (!index && (last + n) * 32 > scalars->bytes) return fail(CUZK_ERR_ARG, "scalars out of range");
    RET(set_device(s->ctx));
    return msm_dispatch(s, bases, base_offset, n, (const fr_t*)scalars->d + scalar_offset, scalar_stride,
                        (uint32_t)nbatch, index ? (const uint32_t*)index->d : nullptr, out, nwin, c);
}

extern "C" int cuzk_msm(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
                        const cuzk_buf* scalars, size_t scalar_offset, const cuzk_buf* index, void* out,
                        int* nwin, int* c) {
    return cuzk_msm_batch(s, bases, base_offset, n, scalars, scalar_offset, 0, 1, index, out, nwin, c);
}

extern "C" int cuzk_msm_host(cuzk_stream* s, const cuzk_bases* bases, size_t base_offset, size_t n,
                             const void* host_scalars, void* out, int* nwin, int* c) {
    if (!s || !bases || (!host_scalars && n) || !out || !nwin || !c) return fail(CUZK_ERR_ARG, "NULL argument");
    RET(set_device(s->ctx));
    RET(s->scalars.ensure(n * 32 + 32));
    RET(stream_upload(s, s->scalars.p, host_scalars, n * 32));
    return msm_dispatch(s, bases, base_offset, n, s->scalars.as<fr_t>(), 0, 1, nullptr, out, nwin, c);
}

extern "C" int cuzk_bases_precompute(cuzk_stream* s, cuzk_bases* b, int max_copies, size_t reserve_bytes, int* c,
                                     int* copies) {
    if (!s || !b || !c || !copies) return fail(CUZK_ERR_ARG, "NULL argument");
    if (b->ctx != s->ctx) return fail(CUZK_ERR_ARG, "base set and stream on different devices");
    RET(set_device(s->ctx));
    int r = b->group == 1 ? precompute_g1(s, b, max_copies, reserve_bytes) : precompute_g2(s, b, max_copies, reserve_bytes);
    *c = b->pc_c;
    *copies = b->pc_f;
    return r;
}
