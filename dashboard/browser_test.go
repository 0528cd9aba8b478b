package dashboard_test

import (
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cuzk/cuzk/dashboard"
	"github.com/cuzk/cuzk/internal/headless"
	"github.com/cuzk/cuzk/internal/pgtest"
)

// measurePage shows the dashboard at a fixed width in a same-origin frame and writes
// what the browser laid out into #out: the page's width and scroll width, and how far
// right the failures table and its cells reach with every folded error unfolded.
const measurePage = `<!doctype html><html><body style="margin:0">
<iframe id="f" src="/" style="width:1000px;height:3000px;border:0"></iframe><pre id="out">not measured</pre>
<script>
document.getElementById("f").onload = function () {
  var d = this.contentDocument, t = d.getElementById("failures"), r = {cells: 0};
  d.querySelectorAll("#failures details").forEach(function (x) { x.open = true; });
  r.viewport = d.documentElement.clientWidth;
  r.page = d.documentElement.scrollWidth;
  r.table = Math.ceil(t.getBoundingClientRect().right);
  t.querySelectorAll("td").forEach(function (c) { r.cells = Math.max(r.cells, Math.ceil(c.getBoundingClientRect().right)); });
  document.getElementById("out").textContent = JSON.stringify(r);
};
</script></body></html>`

// TestDashboardInChromium loads the dashboard of a database with history in a real
// browser: the rendered DOM must show the circuit, its charts and the failures by
// request; a 10 kB error, unfolded, must wrap within the page rather than widen it;
// and a screenshot is kept for people to look at.
func TestDashboardInChromium(t *testing.T) {
	bin := headless.Chromium(t)
	db := pgtest.New(t)
	seed(t, db)
	seedFailures(t, db)
	mux := http.NewServeMux()
	mux.Handle("/", dashboard.New(db.Pool, dashboard.Options{}))
	mux.HandleFunc("/measure", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(measurePage))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	dom := string(headless.Run(t, bin, srv.URL+"/", "--dump-dom"))
	for _, want := range []string{circuit, "<svg", `class="phase-prove"`, `class="gpu-util"`, "not below the modulus", "gpu-host/7",
		`<td class="rid">flaky-1</td>`, `<td class="rid">bad-1</td>`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}

	dom = headless.DOM(t, bin, srv.URL+"/measure")
	m := regexp.MustCompile(`<pre id="out">(\{.*?\})</pre>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the measuring page reported nothing:\n%.2000s", dom)
	}
	var got struct{ Viewport, Page, Table, Cells int }
	if err := json.Unmarshal([]byte(m[1]), &got); err != nil {
		t.Fatalf("measurements %s: %v", m[1], err)
	}
	if got.Viewport < 900 || got.Page > got.Viewport || got.Table > got.Viewport || got.Cells > got.Table {
		t.Errorf("the failures table does not keep within the page: %+v (page: scroll width; table, cells: right edges)", got)
	}
	t.Logf("layout at 1000 px: %+v", got)

	shot := filepath.Join(headless.ArtifactDir(t), "dashboard.png")
	headless.Run(t, bin, srv.URL+"/", "--screenshot="+shot, "--window-size=1400,2200")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 2200 {
		t.Errorf("screenshot is %v, want 1400x2200", b)
	}
	t.Logf("screenshot: %s", shot)
}
