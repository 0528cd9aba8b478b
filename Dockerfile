# syntax=docker/dockerfile:1
#
# cuzk image: the Go binary plus the CUDA prover library it dlopens.
#
#   docker build -t cuzk .
#   docker build --build-arg NVCC_ARCH="-gencode=arch=compute_89,code=sm_89" -t cuzk .
#
# The Go build needs no CUDA (the library is loaded at run time); the CUDA stage
# builds gpu/cuda/build/libcuzkgpu.so with cudart linked statically, so the runtime
# stage only needs the driver, which the NVIDIA Container Toolkit mounts in.

ARG GO_VERSION=1.26
ARG CUDA_VERSION=13.0.1
ARG UBUNTU=ubuntu24.04

# --- Go binary. bookworm's glibc (2.36) is older than the runtime's (Ubuntu 24.04:
# 2.39), so the cgo binary runs there. The context's .git lets go build record the
# revision (vcs.revision), which every attempt row reports as the worker's build.
FROM golang:${GO_VERSION}-bookworm AS go-build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -trimpath -ldflags="-s -w" -o /out/cuzk ./cmd/cuzk \
 && /out/cuzk --help >/dev/null \
 && { go version -m /out/cuzk | grep -q 'vcs.revision=' \
      || echo "warning: no git repository in the build context: attempts will report this build as (devel)"; }

# --- CUDA library (gpu/cuda/Makefile). NVCC_ARCH overrides the Makefile's device code
# (default: Hopper sm_90a plus compute_80 PTX that newer GPUs JIT).
FROM nvidia/cuda:${CUDA_VERSION}-devel-${UBUNTU} AS cuda-build
ARG NVCC_ARCH=""
WORKDIR /src
COPY gpu/cuda/ gpu/cuda/
RUN rm -rf gpu/cuda/build \
 && if [ -n "$NVCC_ARCH" ]; then make -C gpu/cuda -j"$(nproc)" NVCC_ARCH="$NVCC_ARCH"; \
    else make -C gpu/cuda -j"$(nproc)"; fi \
 && test -s gpu/cuda/build/libcuzkgpu.so

# --- Runtime.
FROM nvidia/cuda:${CUDA_VERSION}-runtime-${UBUNTU}
RUN groupadd --system cuzk && useradd --system --gid cuzk --home-dir /var/lib/cuzk cuzk \
 && mkdir -p /var/lib/cuzk/keys /var/lib/cuzk/r1cs \
 && chown -R cuzk:cuzk /var/lib/cuzk
COPY --from=go-build /out/cuzk /usr/local/bin/cuzk
COPY --from=cuda-build /src/gpu/cuda/build/libcuzkgpu.so /usr/local/lib/cuzk/libcuzkgpu.so
# Where gpu.FindLibrary looks first for the CUDA prover library.
ENV CUZK_GPU_LIB=/usr/local/lib/cuzk/libcuzkgpu.so \
    CUZK_KEYS_DIR=/var/lib/cuzk/keys \
    CUZK_CACHE_DIR=/var/lib/cuzk/r1cs \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
USER cuzk
WORKDIR /var/lib/cuzk
VOLUME ["/var/lib/cuzk/keys", "/var/lib/cuzk/r1cs"]
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/cuzk"]
CMD ["worker"]
