// Package requirecgo stops a build without cgo with a sentence that says why:
// cuzk's GPU code (go-nvml, and the dlopen loader of the CUDA library) is C, so
// the build needs a C compiler, and Go turns cgo off when it finds none.
package requirecgo
