package app

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/scheduler"
)

// docBlock is one fenced block of YAML in a Markdown file.
type docBlock struct {
	file string
	line int
	text string
	skip string // the reason given by a <!-- docs-test: skip REASON --> line just before it
}

var skipMarker = regexp.MustCompile(`<!--\s*docs-test:\s*skip\s*(.*?)\s*-->`)

// yamlBlocks returns the ```yaml blocks of the Markdown files matching
// the patterns, relative to the repository root.
func yamlBlocks(t *testing.T, patterns ...string) []docBlock {
	t.Helper()
	var out []docBlock
	for _, pattern := range patterns {
		files, err := filepath.Glob(filepath.Join("../..", pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(data), "\n")
			for i := 0; i < len(lines); i++ {
				fence := strings.TrimSpace(lines[i])
				if fence != "```yaml" && fence != "```yml" {
					continue
				}
				b := docBlock{file: strings.TrimPrefix(f, "../../"), line: i + 1}
				if i > 0 {
					if m := skipMarker.FindStringSubmatch(lines[i-1]); m != nil {
						b.skip = m[1]
						if b.skip == "" {
							b.skip = "(no reason)"
						}
					}
				}
				var body []string
				for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
					body = append(body, lines[i])
				}
				b.text = strings.Join(body, "\n") + "\n"
				out = append(out, b)
			}
		}
	}
	return out
}

// workerKeys are the top-level keys of the daemons' configuration.
var workerKeys = regexp.MustCompile(`(?m)^(nats|metrics_addr|profiles|layout|worker|backends|policy|schedules_file|log_format):`)

// TestDocsYAMLBlocksLoad: every YAML block of the README, docs/ and the
// examples is loaded through the loader that reads it in earnest — a
// worker configuration through LoadFile (strict: an unknown key fails) and
// its policy through the engine, a schedules file through the scheduler's
// decoder — so a document that drifts from the code fails CI. A block that
// is not sandrun configuration (a Nomad variable, a Prometheus rule) says
// so with a <!-- docs-test: skip REASON --> line before it.
func TestDocsYAMLBlocksLoad(t *testing.T) {
	t.Parallel()
	blocks := yamlBlocks(t, "README.md", "docs/*.md", "docs/backends/*.md", "examples/*.md", "examples/*/*.md")
	if len(blocks) < 10 {
		t.Fatalf("found %d YAML blocks; the glob is wrong", len(blocks))
	}
	dir := t.TempDir()
	loaded := 0
	for _, b := range blocks {
		where := fmt.Sprintf("%s:%d", b.file, b.line)
		switch {
		case b.skip != "":
			continue
		case strings.HasPrefix(strings.TrimSpace(b.text), "schedules:") || strings.Contains(b.text, "\nschedules:"):
			if _, err := scheduler.DecodeFile([]byte(b.text)); err != nil {
				t.Errorf("%s: schedules block does not load: %v", where, err)
			}
		case workerKeys.MatchString(b.text):
			p := filepath.Join(dir, "block.yaml")
			if err := os.WriteFile(p, []byte(b.text), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadFile(p)
			if err != nil {
				t.Errorf("%s: config block does not load: %v", where, err)
				continue
			}
			for _, d := range cfg.Deprecations {
				t.Errorf("%s: config block in a deprecated form: %s", where, d)
			}
			if _, err := cfg.Policy.Engine(); err != nil {
				t.Errorf("%s: policy of the block: %v", where, err)
			}
			if _, err := cfg.Forwards(); err != nil {
				t.Errorf("%s: forward_env of the block: %v", where, err)
			}
		default:
			t.Errorf("%s: a YAML block that is neither a worker configuration nor a schedules file; mark it <!-- docs-test: skip REASON --> if it is not sandrun's", where)
			continue
		}
		loaded++
	}
	t.Logf("%d YAML blocks, %d loaded", len(blocks), loaded)
}

// TestExampleConfigFilesLoad: the example configuration files load.
func TestExampleConfigFilesLoad(t *testing.T) {
	t.Parallel()
	cfg, err := LoadFile("../../examples/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.Policy.Engine(); err != nil {
		t.Fatalf("examples/worker.yaml policy: %v", err)
	}
	data, err := os.ReadFile("../../examples/schedules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s, err := scheduler.DecodeFile(data); err != nil || len(s) == 0 {
		t.Fatalf("examples/schedules.yaml: %d schedules, %v", len(s), err)
	}
}

// TestExampleWorkerProfilesLoad: examples/worker.yaml shows a commented
// profile of every backend kind; uncommented, each loads strictly (an
// unknown or misplaced key fails) and constructs where construction needs
// no service (credentials and engines are Validate's business).
func TestExampleWorkerProfilesLoad(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../examples/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inBackends := false
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && line[0] != ' ' && line[0] != '#' {
			inBackends = strings.HasPrefix(line, "backends:")
		}
		if inBackends {
			if rest, ok := strings.CutPrefix(line, "  # "); ok {
				line = "  " + rest
			}
		}
		out = append(out, line)
	}
	p := filepath.Join(t.TempDir(), "worker.yaml")
	if err := os.WriteFile(p, []byte(strings.Join(out, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadFile(p)
	if err != nil {
		t.Fatalf("examples/worker.yaml with its profiles uncommented: %v", err)
	}
	for _, d := range cfg.Deprecations {
		t.Errorf("examples/worker.yaml with its profiles uncommented, a deprecated form: %s", d)
	}
	kinds := map[string]bool{}
	for name, bc := range cfg.Backends {
		kinds[bc.Kind] = true
		if bc.Kind == "local" || bc.Kind == "docker" {
			if _, err := NewBackend(name, bc, nil, slog.New(slog.DiscardHandler)); err != nil {
				t.Errorf("profile %s: %v", name, err)
			}
		}
	}
	for _, k := range strings.Split(knownKinds(), ", ") {
		if !kinds[k] {
			t.Errorf("examples/worker.yaml has no profile of kind %s", k)
		}
	}
}
