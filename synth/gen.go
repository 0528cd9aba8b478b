package synth

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strings"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/schema"
)

// Inputs returns valid inputs for the built-in circuit name as an inputs JSON with
// flat, canonical keys in witness order (public inputs first). Values are computed
// natively (gnark-crypto's Poseidon2, crypto/sha256) and depend only on name and seed.
func Inputs(name string, seed uint64) ([]byte, error) {
	b, err := lookupBuiltin(name)
	if err != nil {
		return nil, err
	}
	var key bytes.Buffer
	key.WriteString("cuzk inputs\x00" + name + "\x00")
	binary.Write(&key, binary.LittleEndian, seed)
	rng := rand.New(rand.NewChaCha8(sha256.Sum256(key.Bytes())))

	names, values, err := flatten(b.assign(rng))
	if err != nil {
		return nil, fmt.Errorf("inputs for %s: %w", name, err)
	}
	var out bytes.Buffer
	out.WriteString("{")
	for i, n := range names {
		if i > 0 {
			out.WriteString(",")
		}
		k, _ := json.Marshal(n)
		fmt.Fprintf(&out, "\n  %s: %q", k, formatValue(values[i]))
	}
	out.WriteString("\n}\n")
	return out.Bytes(), nil
}

// flatten lists the leaves of an assignment with their canonical names, public ones
// first, in the order gnark's compiler numbers them.
func flatten(assignment frontend.Circuit) (names []string, values []*big.Int, err error) {
	leafType := reflect.TypeOf((*frontend.Variable)(nil)).Elem()
	for _, vis := range []schema.Visibility{schema.Public, schema.Secret} {
		_, err := schema.Walk(ecc.BLS12_381.ScalarField(), assignment, leafType, func(f schema.LeafInfo, v reflect.Value) error {
			if f.Visibility != vis {
				return nil
			}
			val, ok := v.Interface().(*big.Int)
			if !ok {
				return fmt.Errorf("%s: assignment holds %T, want *big.Int", f.FullName(), v.Interface())
			}
			names = append(names, strings.ReplaceAll(f.FullName(), "_", "."))
			values = append(values, val)
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
	}
	return names, values, nil
}

// formatValue prints small values in decimal and field-size ones in hex.
func formatValue(v *big.Int) string {
	if v.IsUint64() {
		return v.String()
	}
	return "0x" + v.Text(16)
}

// PartitionedInputs returns the inputs of a request of n partitions of the built-in
// circuit name: a JSON array of n inputs objects, those of seeds seed to seed+n-1.
func PartitionedInputs(name string, seed uint64, n int) ([]byte, error) {
	if n < 1 || seed+uint64(n-1) < seed {
		return nil, badInput("partitions %d from seed %d: want 1 or more, with seeds below 2^64", n, seed)
	}
	out := []byte{'['}
	for i := range uint64(n) {
		b, err := Inputs(name, seed+i)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']'), nil
}
