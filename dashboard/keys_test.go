package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/internal/pgtest"
)

// The "Proving keys" section shows each key this process loads: which device, its
// state (evicted ones muted, with why), bytes (so far, while loading), the resident
// key's device memory with its precomputed copies, time and error; without a provider
// it is left out.
func TestDashboardProvingKeys(t *testing.T) {
	db := pgtest.New(t)
	keys := []dashboard.Key{
		{Circuit: "big", State: "loading", Bytes: 1 << 30, Total: 4 << 30, Elapsed: 3200 * time.Millisecond},
		{Circuit: "big", Device: "cuda:0", State: "loading", Elapsed: 3200 * time.Millisecond},
		{Circuit: "small", Device: "cuda:0", State: "resident", Bytes: 2 << 20, Total: 2 << 20, Resident: 9 << 20, Elapsed: 40 * time.Millisecond},
		{Circuit: "wide", Device: "cuda:1", State: "resident", Bytes: 3 << 30, Total: 3 << 30, Resident: 32 << 30, Precomputed: 27 << 30,
			Elapsed: 4 * time.Second},
		{Circuit: "torn", State: "failed", Elapsed: time.Second, Err: "proving key /k/torn/pk.bin of torn is truncated or damaged"},
		{Circuit: "old", Device: "cuda:0", State: "evicted", Total: 3 << 20, Elapsed: 50 * time.Millisecond, Err: "device reset: sticky fault"},
	}
	srv := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{Keys: func() []dashboard.Key { return keys }}))
	defer srv.Close()
	code, body := get(t, srv.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("GET /: %d\n%s", code, body)
	}
	for _, want := range []string{
		"<h2>Proving keys</h2>",
		`<tr><td>big</td><td>files → memory</td><td>loading</td><td class="num">1.0 GiB / 4.0 GiB (25%)</td><td class="num">–</td><td class="num">3.2s</td>`,
		`<tr><td>big</td><td>cuda:0</td><td>loading</td><td class="num">–</td><td class="num">–</td>`,
		`<tr><td>small</td><td>cuda:0</td><td>resident</td><td class="num">2.0 MiB</td><td class="num">9.0 MiB</td><td class="num">40ms</td>`,
		`<tr><td>wide</td><td>cuda:1</td><td>resident</td><td class="num">3.0 GiB</td><td class="num">32 GiB (27 GiB precomputed)</td><td class="num">4s</td>`,
		`<td class="bad">failed</td>`,
		"proving key /k/torn/pk.bin of torn is truncated or damaged",
		`<tr><td>old</td><td>cuda:0</td><td class="muted">evicted</td><td class="num">3.0 MiB</td><td class="num">–</td><td class="num">50ms</td><td class="err">device reset: sticky fault</td>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %q", want)
		}
	}

	keys = nil
	if _, body := get(t, srv.URL+"/"); !strings.Contains(body, "no proving key loaded or loading") {
		t.Error("with no keys the section does not say so")
	}
	plain := httptest.NewServer(dashboard.New(db.Pool, dashboard.Options{}))
	defer plain.Close()
	if _, body := get(t, plain.URL+"/"); strings.Contains(body, "Proving keys") {
		t.Error("the keys section shows without a provider")
	}
}
