package secrets

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	seed, err := NewKeySeed()
	if err != nil {
		t.Fatal(err)
	}
	f := t.TempDir() + "/k"
	if err := writeFile(f, seed); err != nil {
		t.Fatal(err)
	}
	k, err := LoadKey(f)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := Seal("manual.alice", "hunter2-token", k.Public())
	if err != nil {
		t.Fatal(err)
	}
	if !IsSealed(sealed) || strings.Contains(sealed, "hunter2") {
		t.Fatalf("sealed %q", sealed)
	}
	again, _ := Seal("manual.alice", "hunter2-token", k.Public())
	if again == sealed {
		t.Fatal("the same value sealed twice gave the same text")
	}
	if got, err := k.Open(sealed, "manual.alice"); err != nil || got != "hunter2-token" {
		t.Fatalf("open: %q %v", got, err)
	}
	// Bound to its owner: a copy in another owner's job does not open.
	if got, err := k.Open(sealed, "manual.mallory"); !errors.Is(err, ErrOtherOwner) || got != "" {
		t.Fatalf("open for another owner: %q %v", got, err)
	}
	cron, _ := Seal("cron.*", "nightly-token", k.Public())
	if got, err := k.Open(cron, "cron.scheduler-b"); err != nil || got != "nightly-token" {
		t.Fatalf("a cron.* value for a scheduler: %q %v", got, err)
	}
	if _, err := k.Open(cron, "manual.cron"); !errors.Is(err, ErrOtherOwner) {
		t.Fatalf("a cron.* value for a manual job: %v", err)
	}
	if _, err := k.Open("plain", "manual.alice"); !errors.Is(err, ErrNotSealed) {
		t.Fatalf("open plain: %v", err)
	}
	seed2, _ := NewKeySeed()
	f2 := t.TempDir() + "/k2"
	_ = writeFile(f2, seed2)
	other, _ := LoadKey(f2)
	if _, err := other.Open(sealed, "manual.alice"); err == nil {
		t.Fatal("another key opened the value")
	}
	tampered := sealed[:len(sealed)-2] + "AA"
	if _, err := k.Open(tampered, "manual.alice"); err == nil {
		t.Fatal("a tampered value opened")
	}
	if strings.Contains(k.String(), string(seed)) {
		t.Fatal("the key prints its seed")
	}
}

// The masker hides every value wherever the writes split it, and changes
// nothing else.
func TestMaskerAcrossWrites(t *testing.T) {
	values := []string{"s3cr3t-value", "s3cr3t", "tok\nen", "ab"}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"s3cr3t-value", "s3cr3t", "s3cr", "tok\nen", "tok", "ab", "a", "b", "x", "\n", "s3cr3t-valu", "é"}
	for round := range 2000 {
		var in strings.Builder
		for range rng.IntN(30) {
			in.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := in.String()
		want := MaskString(text, values)
		var out bytes.Buffer
		m := NewMasker(&out, values)
		data := []byte(text)
		for len(data) > 0 {
			n := 1 + rng.IntN(len(data))
			if _, err := m.Write(data[:n]); err != nil {
				t.Fatal(err)
			}
			data = data[n:]
		}
		if err := m.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != want {
			t.Fatalf("round %d: %q split gives %q, whole gives %q", round, text, out.String(), want)
		}
		for _, v := range values {
			if strings.Contains(out.String(), v) {
				t.Fatalf("round %d: %q leaks %q in %q", round, text, v, out.String())
			}
		}
	}
	if got := MaskString("say s3cr3t-value and s3cr3t and tok\nen, abc", values); got != "say [REDACTED] and [REDACTED] and [REDACTED], [REDACTED]c" {
		t.Fatalf("got %q", got)
	}
	if got := MaskString("nothing to hide", nil); got != "nothing to hide" {
		t.Fatalf("got %q", got)
	}
}
