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

// The local, docker, ssh and singularity settings go in a block named
// after the kind, decoded strictly; the top-level form is read with a
// warning that says where to write it, and mixing the two is refused.
func TestProfileSettingsBlocks(t *testing.T) {
	t.Parallel()
	load := func(t *testing.T, text string) (Config, map[string]error, error) {
		t.Helper()
		p := filepath.Join(t.TempDir(), "worker.yaml")
		if err := os.WriteFile(p, []byte("backends:\n  ok:\n    kind: local\n"+text), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadFile(p)
		_, bad, perr := LoadFileProfiles(p)
		if perr != nil {
			t.Fatalf("LoadFileProfiles: %v", perr)
		}
		return cfg, bad, err
	}
	t.Run("block", func(t *testing.T) {
		cfg, _, err := load(t, "  p:\n    kind: docker\n    docker:\n      image: alpine:3\n      network: none\n      memory_bytes: 1024\n      warm_pool: 2\n")
		if err != nil {
			t.Fatal(err)
		}
		bc := cfg.Backends["p"]
		if bc.Image != "alpine:3" || bc.Network != "none" || bc.MemoryBytes != 1024 || bc.WarmPool != 2 || len(cfg.Deprecations) != 0 || bc.Docker != nil {
			t.Fatalf("settled %+v, deprecations %q", bc, cfg.Deprecations)
		}
	})
	t.Run("apptainer's block may be named singularity", func(t *testing.T) {
		cfg, _, err := load(t, "  p:\n    kind: apptainer\n    singularity:\n      image: docker://alpine:3\n")
		if err != nil || cfg.Backends["p"].Image != "docker://alpine:3" {
			t.Fatalf("%+v %v", cfg.Backends["p"], err)
		}
	})
	t.Run("top level is deprecated", func(t *testing.T) {
		cfg, _, err := load(t, "  p:\n    kind: ssh\n    host: h\n    port: 2222\n")
		if err != nil || cfg.Backends["p"].Port != 2222 {
			t.Fatalf("%+v %v", cfg.Backends["p"], err)
		}
		want := "backends.p: host, port at the profile's top level is deprecated; write them under ssh: (backends.p.ssh.host)"
		if len(cfg.Deprecations) != 1 || !strings.Contains(cfg.Deprecations[0], want) {
			t.Fatalf("deprecations %q, want one saying %q", cfg.Deprecations, want)
		}
	})
	for name, c := range map[string]struct{ text, want string }{
		"both": {"  p:\n    kind: docker\n    image: a\n    docker:\n      network: none\n",
			"backends.p.image (line 6): set at the profile's top level beside the docker block; move it into backends.p.docker"},
		"foreign key in the block": {"  p:\n    kind: docker\n    docker:\n      port: 22\n",
			"backends.p.docker.port (line 7): not an option of kind docker (it is one of ssh)"},
		"unknown key in the block": {"  p:\n    kind: local\n    local:\n      colour: blue\n", "field colour not found"},
		"another kind's block": {"  p:\n    kind: docker\n    ssh:\n      port: 22\n",
			"backends.p.ssh (line 6): the settings block of kind ssh, on a profile of kind docker; its settings go under backends.p.docker"},
		"a block on a kind with its own": {"  p:\n    kind: modal\n    docker:\n      image: a\n",
			"backends.p.docker (line 6): the settings block of kind docker, on a profile of kind modal"},
		"not a mapping": {"  p:\n    kind: local\n    local: [a]\n", "backends.p.local"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, bad, err := load(t, c.text)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("LoadFile: %v, want an error containing %q", err, c.want)
			}
			if bad["p"] == nil || !strings.Contains(bad["p"].Error(), c.want) || bad["ok"] != nil {
				t.Fatalf("LoadFileProfiles: %v, want p refused with %q and ok kept", bad, c.want)
			}
			_ = cfg
		})
	}
}

// Every key a profile can hold belongs to some kind's table: a new field
// of BackendConfig cannot be forgotten there (and so be refused on every
// kind, or accepted on all).
func TestProfileKeyTableCoversTheConfig(t *testing.T) {
	t.Parallel()
	var fields []reflect.StructField
	for _, typ := range []reflect.Type{reflect.TypeFor[BackendConfig](), reflect.TypeFor[ProfileSettings]()} {
		for i := range typ.NumField() {
			fields = append(fields, typ.Field(i))
		}
	}
	for _, f := range fields {
		key := strings.Split(f.Tag.Get("yaml"), ",")[0]
		if key == "" || key == "-" || slices.Contains(commonProfileKeys, key) || isBlockName(key) {
			continue
		}
		found := false
		for _, k := range kinds {
			found = found || slices.Contains(k.keys, key)
		}
		if !found {
			t.Errorf("BackendConfig.%s (%s) is in no kind's keys (the kinds table)", f.Name, key)
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
