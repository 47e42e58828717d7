package drills

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/jobs"
)

// TestLargeAndBinaryOutput: on the cluster, a job writing 200 MiB and a
// job writing binary garbage (NULs, invalid UTF-8) both succeed; the
// result keeps a bounded head and tail, and the OUTPUTS stream holds every
// byte (read back whole: size, SHA-256 and, for the binary one, the bytes
// themselves).
func TestLargeAndBinaryOutput(t *testing.T) {
	_, cl := clusterWithWorkers(t, 1, "--output-max", fmt.Sprint(256<<20)) // the default, 64 MiB, would cap the 200 MiB job
	ctx := t.Context()

	garbage := make([]byte, 1<<20)
	if _, err := rand.Read(garbage); err != nil {
		t.Fatal(err)
	}
	garbage[0], garbage[1], garbage[2] = 0, 0xff, 0xfe // a NUL and bytes that are never UTF-8
	file := filepath.Join(t.TempDir(), "garbage.bin")
	if err := os.WriteFile(file, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	const big = 200 << 20
	bigSum := sha256.New()
	_, _ = io.Copy(bigSum, io.LimitReader(repeat('x'), big))

	cases := []struct {
		name    string
		command string
		size    int64
		sum     string
	}{
		{"200 MiB", "head -c 209715200 /dev/zero | tr '\\000' x", big, hex.EncodeToString(bigSum.Sum(nil))},
		{"binary garbage", "cat " + file, int64(len(garbage)), sum(garbage)},
	}
	for _, tc := range cases {
		sub, err := cl.Submit(ctx, client.Spec{Command: tc.command, Timeout: client.Duration(5 * time.Minute), MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		r, err := cl.Wait(ctx, sub.ID)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		out := r.Stdout
		t.Logf("DRILL output %s: %s in %s, %d bytes stored as %q, head %d bytes, tail %d bytes",
			tc.name, r.State, time.Since(began).Round(time.Millisecond), out.Size, out.Subject, len(out.Head), len(out.Tail))
		if r.State != jobs.StateSucceeded || out.Size != tc.size || out.SHA256 != tc.sum || out.Subject == "" || !out.Truncated {
			t.Fatalf("%s: %s, stdout %+v (want %d bytes, sha256 %s)", tc.name, r.State, summary(out), tc.size, tc.sum)
		}
		if len(out.Head)+len(out.Tail) > 64<<10 {
			t.Fatalf("%s: head+tail %d bytes in the result", tc.name, len(out.Head)+len(out.Tail))
		}
		// What the stream holds, read back whole: its size and digest.
		var got bytes.Buffer
		h := sha256.New()
		var w io.Writer = h
		if tc.size <= 8<<20 {
			w = io.MultiWriter(h, &got)
		}
		if err := cl.Output(ctx, r, w, io.Discard); err != nil {
			t.Fatalf("%s: read the stored output: %v", tc.name, err)
		}
		if hex.EncodeToString(h.Sum(nil)) != tc.sum {
			t.Fatalf("%s: stored output's sha256 %s, want %s", tc.name, hex.EncodeToString(h.Sum(nil)), tc.sum)
		}
		if tc.size > 8<<20 {
			continue
		}
		if !bytes.Equal(got.Bytes(), garbage) {
			t.Fatalf("%s: stored output differs (%d bytes, sha256 %s)", tc.name, got.Len(), sum(got.Bytes()))
		}
	}
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func summary(o jobs.Output) string {
	return fmt.Sprintf("size %d sha256 %s subject %q truncated %t", o.Size, o.SHA256, o.Subject, o.Truncated)
}

// repeat is an endless reader of c.
type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
