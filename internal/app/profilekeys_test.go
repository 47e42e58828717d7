package app

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/natsutil"
)

// A key of another kind on any profile is refused with its path, by the
// worker's loader and by doctor's (which keeps the other profiles).
func TestForeignProfileKeysAreRefused(t *testing.T) {
	t.Parallel()
	foreign := map[string]string{ // kind -> a key some other kind reads
		"local": "port: 22", "docker": "port: 22", "ssh": "memory_bytes: 1024", "singularity": "cgroup: auto",
		"apptainer": "identity_files: [k]", "modal": "image: x", "daytona": "scratch: /s", "vercel": "shell: /bin/sh",
		"plugin": "binds: [/a:/b]",
	}
	for kind, line := range foreign {
		key := strings.SplitN(line, ":", 2)[0]
		text := fmt.Sprintf("backends:\n  ok:\n    kind: local\n  p:\n    kind: %s\n    %s\n", kind, line)
		p := filepath.Join(t.TempDir(), "worker.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		want := "backends.p." + key + " (line 6): not an option of kind"
		if _, err := LoadFile(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("kind %s with %q: LoadFile: %v, want an error naming %s", kind, line, err, want)
		}
		cfg, bad, err := LoadFileProfiles(p)
		if err != nil || bad["p"] == nil || !strings.Contains(bad["p"].Error(), want) || cfg.Backends["ok"].Kind != "local" {
			t.Errorf("kind %s with %q: LoadFileProfiles: %v %v %+v", kind, line, bad, err, cfg.Backends)
		}
	}
}

// Every key a profile can hold belongs to some kind's table: a new field
// of BackendConfig cannot be forgotten there (and so be refused on every
// kind, or accepted on all).
func TestProfileKeyTableCoversTheConfig(t *testing.T) {
	t.Parallel()
	typ := reflect.TypeFor[BackendConfig]()
	for i := range typ.NumField() {
		key := strings.Split(typ.Field(i).Tag.Get("yaml"), ",")[0]
		if key == "" || key == "-" || slices.Contains(commonProfileKeys, key) {
			continue
		}
		found := false
		for _, k := range kinds {
			found = found || slices.Contains(k.keys, key)
		}
		if !found {
			t.Errorf("BackendConfig.%s (%s) is in no kind's keys (the kinds table)", typ.Field(i).Name, key)
		}
	}
}

// Every daemon flag that says "(default X)" says what an empty
// configuration gets: the flag's help and WithDefaults read the same
// constants.
func TestDaemonFlagDefaultsAreTheConfigs(t *testing.T) {
	t.Parallel()
	var c Config
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	registerDaemonFlags(fs, &c)
	got := Config{Worker: c.Worker.WithDefaults()}
	want := map[string]string{
		"slots": fmt.Sprint(got.Worker.Slots), "lease-ttl": got.Worker.LeaseTTL.String(),
		"drain-timeout": got.Worker.DrainTimeout.String(), "kill-grace": got.Worker.KillGrace.String(),
		"election-ttl": got.Worker.ElectionTTL.String(), "reaper-scan": got.Worker.ReaperScan.String(),
		"pull-wait": got.Worker.PullWait.String(), "output-max": fmt.Sprint(got.Worker.OutputMax),
		"nats-url": natsutil.DefaultURL,
	}
	seen := 0
	fs.VisitAll(func(f *flag.Flag) {
		w, ok := want[f.Name]
		if !ok {
			return
		}
		seen++
		if !strings.Contains(f.Usage, "default "+w+")") {
			t.Errorf("--%s says %q; the configuration's default is %s", f.Name, f.Usage, w)
		}
	})
	if seen != len(want) {
		t.Fatalf("checked %d of %d flags", seen, len(want))
	}
}

// The example configuration, whose comments call its worker values the
// defaults, shows the defaults.
func TestExampleWorkerShowsTheDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := LoadFile("../../examples/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ex, def := cfg.Worker, (Config{}).Worker.WithDefaults()
	for name, pair := range map[string][2]any{
		"slots": {ex.Slots, def.Slots}, "lease_ttl": {ex.LeaseTTL, def.LeaseTTL}, "claim_window": {ex.ClaimWindow, def.ClaimWindow},
		"drain_timeout": {ex.DrainTimeout, def.DrainTimeout}, "kill_grace": {ex.KillGrace, def.KillGrace},
		"election_ttl": {ex.ElectionTTL, def.ElectionTTL}, "reaper_scan": {ex.ReaperScan, def.ReaperScan},
	} {
		if pair[0] != pair[1] {
			t.Errorf("examples/worker.yaml worker.%s = %v, the default is %v", name, pair[0], pair[1])
		}
	}
}
