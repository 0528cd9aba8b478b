package synth

import "github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

// ValueCounts sorts a witness's values by what a multi-scalar multiplication over
// them costs: 0 and 1 take no multiplication, small ones a short one.
type ValueCounts struct {
	Zero, One int
	Small     int // 2 to 2^64−1
	Full      int // everything larger, field-size values and small negatives alike
}

// CountValues counts w's values by size.
func CountValues(w []fr.Element) ValueCounts {
	var n ValueCounts
	for i := range w {
		switch {
		case w[i].IsZero():
			n.Zero++
		case w[i].IsOne():
			n.One++
		case w[i].IsUint64():
			n.Small++
		default:
			n.Full++
		}
	}
	return n
}
