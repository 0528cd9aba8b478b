package gpu

// The CUDA library (gpu/cuda, built with nvcc into libcuzkgpu.so) is loaded at run
// time with dlopen, so this package builds and tests without CUDA installed; the
// only link dependency is libdl.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda/cuzk_gpu.h"

#define CUZK_ERRLEN 512

typedef struct {
	void* handle;
	int (*abi_version)(void);
	const char* (*last_error)(void);
	int (*device_count)(int*);
	int (*device_info)(int, cuzk_device_info_t*);
	int (*ctx_create)(int, cuzk_ctx**);
	int (*ctx_destroy)(cuzk_ctx*);
	int (*ctx_check)(cuzk_ctx*);
	int (*ctx_reset)(cuzk_ctx*);
	int (*stream_create)(cuzk_ctx*, size_t, cuzk_stream**);
	int (*stream_destroy)(cuzk_stream*);
	int (*stream_sync)(cuzk_stream*);
	int (*stream_set_msm_chunk)(cuzk_stream*, size_t);
	int (*stream_set_knobs)(cuzk_stream*, const cuzk_knobs*);
	int (*buf_alloc)(cuzk_ctx*, size_t, cuzk_buf**);
	int (*buf_free)(cuzk_buf*);
	int (*buf_upload)(cuzk_stream*, cuzk_buf*, size_t, const void*, size_t);
	int (*buf_download)(cuzk_stream*, const cuzk_buf*, size_t, void*, size_t);
	int (*bases_create)(cuzk_stream*, int, const void*, size_t, size_t, int, cuzk_bases**);
	int (*bases_destroy)(cuzk_bases*);
	int (*bases_resident)(const cuzk_bases*);
	size_t (*bases_device_bytes)(const cuzk_bases*);
	int (*bases_precompute)(cuzk_stream*, cuzk_bases*, int, size_t, int*, int*);
	int (*msm)(cuzk_stream*, const cuzk_bases*, size_t, size_t, const cuzk_buf*, size_t, const cuzk_buf*, void*, int*, int*);
	int (*msm_batch)(cuzk_stream*, const cuzk_bases*, size_t, size_t, const cuzk_buf*, size_t, size_t, int, const cuzk_buf*, void*, int*, int*);
	int (*msm_host)(cuzk_stream*, const cuzk_bases*, size_t, size_t, const void*, void*, int*, int*);
	int (*domain_create)(cuzk_stream*, int, const cuzk_domain_consts_t*, cuzk_domain**);
	int (*domain_destroy)(cuzk_domain*);
	int (*ntt)(cuzk_stream*, const cuzk_domain*, cuzk_buf*, size_t, int);
	int (*compute_h)(cuzk_stream*, const cuzk_domain*, cuzk_buf*, size_t, cuzk_buf*, cuzk_buf*, size_t, const uint64_t*);
	int (*compute_h_batch)(cuzk_stream*, const cuzk_domain*, cuzk_buf*, size_t, size_t, cuzk_buf*, cuzk_buf*, size_t, size_t, int, size_t, const uint64_t*);
	int (*buf_upload_gather)(cuzk_stream*, int, const cuzk_upload_seg*);
	int (*fixed_base_create)(cuzk_stream*, int, const void*, int, int, cuzk_fixed_base**);
	int (*fixed_base_destroy)(cuzk_fixed_base*);
	int (*fixed_base_mul)(cuzk_stream*, cuzk_fixed_base*, const void*, size_t, void*);
} cuzk_fns;

// cuzk_open fills f from the library at path; on failure it writes a reason to err.
static int cuzk_open(const char* path, cuzk_fns* f, char* err, size_t errlen) {
	memset(f, 0, sizeof(*f));
	f->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!f->handle) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
#define SYM(field, name) \
	if (!(*(void**)(&f->field) = dlsym(f->handle, name))) { snprintf(err, errlen, "%s: missing symbol %s", path, name); dlclose(f->handle); f->handle = NULL; return -1; }
	SYM(abi_version, "cuzk_abi_version")
	// The version first: an older library then says so rather than "missing symbol".
	if (f->abi_version() != CUZK_ABI_VERSION) {
		snprintf(err, errlen, "%s: ABI version %d, want %d", path, f->abi_version(), CUZK_ABI_VERSION);
		dlclose(f->handle); f->handle = NULL;
		return -1;
	}
	SYM(last_error, "cuzk_last_error")
	SYM(device_count, "cuzk_device_count")
	SYM(device_info, "cuzk_device_info")
	SYM(ctx_create, "cuzk_ctx_create")
	SYM(ctx_destroy, "cuzk_ctx_destroy")
	SYM(ctx_check, "cuzk_ctx_check")
	SYM(ctx_reset, "cuzk_ctx_reset")
	SYM(stream_create, "cuzk_stream_create")
	SYM(stream_destroy, "cuzk_stream_destroy")
	SYM(stream_sync, "cuzk_stream_sync")
	SYM(stream_set_msm_chunk, "cuzk_stream_set_msm_chunk")
	SYM(stream_set_knobs, "cuzk_stream_set_knobs")
	SYM(buf_alloc, "cuzk_buf_alloc")
	SYM(buf_free, "cuzk_buf_free")
	SYM(buf_upload, "cuzk_buf_upload")
	SYM(buf_download, "cuzk_buf_download")
	SYM(bases_create, "cuzk_bases_create")
	SYM(bases_destroy, "cuzk_bases_destroy")
	SYM(bases_resident, "cuzk_bases_resident")
	SYM(bases_device_bytes, "cuzk_bases_device_bytes")
	SYM(bases_precompute, "cuzk_bases_precompute")
	SYM(msm, "cuzk_msm")
	SYM(msm_batch, "cuzk_msm_batch")
	SYM(msm_host, "cuzk_msm_host")
	SYM(domain_create, "cuzk_domain_create")
	SYM(domain_destroy, "cuzk_domain_destroy")
	SYM(ntt, "cuzk_ntt")
	SYM(compute_h, "cuzk_compute_h")
	SYM(compute_h_batch, "cuzk_compute_h_batch")
	SYM(buf_upload_gather, "cuzk_buf_upload_gather")
	SYM(fixed_base_create, "cuzk_fixed_base_create")
	SYM(fixed_base_destroy, "cuzk_fixed_base_destroy")
	SYM(fixed_base_mul, "cuzk_fixed_base_mul")
#undef SYM
	return 0;
}

// keep copies the library's message for a failed call into e in the same C call: the
// message is thread-local, and the goroutine may run on another OS thread by the time
// Go could ask for it in a second call.
static int keep(cuzk_fns* f, int rc, char* e) {
	if (rc != 0) snprintf(e, CUZK_ERRLEN, "%s", f->last_error());
	return rc;
}
static int c_device_count(cuzk_fns* f, int* n, char* e) { return keep(f, f->device_count(n), e); }
static int c_device_info(cuzk_fns* f, int d, cuzk_device_info_t* o, char* e) { return keep(f, f->device_info(d, o), e); }
static int c_ctx_create(cuzk_fns* f, int d, cuzk_ctx** o, char* e) { return keep(f, f->ctx_create(d, o), e); }
static int c_ctx_destroy(cuzk_fns* f, cuzk_ctx* c, char* e) { return keep(f, f->ctx_destroy(c), e); }
static int c_ctx_check(cuzk_fns* f, cuzk_ctx* c, char* e) { return keep(f, f->ctx_check(c), e); }
static int c_ctx_reset(cuzk_fns* f, cuzk_ctx* c, char* e) { return keep(f, f->ctx_reset(c), e); }
static int c_stream_create(cuzk_fns* f, cuzk_ctx* c, size_t b, cuzk_stream** o, char* e) { return keep(f, f->stream_create(c, b, o), e); }
static int c_stream_destroy(cuzk_fns* f, cuzk_stream* s, char* e) { return keep(f, f->stream_destroy(s), e); }
static int c_stream_set_msm_chunk(cuzk_fns* f, cuzk_stream* s, size_t n, char* e) { return keep(f, f->stream_set_msm_chunk(s, n), e); }
static int c_stream_set_knobs(cuzk_fns* f, cuzk_stream* s, int g1, int g2, char* e) {
	cuzk_knobs k;
	memset(&k, 0, sizeof(k));
	k.version = CUZK_KNOBS_VERSION;
	k.size = sizeof(k);
	k.msm_c_g1 = g1;
	k.msm_c_g2 = g2;
	return keep(f, f->stream_set_knobs(s, &k), e);
}
static int c_buf_alloc(cuzk_fns* f, cuzk_ctx* c, size_t n, cuzk_buf** o, char* e) { return keep(f, f->buf_alloc(c, n, o), e); }
static int c_buf_free(cuzk_fns* f, cuzk_buf* b, char* e) { return keep(f, f->buf_free(b), e); }
static int c_buf_upload(cuzk_fns* f, cuzk_stream* s, cuzk_buf* b, size_t off, const void* h, size_t n, char* e) { return keep(f, f->buf_upload(s, b, off, h, n), e); }
static int c_buf_download(cuzk_fns* f, cuzk_stream* s, const cuzk_buf* b, size_t off, void* h, size_t n, char* e) { return keep(f, f->buf_download(s, b, off, h, n), e); }
static int c_bases_create(cuzk_fns* f, cuzk_stream* s, int g, const void* p, size_t n, size_t r, int fl, cuzk_bases** o, char* e) { return keep(f, f->bases_create(s, g, p, n, r, fl, o), e); }
static int c_bases_destroy(cuzk_fns* f, cuzk_bases* b, char* e) { return keep(f, f->bases_destroy(b), e); }
static int c_bases_resident(cuzk_fns* f, const cuzk_bases* b) { return f->bases_resident(b); }
static size_t c_bases_device_bytes(cuzk_fns* f, const cuzk_bases* b) { return f->bases_device_bytes(b); }
static int c_bases_precompute(cuzk_fns* f, cuzk_stream* s, cuzk_bases* b, int m, size_t r, int* c, int* k, char* e) { return keep(f, f->bases_precompute(s, b, m, r, c, k), e); }
static int c_msm(cuzk_fns* f, cuzk_stream* s, const cuzk_bases* b, size_t bo, size_t n, const cuzk_buf* sc, size_t so, const cuzk_buf* ix, void* out, int* nw, int* c, char* e) { return keep(f, f->msm(s, b, bo, n, sc, so, ix, out, nw, c), e); }
static int c_msm_batch(cuzk_fns* f, cuzk_stream* s, const cuzk_bases* b, size_t bo, size_t n, const cuzk_buf* sc, size_t so, size_t stride, int nb, const cuzk_buf* ix, void* out, int* nw, int* c, char* e) { return keep(f, f->msm_batch(s, b, bo, n, sc, so, stride, nb, ix, out, nw, c), e); }
static int c_msm_host(cuzk_fns* f, cuzk_stream* s, const cuzk_bases* b, size_t bo, size_t n, const void* sc, void* out, int* nw, int* c, char* e) { return keep(f, f->msm_host(s, b, bo, n, sc, out, nw, c), e); }
static int c_domain_create(cuzk_fns* f, cuzk_stream* s, int l, const cuzk_domain_consts_t* k, cuzk_domain** o, char* e) { return keep(f, f->domain_create(s, l, k, o), e); }
static int c_domain_destroy(cuzk_fns* f, cuzk_domain* d, char* e) { return keep(f, f->domain_destroy(d), e); }
static int c_ntt(cuzk_fns* f, cuzk_stream* s, const cuzk_domain* d, cuzk_buf* b, size_t off, int fl, char* e) { return keep(f, f->ntt(s, d, b, off, fl), e); }
static int c_compute_h_batch(cuzk_fns* f, cuzk_stream* s, const cuzk_domain* d, cuzk_buf* a, size_t ao, size_t as, cuzk_buf* b, cuzk_buf* c, size_t bo, size_t bs, int n, size_t nc, const uint64_t* den, char* e) { return keep(f, f->compute_h_batch(s, d, a, ao, as, b, c, bo, bs, n, nc, den), e); }
static int c_buf_upload_gather(cuzk_fns* f, cuzk_stream* s, int n, const cuzk_upload_seg* g, char* e) { return keep(f, f->buf_upload_gather(s, n, g), e); }
static int c_fixed_base_create(cuzk_fns* f, cuzk_stream* s, int g, const void* t, int c, int w, cuzk_fixed_base** o, char* e) { return keep(f, f->fixed_base_create(s, g, t, c, w, o), e); }
static int c_fixed_base_destroy(cuzk_fns* f, cuzk_fixed_base* b, char* e) { return keep(f, f->fixed_base_destroy(b), e); }
static int c_fixed_base_mul(cuzk_fns* f, cuzk_stream* s, cuzk_fixed_base* b, const void* sc, size_t n, void* out, char* e) { return keep(f, f->fixed_base_mul(s, b, sc, n, out), e); }
static int c_compute_h(cuzk_fns* f, cuzk_stream* s, const cuzk_domain* d, cuzk_buf* a, size_t ao, cuzk_buf* b, cuzk_buf* c, size_t n, const uint64_t* den, char* e) { return keep(f, f->compute_h(s, d, a, ao, b, c, n, den), e); }
*/
import "C"

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"

	bls12381 "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr/fft"

	"github.com/cuzk/cuzk/gpu/devinfo"
)

// LibraryName is the file name of the CUDA library built by `make -C gpu/cuda`.
const LibraryName = "libcuzkgpu.so"

// UnavailableError says why the CUDA backend cannot run here (no library, no device,
// driver failure). Callers may fall back to the CPU backend.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return "unavailable: " + e.Reason }

// IsUnavailable reports whether err means "no usable CUDA device or library".
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// FindLibrary returns the library path: $CUZK_GPU_LIB, else next to the executable,
// else gpu/cuda/build/ in the working directory or one of its parents.
func FindLibrary() (string, error) {
	if p := os.Getenv("CUZK_GPU_LIB"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", &UnavailableError{Reason: "CUZK_GPU_LIB: " + err.Error()}
		}
		return p, nil
	}
	var tried []string
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), LibraryName)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		tried = append(tried, p)
	}
	if wd, err := os.Getwd(); err == nil {
		// Where the build would put it: the first source tree (cuda/cuzk_gpu.h) met.
		expected := ""
		for dir := wd; ; dir = filepath.Dir(dir) {
			for _, rel := range []string{"gpu/cuda/build", "cuda/build"} {
				p := filepath.Join(dir, rel, LibraryName)
				if _, err := os.Stat(p); err == nil {
					return p, nil
				}
				if _, err := os.Stat(filepath.Join(dir, rel, "..", "cuzk_gpu.h")); err == nil && expected == "" {
					expected = p
				}
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
		if expected == "" {
			expected = "gpu/cuda/build/" + LibraryName + " in " + wd + " or a parent"
		}
		tried = append(tried, expected)
	}
	return "", &UnavailableError{Reason: fmt.Sprintf("%s not found (tried %s; build it with make gpu-lib on a host with nvcc, or set CUZK_GPU_LIB)",
		LibraryName, strings.Join(tried, ", "))}
}

// cudaLib is the loaded library's function table.
type cudaLib struct {
	fns *C.cuzk_fns
}

func openLib(path string) (*cudaLib, error) {
	if path == "" {
		p, err := FindLibrary()
		if err != nil {
			return nil, err
		}
		path = p
	}
	fns := (*C.cuzk_fns)(C.calloc(1, C.size_t(unsafe.Sizeof(C.cuzk_fns{}))))
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [512]C.char
	if C.cuzk_open(cpath, fns, &buf[0], C.size_t(len(buf))) != 0 {
		C.free(unsafe.Pointer(fns))
		return nil, &UnavailableError{Reason: C.GoString(&buf[0])}
	}
	return &cudaLib{fns: fns}, nil
}

// call runs one library function, passing it a buffer for its error message, and
// turns a failure into an error carrying that message.
func (l *cudaLib) call(what string, f func(e *C.char) C.int) error {
	var e [C.CUZK_ERRLEN]C.char
	rc := f(&e[0])
	if rc == 0 {
		return nil
	}
	msg := C.GoString(&e[0])
	if rc == C.CUZK_ERR_NODEVICE {
		return &UnavailableError{Reason: msg}
	}
	return &libError{what: what, msg: msg, code: int(rc)}
}

// libError is a failed library call: what was asked, the library's message and its
// return code (CUZK_ERR_*).
type libError struct {
	what, msg string
	code      int
}

func (e *libError) Error() string { return fmt.Sprintf("cuda %s: %s (code %d)", e.what, e.msg, e.code) }

// deviceError says whether err is a failed CUDA call (not a bad argument or memory).
func deviceError(err error) bool {
	var le *libError
	return errors.As(err, &le) && le.code == C.CUZK_ERR_CUDA
}

// outOfMemory says whether err is a device or pinned-memory allocation failure.
func outOfMemory(err error) bool {
	var le *libError
	return errors.As(err, &le) && le.code == C.CUZK_ERR_NOMEM
}

func (l *cudaLib) deviceCount() (int, error) {
	var n C.int
	if err := l.call("device count", func(e *C.char) C.int { return C.c_device_count(l.fns, &n, e) }); err != nil {
		return 0, err
	}
	return int(n), nil
}

// deviceInfo describes a CUDA device as the runtime sees it (Index is its ordinal).
func (l *cudaLib) deviceInfo(dev int) (devinfo.Device, error) {
	var d C.cuzk_device_info_t
	if err := l.call("device info", func(e *C.char) C.int { return C.c_device_info(l.fns, C.int(dev), &d, e) }); err != nil {
		return devinfo.Device{}, err
	}
	return devinfo.Device{
		Index: dev, Name: C.GoString(&d.name[0]), UUID: "GPU-" + C.GoString(&d.uuid[0]),
		MemoryTotal: uint64(d.total_mem), MemoryFree: uint64(d.free_mem),
		SMs: int(d.sm_count), ComputeMajor: int(d.cc_major), ComputeMinor: int(d.cc_minor),
	}, nil
}

// cudaCtx is one device.
type cudaCtx struct {
	lib *cudaLib
	c   *C.cuzk_ctx
	dev int
}

func (l *cudaLib) newCtx(dev int) (*cudaCtx, error) {
	n, err := l.deviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, &UnavailableError{Reason: "no CUDA device"}
	}
	var c *C.cuzk_ctx
	if err := l.call("context", func(e *C.char) C.int { return C.c_ctx_create(l.fns, C.int(dev), &c, e) }); err != nil {
		return nil, err
	}
	return &cudaCtx{lib: l, c: c, dev: dev}, nil
}

// check waits for all the device's work; an error means a sticky fault (reset needed).
func (c *cudaCtx) check() error {
	return c.lib.call("device check", func(e *C.char) C.int { return C.c_ctx_check(c.lib.fns, c.c, e) })
}

// reset resets the device: everything made on it before is released (and stale).
func (c *cudaCtx) reset() error {
	return c.lib.call("device reset", func(e *C.char) C.int { return C.c_ctx_reset(c.lib.fns, c.c, e) })
}

func (c *cudaCtx) close() error {
	if c.c == nil {
		return nil
	}
	err := c.lib.call("context destroy", func(e *C.char) C.int { return C.c_ctx_destroy(c.lib.fns, c.c, e) })
	c.c = nil
	return err
}

// cudaStream is a CUDA stream with its own MSM scratch and pinned staging buffer.
// Calls on one stream must not run concurrently; different streams may.
type cudaStream struct {
	lib *cudaLib
	s   *C.cuzk_stream
}

func (c *cudaCtx) newStream(stagingBytes int) (*cudaStream, error) {
	var s *C.cuzk_stream
	if err := c.lib.call("stream", func(e *C.char) C.int { return C.c_stream_create(c.lib.fns, c.c, C.size_t(stagingBytes), &s, e) }); err != nil {
		return nil, err
	}
	return &cudaStream{lib: c.lib, s: s}, nil
}

func (s *cudaStream) close() error {
	if s == nil || s.s == nil {
		return nil
	}
	err := s.lib.call("stream destroy", func(e *C.char) C.int { return C.c_stream_destroy(s.lib.fns, s.s, e) })
	s.s = nil
	return err
}

// Knobs are the library's tuning overrides for a stream's work (cuzk_knobs); the zero
// value keeps the library's choices.
type Knobs struct {
	// MSMWindowG1 and MSMWindowG2 force the MSM window width in bits
	// (MinMSMWindow..MaxMSMWindow) over G1 and G2 base sets; 0 chooses it per MSM size
	// and batch. A precomputed base set keeps the width its copies were made for.
	MSMWindowG1, MSMWindowG2 int
}

// The window widths a Knobs field may force.
const (
	MinMSMWindow = C.CUZK_MSM_C_MIN
	MaxMSMWindow = C.CUZK_MSM_C_MAX
)

// check says what is wrong with k, before any stream is touched.
func (k Knobs) check() error {
	for _, w := range []struct {
		name string
		c    int
	}{{"G1", k.MSMWindowG1}, {"G2", k.MSMWindowG2}} {
		if w.c != 0 && (w.c < MinMSMWindow || w.c > MaxMSMWindow) {
			return fmt.Errorf("%s MSM window %d: want 0 (automatic) or %d..%d", w.name, w.c, MinMSMWindow, MaxMSMWindow)
		}
	}
	return nil
}

// setKnobs applies k to the stream's later calls.
func (s *cudaStream) setKnobs(k Knobs) error {
	return s.lib.call("set knobs", func(e *C.char) C.int {
		return C.c_stream_set_knobs(s.lib.fns, s.s, C.int(k.MSMWindowG1), C.int(k.MSMWindowG2), e)
	})
}

func (s *cudaStream) setMSMChunk(points int) error {
	return s.lib.call("set msm chunk", func(e *C.char) C.int { return C.c_stream_set_msm_chunk(s.lib.fns, s.s, C.size_t(points), e) })
}

// devBuf is device memory.
type devBuf struct {
	lib   *cudaLib
	b     *C.cuzk_buf
	bytes int
}

func (c *cudaCtx) alloc(bytes int) (*devBuf, error) {
	var b *C.cuzk_buf
	if err := c.lib.call("alloc", func(e *C.char) C.int { return C.c_buf_alloc(c.lib.fns, c.c, C.size_t(bytes), &b, e) }); err != nil {
		return nil, err
	}
	return &devBuf{lib: c.lib, b: b, bytes: bytes}, nil
}

func (b *devBuf) free() error {
	if b == nil || b.b == nil {
		return nil
	}
	err := b.lib.call("free", func(e *C.char) C.int { return C.c_buf_free(b.lib.fns, b.b, e) })
	b.b = nil
	return err
}

func (s *cudaStream) uploadFr(b *devBuf, offElems int, v []fr.Element) error {
	if len(v) == 0 {
		return nil
	}
	return s.lib.call("upload", func(e *C.char) C.int {
		return C.c_buf_upload(s.lib.fns, s.s, b.b, C.size_t(offElems*fr.Bytes),
			unsafe.Pointer(&v[0]), C.size_t(len(v)*fr.Bytes), e)
	})
}

// upload is one piece of an uploadGather: v into b at element off.
type upload struct {
	b   *devBuf
	off int
	v   []fr.Element
}

// uploadGather uploads every piece in one library call, staged together through the
// stream's pinned buffer (one synchronization for all of them).
func (s *cudaStream) uploadGather(pieces []upload) error {
	segs := make([]C.cuzk_upload_seg, 0, len(pieces))
	// The segments live in Go memory and hold pointers to the vectors: cgo passes them
	// only when those are pinned.
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, p := range pieces {
		if len(p.v) == 0 {
			continue
		}
		pin.Pin(&p.v[0])
		segs = append(segs, C.cuzk_upload_seg{buf: p.b.b, offset: C.size_t(p.off * fr.Bytes),
			host: unsafe.Pointer(&p.v[0]), bytes: C.size_t(len(p.v) * fr.Bytes)})
	}
	if len(segs) == 0 {
		return nil
	}
	return s.lib.call("upload", func(e *C.char) C.int {
		return C.c_buf_upload_gather(s.lib.fns, s.s, C.int(len(segs)), &segs[0], e)
	})
}

func (s *cudaStream) uploadU32(b *devBuf, v []uint32) error {
	if len(v) == 0 {
		return nil
	}
	return s.lib.call("upload", func(e *C.char) C.int {
		return C.c_buf_upload(s.lib.fns, s.s, b.b, 0, unsafe.Pointer(&v[0]), C.size_t(len(v)*4), e)
	})
}

func (s *cudaStream) downloadFr(b *devBuf, offElems int, v []fr.Element) error {
	if len(v) == 0 {
		return nil
	}
	return s.lib.call("download", func(e *C.char) C.int {
		return C.c_buf_download(s.lib.fns, s.s, b.b, C.size_t(offElems*fr.Bytes),
			unsafe.Pointer(&v[0]), C.size_t(len(v)*fr.Bytes), e)
	})
}

// baseSet is a resident (or streamed) set of G1 or G2 affine bases.
type baseSet struct {
	lib   *cudaLib
	b     *C.cuzk_bases
	group int
	count int
}

// Flags for newBases.
const (
	basesForceStreamed = C.CUZK_BASES_FORCE_STREAMED
	basesResidentOnly  = C.CUZK_BASES_RESIDENT_ONLY
)

func (s *cudaStream) newBasesG1(pts []bls12381.G1Affine, reserve int, flags int) (*baseSet, error) {
	var p unsafe.Pointer
	if len(pts) > 0 {
		p = unsafe.Pointer(&pts[0])
	}
	return s.newBases(1, p, len(pts), reserve, flags)
}

func (s *cudaStream) newBasesG2(pts []bls12381.G2Affine, reserve int, flags int) (*baseSet, error) {
	var p unsafe.Pointer
	if len(pts) > 0 {
		p = unsafe.Pointer(&pts[0])
	}
	return s.newBases(2, p, len(pts), reserve, flags)
}

func (s *cudaStream) newBases(group int, p unsafe.Pointer, n, reserve, flags int) (*baseSet, error) {
	var b *C.cuzk_bases
	if err := s.lib.call("bases", func(e *C.char) C.int {
		return C.c_bases_create(s.lib.fns, s.s, C.int(group), p, C.size_t(n), C.size_t(reserve), C.int(flags), &b, e)
	}); err != nil {
		return nil, err
	}
	return &baseSet{lib: s.lib, b: b, group: group, count: n}, nil
}

func (b *baseSet) resident() bool { return C.c_bases_resident(b.lib.fns, b.b) != 0 }

// precompute keeps up to maxCopies shifted copies of a resident set on the device
// (cuzk_bases_precompute) and returns the window width and copy count it chose. It
// returns ok = false, and leaves the set as it was, when the copies do not fit while
// keeping reserve bytes free.
func (b *baseSet) precompute(s *cudaStream, maxCopies, reserve int) (c, copies int, ok bool, err error) {
	var cc, kk C.int
	err = s.lib.call("precompute bases", func(e *C.char) C.int {
		return C.c_bases_precompute(s.lib.fns, s.s, b.b, C.int(maxCopies), C.size_t(reserve), &cc, &kk, e)
	})
	if outOfMemory(err) {
		return 0, 0, false, nil
	}
	return int(cc), int(kk), err == nil && kk > 0, err
}
func (b *baseSet) deviceBytes() int64 {
	return int64(C.c_bases_device_bytes(b.lib.fns, b.b))
}

func (b *baseSet) close() error {
	if b == nil || b.b == nil {
		return nil
	}
	err := b.lib.call("bases destroy", func(e *C.char) C.int { return C.c_bases_destroy(b.lib.fns, b.b, e) })
	b.b = nil
	return err
}

// Window sums as the library writes them: XYZZ coordinates in Montgomery form.
type xyzzG1 struct{ X, Y, ZZ, ZZZ [6]uint64 }
type xyzzG2 struct{ X, Y, ZZ, ZZZ [12]uint64 }

const maxWindows = C.CUZK_MAX_WINDOWS

// msmBatch runs nb MSMs over bases[off : off+n] in one pass: vector j's scalar i is
// sc[sOff + j*stride + i], or sc[sOff + j*stride + index[i]]. win receives nb*nwin
// window sums of b's group.
func (s *cudaStream) msmBatch(what string, b *baseSet, off, n int, sc *devBuf, sOff, stride, nb int, index *devBuf,
	win unsafe.Pointer) (nwin, c int, err error) {
	var nw, cc C.int
	var ix *C.cuzk_buf
	if index != nil {
		ix = index.b
	}
	err = s.lib.call(what, func(e *C.char) C.int {
		return C.c_msm_batch(s.lib.fns, s.s, b.b, C.size_t(off), C.size_t(n), sc.b, C.size_t(sOff), C.size_t(stride),
			C.int(nb), ix, win, &nw, &cc, e)
	})
	return int(nw), int(cc), err
}

// msmG1Batch is msmBatch over G1 bases, folded to one point per vector.
func (s *cudaStream) msmG1Batch(b *baseSet, off, n int, sc *devBuf, sOff, stride, nb int, index *devBuf) ([]bls12381.G1Jac, error) {
	folded, err := s.msmG1BatchAsync(b, off, n, sc, sOff, stride, nb, index)
	if err != nil {
		return nil, err
	}
	return folded(), nil
}

// msmG1BatchAsync is msmG1Batch with the fold on the host left running in the
// background: the returned function waits for it. The stream is free again as soon
// as this returns, so the next MSM's device work overlaps the fold (about 0.5 ms for
// a batch of 16 on a busy host, seen in a worker's execution trace).
func (s *cudaStream) msmG1BatchAsync(b *baseSet, off, n int, sc *devBuf, sOff, stride, nb int, index *devBuf) (func() []bls12381.G1Jac, error) {
	win := make([]xyzzG1, nb*maxWindows)
	nw, c, err := s.msmBatch("msm g1", b, off, n, sc, sOff, stride, nb, index, unsafe.Pointer(&win[0]))
	if err != nil {
		return nil, err
	}
	out := make([]bls12381.G1Jac, nb)
	done := make(chan struct{})
	go func() {
		defer close(done)
		eachParallel(nb, func(j int) { out[j] = foldG1(win[j*nw:(j+1)*nw], c) })
	}()
	return func() []bls12381.G1Jac { <-done; return out }, nil
}

// msmG2Batch is msmBatch over G2 bases, folded to one point per vector.
func (s *cudaStream) msmG2Batch(b *baseSet, off, n int, sc *devBuf, sOff, stride, nb int, index *devBuf) ([]bls12381.G2Jac, error) {
	win := make([]xyzzG2, nb*maxWindows)
	nw, c, err := s.msmBatch("msm g2", b, off, n, sc, sOff, stride, nb, index, unsafe.Pointer(&win[0]))
	if err != nil {
		return nil, err
	}
	out := make([]bls12381.G2Jac, nb)
	eachParallel(nb, func(j int) { out[j] = foldG2(win[j*nw:(j+1)*nw], c) })
	return out, nil
}

// msmG1 runs Σ bases[off+i]·scalars[sOff+i] (or scalars[sOff+index[i]]) over n points.
func (s *cudaStream) msmG1(b *baseSet, off, n int, sc *devBuf, sOff int, index *devBuf) (bls12381.G1Jac, error) {
	r, err := s.msmG1Batch(b, off, n, sc, sOff, 0, 1, index)
	if err != nil {
		return bls12381.G1Jac{}, err
	}
	return r[0], nil
}

// msmHost runs the MSM of b's group over host scalars into win (room for maxWindows
// sums of the group).
func (s *cudaStream) msmHost(what string, b *baseSet, off int, scalars []fr.Element, win unsafe.Pointer) (nwin, c int, err error) {
	var nw, cc C.int
	var p unsafe.Pointer
	if len(scalars) > 0 {
		p = unsafe.Pointer(&scalars[0])
	}
	err = s.lib.call(what, func(e *C.char) C.int {
		return C.c_msm_host(s.lib.fns, s.s, b.b, C.size_t(off), C.size_t(len(scalars)), p, win, &nw, &cc, e)
	})
	return int(nw), int(cc), err
}

func (s *cudaStream) msmG1Host(b *baseSet, off int, scalars []fr.Element) (bls12381.G1Jac, error) {
	var win [maxWindows]xyzzG1
	nw, c, err := s.msmHost("msm g1", b, off, scalars, unsafe.Pointer(&win[0]))
	if err != nil {
		return bls12381.G1Jac{}, err
	}
	return foldG1(win[:nw], c), nil
}

// msmHostWidth runs the MSM of msmG1Host or msmG2Host (by b's group) and returns the
// window width it took, for checking the knobs.
func (s *cudaStream) msmHostWidth(b *baseSet, off int, scalars []fr.Element) (int, error) {
	var win [maxWindows]xyzzG2 // room for either group's sums
	_, c, err := s.msmHost("msm", b, off, scalars, unsafe.Pointer(&win[0]))
	return c, err
}

func (s *cudaStream) msmG2(b *baseSet, off, n int, sc *devBuf, sOff int, index *devBuf) (bls12381.G2Jac, error) {
	r, err := s.msmG2Batch(b, off, n, sc, sOff, 0, 1, index)
	if err != nil {
		return bls12381.G2Jac{}, err
	}
	return r[0], nil
}

func (s *cudaStream) msmG2Host(b *baseSet, off int, scalars []fr.Element) (bls12381.G2Jac, error) {
	var win [maxWindows]xyzzG2
	nw, c, err := s.msmHost("msm g2", b, off, scalars, unsafe.Pointer(&win[0]))
	if err != nil {
		return bls12381.G2Jac{}, err
	}
	return foldG2(win[:nw], c), nil
}

// nttDomain holds the device tables (twiddles, coset powers) of one fft.Domain.
type nttDomain struct {
	lib   *cudaLib
	d     *C.cuzk_domain
	logN  int
	den   fr.Element // (g^n − 1)^-1, gnark's computeH denominator
	bytes int64
}

func frLimbs(dst *[4]C.uint64_t, e *fr.Element) {
	for i := range 4 {
		dst[i] = C.uint64_t(e[i])
	}
}

func (s *cudaStream) newDomain(d *fft.Domain) (*nttDomain, error) {
	n := d.Cardinality
	if n == 0 || n&(n-1) != 0 {
		return nil, fmt.Errorf("cuda domain: cardinality %d is not a power of two", n)
	}
	var k C.cuzk_domain_consts_t
	frLimbs(&k.omega, &d.Generator)
	frLimbs(&k.omega_inv, &d.GeneratorInv)
	frLimbs(&k.coset, &d.FrMultiplicativeGen)
	frLimbs(&k.coset_inv, &d.FrMultiplicativeGenInv)
	frLimbs(&k.n_inv, &d.CardinalityInv)
	logN := bits.TrailingZeros64(n)
	var out *C.cuzk_domain
	if err := s.lib.call("domain", func(e *C.char) C.int { return C.c_domain_create(s.lib.fns, s.s, C.int(logN), &k, &out, e) }); err != nil {
		return nil, err
	}
	var den, one fr.Element
	one.SetOne()
	den.Exp(d.FrMultiplicativeGen, new(bigInt).SetUint64(n))
	den.Sub(&den, &one).Inverse(&den)
	return &nttDomain{lib: s.lib, d: out, logN: logN, den: den, bytes: domainBytes(int64(n))}, nil
}

// domainBytes is the device memory of an n-element domain's tables: the twiddles
// omega^i and omega^-i, i < n/2, the two coset power tables of n elements, and Shoup's
// pairs of every 2^s-th twiddle, both directions, for the passes that take them
// (ntt/ntt.cu's ntt_shoup_shift: n/2^(s-1) elements). Below 2^24 s >= 6 (2^22), at most
// n/32, counted as n/8; from 2^24 the mixed pass of the largest half-sizes takes s = 2,
// n/2.
func domainBytes(n int64) int64 {
	if n >= 1<<24 {
		return (3*n + n/2) * fr.Bytes
	}
	return (3*n + n/8) * fr.Bytes
}

func (d *nttDomain) close() error {
	if d == nil || d.d == nil {
		return nil
	}
	err := d.lib.call("domain destroy", func(e *C.char) C.int { return C.c_domain_destroy(d.lib.fns, d.d, e) })
	d.d = nil
	return err
}

// NTT flags.
const (
	nttInverse = C.CUZK_NTT_INVERSE
	nttDIT     = C.CUZK_NTT_DIT
)

func (s *cudaStream) ntt(d *nttDomain, b *devBuf, offElems int, flags int) error {
	return s.lib.call("ntt", func(e *C.char) C.int { return C.c_ntt(s.lib.fns, s.s, d.d, b.b, C.size_t(offElems), C.int(flags), e) })
}

// computeHBatch runs computeH for count solutions in one set of launches: solution
// j's a at aOff + j*aStride, its b and c at bcOff + j*bcStride (elements).
func (s *cudaStream) computeHBatch(d *nttDomain, a *devBuf, aOff, aStride int, b, c *devBuf, bcOff, bcStride, count,
	nConstraints int) error {
	var den [4]C.uint64_t
	frLimbs(&den, &d.den)
	return s.lib.call("compute h", func(e *C.char) C.int {
		return C.c_compute_h_batch(s.lib.fns, s.s, d.d, a.b, C.size_t(aOff), C.size_t(aStride), b.b, c.b,
			C.size_t(bcOff), C.size_t(bcStride), C.int(count), C.size_t(nConstraints), &den[0], e)
	})
}

// computeH overwrites a[aOff:], b, c (c's contents are not read: the library makes it
// a∘b); afterwards a[aOff:] holds h in bit-reversed order.
func (s *cudaStream) computeH(d *nttDomain, a *devBuf, aOff int, b, c *devBuf, nConstraints int) error {
	var den [4]C.uint64_t
	frLimbs(&den, &d.den)
	return s.lib.call("compute h", func(e *C.char) C.int {
		return C.c_compute_h(s.lib.fns, s.s, d.d, a.b, C.size_t(aOff), b.b, c.b, C.size_t(nConstraints), &den[0], e)
	})
}

// fixedBaseTable is a fixed point's window table on the device (cuzk_fixed_base).
type fixedBaseTable struct {
	lib *cudaLib
	t   *C.cuzk_fixed_base
}

// newFixedBase uploads a window table of nwin windows of c bits (group 1: G1, 2: G2).
func (s *cudaStream) newFixedBase(group int, table unsafe.Pointer, c, nwin int) (*fixedBaseTable, error) {
	var t *C.cuzk_fixed_base
	if err := s.lib.call("fixed-base table", func(e *C.char) C.int {
		return C.c_fixed_base_create(s.lib.fns, s.s, C.int(group), table, C.int(c), C.int(nwin), &t, e)
	}); err != nil {
		return nil, err
	}
	return &fixedBaseTable{lib: s.lib, t: t}, nil
}

// fixedBaseMul writes n affine points scalars[i]·G to out (host memory both).
func (s *cudaStream) fixedBaseMul(what string, t *fixedBaseTable, scalars unsafe.Pointer, n int, out unsafe.Pointer) error {
	return s.lib.call(what, func(e *C.char) C.int {
		return C.c_fixed_base_mul(s.lib.fns, s.s, t.t, scalars, C.size_t(n), out, e)
	})
}

func (t *fixedBaseTable) close() error {
	if t == nil || t.t == nil {
		return nil
	}
	err := t.lib.call("fixed-base table destroy", func(e *C.char) C.int { return C.c_fixed_base_destroy(t.lib.fns, t.t, e) })
	t.t = nil
	return err
}
