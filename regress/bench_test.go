package regress

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkCompareOneSeries is one series compared by each method at sizes from a
// day's to a fleet's month of attempts: why large series skip the bootstrap.
//
//	go test ./regress/ -run '^$' -bench CompareOneSeries -benchtime 1x
func BenchmarkCompareOneSeries(b *testing.B) {
	for _, n := range []int{2000, 20000, 200000} {
		rng := rand.New(rand.NewPCG(1, 2))
		a, c := Samples{}, Samples{}
		k := Key{Source: "worker", Circuit: "c", Phase: "prove"}
		for range n {
			a.Add(k, 100*rng.ExpFloat64())
			c.Add(k, 105*rng.ExpFloat64())
		}
		for _, m := range []Method{Bootstrap, OrderStat} {
			b.Run(fmt.Sprintf("n=%d/%s", n, m), func(b *testing.B) {
				o := Defaults()
				o.Method = m
				o.BootstrapMaxN = 0 // measure the method itself at every size
				for b.Loop() {
					if _, err := Compare(a, c, o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
