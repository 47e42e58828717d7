package policy

import (
	"testing"
)

// BenchmarkDecideAdversarial measures one decision on each adversarial
// family at the spec's command limit (128 KiB): the worst case of time
// (ns/op) and heap (B/op) the budget allows. Run it with:
// go test -run '^$' -bench DecideAdversarial -benchmem ./internal/policy/
func BenchmarkDecideAdversarial(b *testing.B) {
	e, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	for _, fam := range adversarialFamilies {
		req := Request{Command: fam.gen(maxCommandLen), Origin: "manual", Mode: ModeDeny}
		b.Run(fam.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := e.Decide(req); d.Allow && d.Dangerous {
					b.Fatalf("dangerous command allowed in deny mode: %s", d.Reason)
				}
			}
		})
	}
}
