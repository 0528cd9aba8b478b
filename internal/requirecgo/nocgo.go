//go:build !cgo

package requirecgo

// Go turns cgo off when it finds no C compiler. The compiler's error quotes
// this string, so the build says what is missing (go-nvml's own errors, such
// as "undefined: Return", do not).
var _ int = "cuzk needs a C compiler: install gcc or clang (or set CC)"
