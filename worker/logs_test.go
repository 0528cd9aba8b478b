package worker_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/synth"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Operators grep logs by request: every line about an attempt names the request, the
// circuit, the attempt and the batch, for successes and failures alike.
func TestRequestLogLinesCarryRequestFields(t *testing.T) {
	db := pgtest.New(t)
	const circuit = "synthetic-k8"
	register(t, db.Pool, circuit)
	var buf lockedBuffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))

	startWorkerWith(t, db.Pool, nil, log, nil)

	good, err := synth.Inputs(circuit, 7)
	if err != nil {
		t.Fatal(err)
	}
	psql(t, db.URL, fmt.Sprintf(`
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('log-good', '%s', $j$%s$j$);
		INSERT INTO cuzk.proof_requests (request_id, circuit, inputs) VALUES ('log-bad', '%s', '{"nope": "1"}');`,
		circuit, good, circuit))
	waitState(t, db.Pool, "log-good", "succeeded")
	waitState(t, db.Pool, "log-bad", "failed")

	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader([]byte(buf.String())))
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		rid, ok := line["request_id"].(string)
		if !ok || line["msg"] == "job skipped" { // skipped jobs have no attempt
			continue
		}
		seen[rid]++
		for _, k := range []string{"circuit", "attempt", "batch_id"} {
			if _, ok := line[k]; !ok {
				t.Errorf("log line about %s lacks %s: %s", rid, k, sc.Text())
			}
		}
	}
	for _, rid := range []string{"log-good", "log-bad"} {
		if seen[rid] == 0 {
			t.Errorf("no log line names %s; log:\n%s", rid, buf.String())
		}
	}
}
