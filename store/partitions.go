package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cuzk/cuzk/phase"
	"github.com/cuzk/cuzk/sql/queries"
)

// PartitionInputs splits the inputs of a request of n partitions (a JSON array of n
// inputs objects, as the insert check admitted) into one inputs JSON per partition,
// each a slice of inputs. It finds the elements' bounds by their brackets and strings
// only, without decoding them (a C2's 37 MB took 0.19 s through encoding/json): the
// text is PostgreSQL's, and each partition's is parsed in full by its synthesis.
func PartitionInputs(inputs []byte, n int) ([][]byte, error) {
	fail := func(format string, args ...any) ([][]byte, error) {
		return nil, fmt.Errorf("split inputs into partitions: "+format, args...)
	}
	i := skipSpace(inputs, 0)
	if i == len(inputs) || inputs[i] != '[' {
		return fail("not a JSON array")
	}
	i = skipSpace(inputs, i+1)
	var out [][]byte
	if i < len(inputs) && inputs[i] == ']' {
		i++
	} else {
		for {
			end, err := skipValue(inputs, i)
			if err != nil {
				return fail("element %d at byte %d: %v", len(out), i, err)
			}
			if len(out) == n {
				return fail("more than %d inputs for %d partitions", n, n)
			}
			out = append(out, inputs[i:end:end]) // capped: an append to one partition must not write into the next
			i = skipSpace(inputs, end)
			if i == len(inputs) {
				return fail("the array does not end")
			}
			if inputs[i] == ']' {
				i++
				break
			}
			if inputs[i] != ',' {
				return fail("%q after element %d at byte %d", inputs[i], len(out)-1, i)
			}
			i = skipSpace(inputs, i+1)
		}
	}
	if skipSpace(inputs, i) != len(inputs) {
		return fail("data after the array at byte %d", i)
	}
	if len(out) != n {
		return fail("%d inputs for %d partitions", len(out), n)
	}
	return out, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value at b[i:]: an object or array through
// its matching bracket (strings inside skipped whole, escapes included), a string
// through its closing quote, anything else (a number, true, false, null) up to the
// next delimiter.
func skipValue(b []byte, i int) (int, error) {
	if i == len(b) {
		return 0, errors.New("missing")
	}
	var stack []byte // the closing brackets awaited
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			end, err := skipString(b, i)
			if err != nil {
				return 0, err
			}
			if len(stack) == 0 {
				return end, nil // a string element
			}
			i = end
		case '{', '[':
			stack = append(stack, c+2) // '{'+2 is '}', '['+2 is ']'
			i++
		case '}', ']':
			if len(stack) == 0 {
				return i, nil // the enclosing array's end, after a scalar
			}
			if stack[len(stack)-1] != c {
				return 0, fmt.Errorf("%q where %q was expected", c, stack[len(stack)-1])
			}
			stack = stack[:len(stack)-1]
			i++
			if len(stack) == 0 {
				return i, nil // an object or array element
			}
		case ',', ' ', '\t', '\n', '\r':
			if len(stack) == 0 {
				return i, nil // after a scalar
			}
			i++
		default:
			i++
		}
	}
	if len(stack) > 0 {
		return 0, errors.New("unterminated")
	}
	return i, nil
}

// skipString returns the end of the JSON string whose opening quote is b[i].
func skipString(b []byte, i int) (int, error) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte cannot close the string
		case '"':
			return i + 1, nil
		}
	}
	return 0, errors.New("unterminated string")
}

// DonePartitions are the partitions of a request that have a stored proof made with
// the circuit's current key: a retry proves only the others. A partition proven with
// an earlier key is proven again, so that every partition verifies with one key.
func DonePartitions(ctx context.Context, db DB, requestID string) (map[int]bool, error) {
	rows, _ := db.Query(ctx, queries.SQL("DonePartitions"), requestID)
	list, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("read proven partitions of %q: %w", requestID, err)
	}
	done := make(map[int]bool, len(list))
	for _, p := range list {
		done[p] = true
	}
	return done, nil
}

// PartitionAttempt is what an attempt did with one partition: its outcome and phase
// times (by the names of package phase; the queue phase is the attempt's alone).
type PartitionAttempt struct {
	RequestID             string
	Attempt, Partition    int
	Outcome, Error        string // succeeded | failed
	StartedAt, FinishedAt time.Time
	// When synthesis and proving began; zero where the phase never began.
	SynthStartedAt, ProveStartedAt time.Time
	Phases                         map[string]time.Duration
}

// RecordPartition inserts a partition's row of its attempt.
func RecordPartition(ctx context.Context, db DB, a *PartitionAttempt) error {
	args := []any{a.RequestID, a.Attempt, a.Partition, a.Outcome, nullString(CapError(a.Error)), a.StartedAt, nullTime(a.FinishedAt),
		nullTime(a.SynthStartedAt), nullTime(a.ProveStartedAt)}
	// The phases after the queue's, in the order the query lists their columns.
	for _, p := range phase.All() {
		if p.Name == phase.Queue {
			continue
		}
		var ms *float64
		if d, ok := a.Phases[p.Name]; ok {
			ms = Ms(d)
		}
		args = append(args, ms)
	}
	_, err := db.Exec(ctx, queries.SQL("RecordPartition"), args...)
	if err != nil {
		return fmt.Errorf("record partition %d of attempt %d of %q: %w", a.Partition, a.Attempt, a.RequestID, err)
	}
	return nil
}

// StorePartition stores one partition's verified proof with its attempt row, in one
// transaction, as soon as it is made: a worker that dies later loses none. A proof of
// the partition made with an earlier key is replaced; one made with the same key stays
// (a rescued attempt finishing late).
func StorePartition(ctx context.Context, db DB, p *Proof, partition int, a *PartitionAttempt, stamp func(*PartitionAttempt)) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		version, err := keyVersion(ctx, tx, p.Circuit, p.VKDigest)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, queries.SQL("StorePartitionProof"),
			p.RequestID, partition, p.Proof, p.PublicWitness, version, p.Circuit, p.Attempt, p.Worker, p.Backend); err != nil {
			return fmt.Errorf("store proof of partition %d of %q: %w", partition, p.RequestID, err)
		}
		stamp(a)
		return RecordPartition(ctx, tx, a)
	})
}

// insertPartitionedProof writes the proofs row of a request of n partitions from its
// stored partition proofs, which must all be there and made with one key.
func insertPartitionedProof(ctx context.Context, db DB, p *Proof, n int) (int64, error) {
	var have, versions int
	if err := db.QueryRow(ctx, queries.SQL("CountPartitionProofs"), p.RequestID).Scan(&have, &versions); err != nil {
		return 0, fmt.Errorf("count partition proofs of %q: %w", p.RequestID, err)
	}
	if have != n || versions != 1 {
		return 0, fmt.Errorf("store proof of %q: %d of %d partitions proven, with %d keys", p.RequestID, have, n, versions)
	}
	tag, err := db.Exec(ctx, queries.SQL("InsertPartitionedProof"),
		p.RequestID, p.Circuit, p.Attempt, p.Worker, p.Backend)
	if err != nil {
		return 0, fmt.Errorf("insert proof of %q: %w", p.RequestID, err)
	}
	return tag.RowsAffected(), nil
}
