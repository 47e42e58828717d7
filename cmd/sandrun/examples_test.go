package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/internal/backends/singularity/apptainertest"
	"github.com/sandrun/sandrun/internal/natsutil"
)

// example is one command line a user is shown: a line of the README's
// quick start, or of a command's --help examples.
type example struct {
	where string // README.md:LINE or "sandrun CMD --help"
	line  string // as printed
}

// TestReadmeAndHelpExamples runs every command line of the README's
// quick start and of every --help example, in order, against a `sandrun
// dev` started as the README says, with no connection flag: the context
// dev saves is what the CLI uses. The substitutions are the ones the
// README announces: ID is the last job id a command printed, BATCH the
// last batch id, and "go run ./cmd/sandrun" (./examples/NAME) the built
// binary. A line whose comment says "exits N" must exit N, every other
// one 0. Servers the examples start (dev, server) run on free ports with
// their own data directories and are interrupted once up; they must then
// exit 0. Not parallel: it owns the configuration directory.
func TestReadmeAndHelpExamples(t *testing.T) {
	cfgDir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfgDir)
	for _, k := range []string{"SANDRUN_NATS_URL", "SANDRUN_NATS_CREDS", "SANDRUN_CONTEXT", "SANDRUN_CONFIG"} {
		t.Setenv(k, "")
		_ = os.Unsetenv(k)
	}
	bins := t.TempDir()
	for _, name := range []string{"fanout", "workspace"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bins, name), "../../examples/"+name).CombinedOutput(); err != nil {
			t.Fatalf("build examples/%s: %v\n%s", name, err, out)
		}
	}
	fake := apptainertest.Install(t) // `sandrun sif` examples
	path := strings.Join([]string{filepath.Dir(workerBin), bins, fake.Dir, os.Getenv("PATH")}, ":")
	work := workDir(t)

	readme := readmeExamples(t)
	help := helpExamples()
	if len(readme) < 20 || len(help) < 25 {
		t.Fatalf("found %d README lines and %d help examples: the parsers lost them", len(readme), len(help))
	}
	r := &exampleRunner{t: t, path: path, work: work, cfgDir: cfgDir}
	for _, ex := range append(readme, help...) {
		r.run(ex)
		// And the server the README started still answers.
		if r.devUp {
			if code, _, stderr := r.shell(r.work, "sandrun --context dev ls --limit 1", time.Minute); code != 0 {
				t.Fatalf("after %s (%s), sandrun dev no longer answers: %s", ex.where, ex.line, stderr)
			}
		}
	}
	if r.restore != nil {
		r.restore()
	}
	if r.ran < len(readme)+len(help) {
		t.Fatalf("ran %d of %d examples", r.ran, len(readme)+len(help))
	}
}

// workDir is a fresh directory holding the repository's examples/ data
// files, where the examples run (they write history.jsonl, creds, ...).
func workDir(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("../../examples", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "examples", e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return work
}

// readmeExamples are the lines of the sh blocks of the README's quick
// start.
func readmeExamples(t *testing.T) []example {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var out []example
	section, block := false, false
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			section = strings.HasPrefix(line, "## Quick start")
		case section && strings.HasPrefix(line, "```"):
			block = !block && strings.TrimPrefix(line, "```") == "sh"
		case section && block && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#"):
			out = append(out, example{where: fmt.Sprintf("README.md:%d", i+1), line: line})
		}
	}
	return out
}

// helpExamples are the example lines of every command's help, root first,
// in the order `sandrun help` lists the commands.
func helpExamples() []example {
	started := false
	var out []example
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		for line := range strings.Lines(cmd.Example) {
			if l := strings.TrimSpace(line); l != "" {
				out = append(out, example{where: cmd.CommandPath() + " --help", line: l})
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(cli{conn: &connFlags{}}.rootCmd(&started))
	return out
}

var (
	ulidLine   = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{26}$`)
	batchLine  = regexp.MustCompile(`^b[0-9a-f]{16}$`)
	exitsN     = regexp.MustCompile(`exits (\d+)`)
	idWord     = regexp.MustCompile(`\bID\b`)
	batchWord  = regexp.MustCompile(`\bBATCH\b`)
	goRunCLI   = regexp.MustCompile(`go run \./cmd/sandrun\b`)
	goRunOther = regexp.MustCompile(`go run \./examples/([a-z]+)\b`)
)

type exampleRunner struct {
	t                  *testing.T
	path, work, cfgDir string
	lastID, lastBatch  string
	devUp              bool
	where              string
	restore            func()
	ran                int
}

func (r *exampleRunner) run(ex example) {
	t := r.t
	t.Helper()
	line := goRunCLI.ReplaceAllString(ex.line, "sandrun")
	line = goRunOther.ReplaceAllString(line, "$1")
	line = idWord.ReplaceAllString(line, r.lastID)
	line = batchWord.ReplaceAllString(line, r.lastBatch)
	want := 0
	if m := exitsN.FindStringSubmatch(ex.line); m != nil {
		want, _ = strconv.Atoi(m[1])
	}
	words := strings.Fields(line)
	r.ran++
	if len(words) >= 2 && words[0] == "sandrun" && (words[1] == "dev" || words[1] == "server") && !strings.Contains(line, "--demo") {
		r.daemon(ex, line)
		return
	}
	demo := strings.Contains(line, "--demo")
	if demo {
		line = withFlags(line, "--port", "-1")
	}
	if !r.devUp && !demo {
		t.Fatalf("%s: %q runs before the README's `sandrun dev` line", ex.where, ex.line)
	}
	// The configuration directory is put back after each command's
	// examples: `context use prod` must not move the next ones off dev.
	group := ex.where
	if strings.HasPrefix(group, "README") {
		group = "README" // its lines build on each other
	}
	if group != r.where {
		if r.restore != nil {
			r.restore()
		}
		r.where, r.restore = group, nil
		if group != "README" {
			r.restore = snapshot(t, r.cfgDir)
		}
	}
	dir := r.work
	if demo {
		dir = workDir(t) // its own server, on its own data directory
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, stdout, stderr := r.shell(dir, line, 3*time.Minute)
		// A job is queued until a worker claims it: only then has it a
		// record to show. Give the claim a moment, as a user would.
		if code != want && strings.Contains(stderr, "no record yet") && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if code != want {
			t.Fatalf("%s: %s\nexit %d, want %d\nstdout:\n%s\nstderr:\n%s", ex.where, ex.line, code, want, stdout, stderr)
		}
		for l := range strings.Lines(stdout) {
			l = strings.TrimSpace(l)
			switch {
			case ulidLine.MatchString(l):
				r.lastID = l
			case batchLine.MatchString(l):
				r.lastBatch = l
			}
		}
		return
	}
}

// shell runs line with bash in dir, as a user would.
func (r *exampleRunner) shell(dir, line string, timeout time.Duration) (int, string, string) {
	cmd := exec.Command("bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+r.path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		if err := <-done; err == nil {
			r.t.Logf("%q ended as it was killed", line)
		}
		r.t.Fatalf("%q did not end in %s:\n%s\n%s", line, timeout, stdout.String(), stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	if err != nil {
		r.t.Fatal(err)
	}
	return 0, stdout.String(), stderr.String()
}

// daemon runs a server example. The README's `sandrun dev` keeps running
// for the lines after it (on a free port instead of 4222, which another
// server of the machine may hold); the help's servers run on free ports,
// in their own directory, without saving a context, until they are up,
// and must then stop cleanly on an interrupt.
func (r *exampleRunner) daemon(ex example, line string) {
	t := r.t
	port, err := natsutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	line = withFlags(line, "--port", strconv.Itoa(port))
	dir := r.work
	keep := strings.HasPrefix(ex.where, "README") && !r.devUp
	if !keep {
		dir = workDir(t)
		line = withFlags(line, "--save-context", `""`)
		if strings.Contains(line, "--cluster-port") {
			cport, err := natsutil.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			line = withFlags(line, "--cluster-port", strconv.Itoa(cport))
		}
	}
	cmd := exec.Command("bash", "-c", "exec "+line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+r.path)
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %s: exit after an interrupt: %v\n%s", ex.where, ex.line, err, out.String())
			}
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("%s: %s: still running 60 s after an interrupt\n%s", ex.where, ex.line, out.String())
		}
	}
	up := time.Now().Add(90 * time.Second)
	for !strings.Contains(out.String(), "NATS at ") {
		select {
		case err := <-done:
			t.Fatalf("%s: %s: exited before it was up: %v\n%s", ex.where, ex.line, err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(up) {
			_ = cmd.Process.Kill()
			t.Fatalf("%s: %s: not up in 90 s\n%s", ex.where, ex.line, out.String())
		}
	}
	if !keep {
		stop()
		return
	}
	t.Cleanup(stop)
	r.devUp = true
	// The worker makes the layout: wait until the CLI, with no flag,
	// reaches it through the context dev saved.
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _, stderr := r.shell(r.work, "sandrun ls", time.Minute)
		if code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the CLI with no flag never reached %s: %s\n%s", ex.line, stderr, out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "context dev saved and current") {
		t.Fatalf("sandrun dev did not save its context:\n%s", out.String())
	}
}

// withFlags inserts flags after the command words of line, before its
// comment or any -- (flags anywhere: they need not come last).
func withFlags(line string, flags ...string) string {
	cut := len(line)
	for _, sep := range []string{" #", " -- "} {
		if i := strings.Index(line, sep); i >= 0 && i < cut {
			cut = i
		}
	}
	return strings.TrimRight(line[:cut], " ") + " " + strings.Join(flags, " ") + line[cut:]
}

// snapshot records the files of dir and returns what puts them back.
func snapshot(t *testing.T, dir string) func() {
	t.Helper()
	saved := map[string][]byte{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, err := os.ReadFile(p); err == nil {
				saved[p] = data
			}
		}
		return nil
	})
	return func() {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if _, ok := saved[p]; !ok {
					_ = os.Remove(p)
				}
			}
			return nil
		})
		for p, data := range saved {
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// lockedBuffer is a buffer a child process writes while the test reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
