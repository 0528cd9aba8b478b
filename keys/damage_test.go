package keys

import (
	"bytes"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A truncated pk.bin fails its load with an error naming the file, its size and the
// size the dump's sidecar recorded, and its SHA-256 beside the registered digest;
// the good dump beside it is not used to hide the damage.
func TestTruncatedPKBinFailsPrecisely(t *testing.T) {
	for _, withDump := range []bool{true, false} {
		d, _, digest := setupCube(t)
		path := d.Path("cube", PKFile)
		size := fileSize(path)
		if !withDump {
			for _, f := range []string{DumpFile, DumpSumFile} {
				if err := os.Remove(d.Path("cube", f)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := os.Truncate(path, size/2); err != nil {
			t.Fatal(err)
		}
		got, err := FileDigest(path)
		if err != nil {
			t.Fatal(err)
		}
		pk, _, _, err := d.LoadLogged("cube", digest, nil)
		if pk != nil || err == nil {
			t.Fatalf("dump %v: a truncated pk.bin loaded", withDump)
		}
		msg := err.Error()
		want := []string{path, "truncated or damaged", strconv.FormatInt(size/2, 10) + " bytes", "SHA-256 " + got, "cuzk.circuits.pk_digest " + digest}
		if withDump {
			want = append(want, strconv.FormatInt(size, 10)+" expected")
		}
		for _, w := range want {
			if !strings.Contains(msg, w) {
				t.Errorf("dump %v: error %q does not say %q", withDump, msg, w)
			}
		}
	}
}

// A pk.bin that decodes but is not the registered key is refused, naming both digests
// in full; the dump made from it is not used either.
func TestDigestMismatchRefused(t *testing.T) {
	d, _, digest := setupCube(t)
	registered := strings.Repeat("0f", 32)
	pk, _, _, err := d.LoadLogged("cube", registered, nil)
	if pk != nil || err == nil {
		t.Fatal("a key other than the registered one loaded")
	}
	for _, w := range []string{d.Path("cube", PKFile), "SHA-256 " + digest, "cuzk.circuits.pk_digest of cube is " + registered} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// A truncated dump is not used: the load says why (the dump's path, its size and the
// sidecar's) and reads pk.bin.
func TestTruncatedDumpFallsBack(t *testing.T) {
	d, _, digest := setupCube(t)
	path := d.Path("cube", DumpFile)
	size := fileSize(path)
	if err := os.Truncate(path, size-1); err != nil {
		t.Fatal(err)
	}
	_, _, st, log := load(t, d, digest)
	want := path + " has " + strconv.FormatInt(size-1, 10) + " bytes, its sidecar says " + strconv.FormatInt(size, 10)
	if st.Source != SourcePK || !strings.Contains(log, want) {
		t.Errorf("load with a truncated dump: %+v, want pk.bin and a warning saying %q; logged:\n%s", st, want, log)
	}
}

// A load logs its start, progress (bytes read, percent) once it is large enough, and
// its end with bytes, ms and MB/s; Progress sees the bytes as they are read.
func TestLoadReportsProgress(t *testing.T) {
	d, _, digest := setupCube(t)
	var buf bytes.Buffer
	var last, total int64
	_, _, st, err := d.LoadWith("cube", digest, LoadOptions{
		Log:      slog.New(slog.NewTextHandler(&buf, nil)),
		Progress: func(r, t int64) { last, total = r, t },
		progress: &progressLimits{minBytes: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if total != 2*st.Bytes || last != total {
		t.Errorf("progress ended at %d of %d, want both twice the dump's %d bytes (hashed, then decoded)", last, total, st.Bytes)
	}
	if !regexp.MustCompile(`level=INFO msg="loading proving key: progress" circuit=cube reading=pk.dump\S* bytes_read=\d+ bytes_total=` + strconv.FormatInt(total, 10) + ` percent=\d+`).MatchString(out) {
		t.Errorf("no progress line; logged:\n%s", out)
	}
	if !regexp.MustCompile(`level=INFO msg="proving key loaded" circuit=cube from=pk.dump bytes=` + strconv.FormatInt(st.Bytes, 10) + ` ms=\d+ mb_per_s=[0-9.]+`).MatchString(out) {
		t.Errorf("no done line with bytes, ms and MB/s; logged:\n%s", out)
	}
	// A small key at the default threshold: start and done lines only.
	buf.Reset()
	if _, _, _, err := d.LoadLogged("cube", digest, slog.New(slog.NewTextHandler(&buf, nil))); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "progress") {
		t.Errorf("a small key logged progress lines:\n%s", buf.String())
	}
}
