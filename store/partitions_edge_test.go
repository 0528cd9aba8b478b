package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cuzk/cuzk/internal/pgtest"
	"github.com/cuzk/cuzk/phase"
)

// partitionAt stores partition n of request r's first attempt, made with the key vk,
// with its partition row (synth time only).
func partitionAt(t *testing.T, db DB, r string, n int, vk byte, proof byte) error {
	t.Helper()
	p := &Proof{RequestID: r, Circuit: "c", Proof: []byte{proof}, PublicWitness: []byte{byte(n)}, Attempt: 1, Worker: "w",
		Backend: "cpu", VKDigest: VKDigest([]byte{vk}), Partitions: 2}
	a := &PartitionAttempt{RequestID: r, Attempt: 1, Partition: n, Outcome: "succeeded", StartedAt: time.Now(),
		Phases: map[string]time.Duration{phase.Synth: time.Duration(proof) * time.Millisecond}}
	return StorePartition(context.Background(), db, p, n, a, func(*PartitionAttempt) {})
}

// The partition queries: none proven of an unknown request; a partition's row keeps
// NULL for the phases it never reached; a second proof with the same key changes
// nothing (a rescued attempt finishing late), one with a new key replaces it; the
// request's proof needs every partition, made with one key, in partition order.
func TestPartitionQueriesEdgeCases(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	p := db.Pool
	if done, err := DonePartitions(ctx, p, "nope"); err != nil || len(done) != 0 {
		t.Fatalf("DonePartitions of an unknown request: %v, %v", done, err)
	}
	mustRegister(t, p, testCircuit("c", 1))
	mustSubmit(t, p, &Submission{RequestID: "r", Circuit: "c", Inputs: []byte(`[{"x": "1"}, {"x": "2"}]`)})
	if _, err := BeginAttempt(ctx, p, "r", 1, Origin{Worker: "w"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := partitionAt(t, p, "r", 0, 1, 7); err != nil {
		t.Fatal(err)
	}
	var synth, prove *float64
	if err := p.QueryRow(ctx, "SELECT synth_ms, prove_ms FROM cuzk.partition_attempts WHERE request_id = 'r' AND partition = 0").
		Scan(&synth, &prove); err != nil || synth == nil || *synth != 7 || prove != nil {
		t.Fatalf("partition 0's row: synth_ms %v, prove_ms %v, %v; want 7 and NULL", synth, prove, err)
	}
	proof := &Proof{RequestID: "r", Circuit: "c", Attempt: 1, Worker: "w", Backend: "cpu", VKDigest: VKDigest([]byte{1}), Partitions: 2}
	if err := StoreProof(ctx, p, proof, false); err == nil || !strings.Contains(err.Error(), "1 of 2 partitions proven, with 1 keys") {
		t.Fatalf("the request's proof with one partition of two: %v", err)
	}

	// The same partition again, same key: the first proof and row stay.
	if err := partitionAt(t, p, "r", 0, 1, 9); err != nil {
		t.Fatal(err)
	}
	got := func(q string) string {
		t.Helper()
		var s string
		if err := p.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	if s := got("SELECT string_agg(encode(proof, 'hex') || '/' || key_version, ',' ORDER BY partition) FROM cuzk.partition_proofs"); s != "07/1" {
		t.Fatalf("after partition 0 again with the same key: %s, want the first proof", s)
	}
	if s := got("SELECT string_agg(synth_ms::text, ',') FROM cuzk.partition_attempts"); s != "7" {
		t.Fatalf("partition rows after partition 0 again: %s, want the first", s)
	}
	if done, err := DonePartitions(ctx, p, "r"); err != nil || fmt.Sprint(done) != "map[0:true]" {
		t.Fatalf("DonePartitions: %v, %v", done, err)
	}

	// A new key: partition 0 counts as not done, and is replaced when proven with it.
	mustRegister(t, p, testCircuit("c", 2))
	if done, err := DonePartitions(ctx, p, "r"); err != nil || len(done) != 0 {
		t.Fatalf("DonePartitions after a new key: %v, %v; want none", done, err)
	}
	if err := partitionAt(t, p, "r", 0, 2, 5); err != nil {
		t.Fatal(err)
	}
	if err := partitionAt(t, p, "r", 1, 1, 8); err != nil {
		t.Fatal(err)
	}
	if err := StoreProof(ctx, p, proof, false); err == nil || !strings.Contains(err.Error(), "2 of 2 partitions proven, with 2 keys") {
		t.Fatalf("the request's proof with partitions of two keys: %v", err)
	}
	if err := partitionAt(t, p, "r", 1, 2, 6); err != nil {
		t.Fatal(err)
	}
	if s := got("SELECT string_agg(encode(proof, 'hex') || '/' || key_version, ',' ORDER BY partition) FROM cuzk.partition_proofs"); s != "05/2,06/2" {
		t.Fatalf("partition proofs with the new key: %s", s)
	}
	proof.VKDigest = VKDigest([]byte{2})
	if err := StoreProof(ctx, p, proof, false); err != nil {
		t.Fatal(err)
	}
	if s := got(`SELECT partitions || ' ' || key_version || ' ' || encode(proof, 'hex') || ' ' || array_to_string(proofs, ',')
	              FROM cuzk.proofs WHERE request_id = 'r'`); s != `2 2 00000001050000000106 \x05,\x06` {
		t.Fatalf("the request's proof: %s", s)
	}
	if s := got("SELECT state FROM cuzk.proof_requests WHERE request_id = 'r'"); s != "succeeded" {
		t.Fatalf("the request is %s", s)
	}
}
