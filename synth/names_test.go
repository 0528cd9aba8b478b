package synth

import (
	"strings"
	"testing"
)

func TestLookupBuiltinNames(t *testing.T) {
	for _, name := range []string{"synthetic-k1", "synthetic-k26", "merkle-poseidon2-d1-c1", "merkle-poseidon2-d30-c8", "sha256-preimage-b1", "sha256-preimage-b65536", "porep-k16", "porep-k27"} {
		if _, err := lookupBuiltin(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := map[string]string{
		"foo":                             `unknown circuit "foo": expected synthetic-k<K>, merkle-poseidon2-d<D>-c<C>, sha256-preimage-b<N> or porep-k<K>`,
		"":                                `unknown circuit "": expected`,
		"synthetic":                       `unknown circuit "synthetic"`,
		"synthetic-k":                     `malformed circuit name "synthetic-k": expected synthetic-k<K> with decimal K in [1, 26]`,
		"synthetic-k0":                    `circuit "synthetic-k0": K=0 out of range [1, 26]`,
		"synthetic-k27":                   `K=27 out of range [1, 26]`,
		"synthetic-k016":                  `malformed circuit name "synthetic-k016"`,
		"synthetic-k16x":                  `malformed circuit name "synthetic-k16x"`,
		"synthetic-k-1":                   `malformed circuit name`,
		"synthetic-k99999999999999999999": `K=99999999999999999999 out of range`,
		"merkle-poseidon2-d4":             `malformed circuit name "merkle-poseidon2-d4": expected merkle-poseidon2-d<D>-c<C> with decimal D in [1, 62], C in [1, 65536]`,
		"merkle-poseidon2-d4-c0":          `C=0 out of range [1, 65536]`,
		"merkle-poseidon2-d63-c1":         `D=63 out of range [1, 62]`,
		"merkle-poseidon2-d4-c2-":         `malformed circuit name`,
		"sha256-preimage-b0":              `N=0 out of range [1, 65536]`,
		"sha256-preimage-b":               `malformed circuit name "sha256-preimage-b"`,
		"porep-k15":                       `circuit "porep-k15": K=15 out of range [16, 27]`,
		"porep-k28":                       `K=28 out of range [16, 27]`,
		"porep-k":                         `malformed circuit name "porep-k": expected porep-k<K> with decimal K in [16, 27]`,
		"porep-k016":                      `malformed circuit name "porep-k016"`,
	}
	for name, want := range bad {
		_, err := lookupBuiltin(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want error containing %q", name, err, want)
			continue
		}
		if !IsBadInput(err) {
			t.Errorf("%q: %v is not an InputError", name, err)
		}
	}
}
