package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// Flags go anywhere on the line, before or after the operands, and every
// read command prints table, json and yaml (--json kept as an alias).
func TestFlagsAnywhereAndOutputFormats(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	code, id, errOut := sandrun(t, "submit", "--nats-url", url, "--", "echo", "-n", "--flag-like")
	if code != 0 {
		t.Fatalf("submit: %d %s", code, errOut)
	}
	id = strings.TrimSpace(id)
	if code, out, errOut := sandrun(t, "logs", id, "-f", "--nats-url", url); code != 0 || out != "--flag-like" {
		t.Fatalf("logs ID -f: %d %q %q; want the words after -- passed through verbatim", code, out, errOut)
	}
	if code, out, errOut := sandrun(t, "logs", "-f", id, "--nats-url", url); code != 0 || out != "--flag-like" {
		t.Fatalf("logs -f ID: %d %q %q", code, out, errOut)
	}
	for _, args := range [][]string{
		{"status", id, "-o", "json", "--nats-url", url},
		{"status", "-o", "json", id, "--nats-url", url},
		{"--nats-url", url, "status", "--json", id},
		{"status", id, "--output=json", "--nats-url=" + url},
	} {
		code, out, errOut := sandrun(t, args...)
		var st statusOut
		if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.ID != id || st.State != jobs.StateSucceeded {
			t.Errorf("%v: %d %q %q", args, code, out, errOut)
		}
	}
	code, out, errOut := sandrun(t, "status", id, "-o", "yaml", "--nats-url", url)
	var y struct {
		ID    string `yaml:"id"`
		State string `yaml:"state"`
	}
	if code != 0 || yaml.Unmarshal([]byte(out), &y) != nil || y.ID != id || y.State != "succeeded" {
		t.Fatalf("status -o yaml: %d %q %q", code, out, errOut)
	}
	if !strings.HasPrefix(out, "id: "+id) {
		t.Errorf("yaml keeps the JSON shape's order, got:\n%s", out)
	}
	code, out, _ = sandrun(t, "ls", "-o", "json", "--nats-url", url)
	var list []statusOut
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || !slices.ContainsFunc(list, func(s statusOut) bool { return s.ID == id }) {
		t.Fatalf("ls -o json: %d %q", code, out)
	}
	if code, _, errOut := sandrun(t, "ls", "-o", "xml", "--nats-url", url); code != 2 || !strings.Contains(errOut, "-o/--output") {
		t.Errorf("ls -o xml: %d %q, want a usage error naming the flag", code, errOut)
	}
}

// Out-of-range values are errors that name the flag, before anything is
// sent: --max-attempts 0 is not taken as the default.
func TestOutOfRangeFlagsNameTheFlag(t *testing.T) {
	t.Parallel()
	url, st := setup(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"submit", "--max-attempts", "0", "--", "true"}, "--max-attempts"},
		{[]string{"submit", "--max-attempts", "-2", "--", "true"}, "--max-attempts"},
		{[]string{"submit", "--max-attempts", "101", "--", "true"}, "--max-attempts"},
		{[]string{"submit", "--timeout", "0s", "--", "true"}, "--timeout"},
		{[]string{"submit", "--timeout", "-5m", "--", "true"}, "--timeout"},
		{[]string{"submit", "--max-attempts", "many", "--", "true"}, "--max-attempts"},
		{[]string{"batch", "submit", "--max-attempts", "0", "x.jsonl"}, "--max-attempts"},
		{[]string{"batch", "submit", "--in-flight", "0", "x.jsonl"}, "--in-flight"},
		{[]string{"batch", "submit", "--max-parallel", "-1", "x.jsonl"}, "--max-parallel"},
		{[]string{"ls", "--limit", "0"}, "--limit"},
		{[]string{"sif", "ls", "--scratch", t.TempDir(), "--max-age", "-1h"}, "--max-age"},
		{[]string{"dev", "--slots", "0"}, "--slots"},
		{[]string{"status", "-o", "yaml", "--json", "x"}, "--json"},
	}
	for _, tc := range cases {
		code, _, errOut := sandrun(t, append(tc.args, "--nats-url", url)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want exit 2 naming %s", tc.args, code, errOut, tc.want)
		}
	}
	if q := sandruntest.Queued(t, st); len(q) != 0 {
		t.Fatalf("refused submissions published %d job(s)", len(q))
	}
}

// --help exits 0 and prints to stdout on every command; an unknown
// command or flag exits 2.
func TestHelpEverywhere(t *testing.T) {
	t.Parallel()
	var paths [][]string
	var walk func(cmd *cobra.Command, path []string)
	walk = func(cmd *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range cmd.Commands() {
			walk(sub, append(slices.Clone(path), sub.Name()))
		}
	}
	started := false
	walk(cli{conn: &connFlags{}}.rootCmd(&started), nil)
	if len(paths) < 40 {
		t.Fatalf("walked %d commands, want the whole tree", len(paths))
	}
	for _, p := range paths {
		if slices.Contains(p, "worker") || slices.Contains(p, "scheduler") {
			continue // the daemons' own flag sets; TestDaemonHelp
		}
		code, out, errOut := sandrun(t, append(p, "--help")...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("sandrun %s --help: exit %d, stdout %q stderr %q", strings.Join(p, " "), code, out, errOut)
		}
	}
	for _, args := range [][]string{{"nope"}, {"status", "--nope", "x"}, {"batch", "frobnicate", "x"}, {"--version=2"}} {
		if code, _, errOut := sandrun(t, args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d %q, want 2 with a message", args, code, errOut)
		}
	}
}

func TestDaemonHelp(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"worker", "scheduler"} {
		out, err := exec.Command(workerBin, d, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "-slots") && d == "worker" {
			t.Errorf("sandrun %s --help: %v\n%s", d, err, out)
		}
	}
}

// The generated bash completion is valid bash, and completing in a real
// bash gives commands, flags' values and the server's job ids.
func TestCompletionBash(t *testing.T) {
	t.Parallel()
	const bashCompletion = "/usr/share/bash-completion/bash_completion"
	if _, err := os.Stat(bashCompletion); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: scripts/test.sh installs bash-completion", err)
		}
		t.Skipf("bash-completion is not installed: %v", err)
	}
	code, script, errOut := sandrun(t, "completion", "bash")
	if code != 0 {
		t.Fatalf("completion bash: %d %s", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "sandrun.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("bash", "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	for _, shell := range []string{"zsh", "fish"} {
		if code, out, _ := sandrun(t, "completion", shell); code != 0 || !strings.Contains(out, "sandrun") {
			t.Errorf("completion %s: %d", shell, code)
		}
	}
	url, _ := setup(t)
	_, id, _ := sandrun(t, "submit", "--nats-url", url, "--", "true")
	id = strings.TrimSpace(id)
	complete := func(line string) []string {
		words := strings.Fields(line)
		if strings.HasSuffix(line, " ") {
			words = append(words, "")
		}
		prog := fmt.Sprintf(`source %q
source %q
COMP_LINE=%q; COMP_POINT=${#COMP_LINE}
COMP_WORDS=(%s); COMP_CWORD=%d
__start_sandrun
printf '%%s\n' "${COMPREPLY[@]}"`, bashCompletion, file, line, quoteWords(words), len(words)-1)
		cmd := exec.Command("bash", "-c", prog)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(workerBin)+":"+os.Getenv("PATH"), "SANDRUN_NATS_URL="+url)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("complete %q: %v\n%s", line, err, stderr.String())
		}
		return strings.Fields(string(out))
	}
	if got := complete("sandrun st"); !slices.Equal(got, []string{"status"}) {
		t.Errorf("sandrun st<TAB>: %q, want [status]", got)
	}
	if got := complete("sandrun status -o "); !slices.Equal(got, []string{"table", "json", "yaml"}) {
		t.Errorf("sandrun status -o <TAB>: %q", got)
	}
	if got := complete("sandrun status "); !slices.Contains(got, id) {
		t.Errorf("sandrun status <TAB>: %q, want the job id %s among them", got, id)
	}
}

func quoteWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	return strings.Join(q, " ")
}

// `sandrun version` and --version print the module version and the
// commit of a binary built from this checkout.
func TestVersion(t *testing.T) {
	t.Parallel()
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git rev-parse HEAD: %v (CI runs on a clone)", err)
		}
		t.Skipf("not a git checkout: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "sandrun")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	commit := strings.TrimSpace(string(head))
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var v buildVersion
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	if v.Commit != commit || v.Version == "" || v.Version == "(unknown)" || !strings.HasPrefix(v.Go, "go1.") {
		t.Fatalf("version: %+v, want commit %s and a module version", v, commit)
	}
	// A build from a checkout is a pseudo-version naming the commit (or
	// a tag), never empty.
	if v.Version != "(devel)" && !strings.HasPrefix(v.Version, "v") {
		t.Errorf("module version %q", v.Version)
	}
	line, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.Contains(string(line), commit) || !strings.Contains(string(line), v.Version) {
		t.Fatalf("--version: %q %v", line, err)
	}
}

// Tables fit an 80-column terminal whatever they hold.
func TestTablesFitEightyColumns(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	long := "echo " + strings.Repeat("a-very-long-argument ", 10)
	if code, _, errOut := sandrun(t, "submit", "--nats-url", url, "--wait", "--", long); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := sandrun(t, "submit", "--nats-url", url, "--id", "fit-1", "--", long); code != 0 {
		t.Fatal(errOut)
	}
	for _, args := range [][]string{
		{"ls"}, {"status", "fit-1"}, {"dlq", "ls"}, {"schedules", "ls"}, {"policy", "rules"}, {"workspace", "ls"},
		{"context", "ls"}, {"version"},
	} {
		code, out, errOut := sandrun(t, append(args, "--nats-url", url)...)
		if code != 0 {
			t.Errorf("%v: %d %s", args, code, errOut)
			continue
		}
		for line := range strings.Lines(out) {
			if n := utf8.RuneCountInString(strings.TrimSuffix(line, "\n")); n > 80 {
				t.Errorf("%v: a line of %d columns: %q", args, n, line)
			}
		}
	}
}

// Contexts: two servers save one each; the CLI connects to the one
// chosen by --context, $SANDRUN_CONTEXT or `context use`, and to the
// current one with no flag at all. Not parallel: it owns the
// configuration directory and the environment.
func TestContextsChooseTheServer(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("SANDRUN_NATS_URL", "")
	_ = os.Unsetenv("SANDRUN_NATS_URL")
	stores := map[string]*jobs.Store{}
	urls := map[string]string{}
	for _, name := range []string{"alpha", "beta"} {
		port, err := natsutil.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		data := t.TempDir()
		url, _ := startDaemon(t, "server", "--data", data, "--port", fmt.Sprint(port), "--save-context", name)
		urls[name] = url
		// Each deployment's layout, made by its admin (as a worker would).
		stores[name] = sandruntest.StoreAs(t, url, filepath.Join(data, "auth", "admin.creds"), jobs.LayoutConfig{})
	}
	code, out, errOut := sandrun(t, "context", "ls", "-o", "json")
	var rows []struct {
		Name    string `json:"name"`
		URL     string `json:"url"`
		Creds   string `json:"creds"`
		Current bool   `json:"current"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 2 {
		t.Fatalf("context ls: %d %q %q", code, out, errOut)
	}
	if !rows[0].Current || rows[1].Current || rows[0].URL != urls["alpha"] || rows[1].Creds == "" {
		t.Fatalf("the first server's context is current, each names its server and credentials: %+v", rows)
	}
	submit := func(id string, env []string, args ...string) {
		t.Helper()
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		code, out, errOut := sandrun(t, append(args, "submit", "--id", id, "--", "true")...)
		if code != 0 || strings.TrimSpace(out) != id {
			t.Fatalf("submit %s %v: %d %q %q", id, args, code, out, errOut)
		}
		for _, kv := range env {
			k, _, _ := strings.Cut(kv, "=")
			_ = os.Unsetenv(k)
		}
	}
	submit("to-current", nil)
	submit("to-beta-by-flag", nil, "--context", "beta")
	submit("to-beta-by-env", []string{"SANDRUN_CONTEXT=beta"})
	if code, _, errOut := sandrun(t, "context", "use", "beta"); code != 0 {
		t.Fatal(errOut)
	}
	submit("to-beta-by-use", nil)
	submit("to-alpha-by-flag", nil, "--context", "alpha")
	want := map[string][]string{
		"alpha": {"to-current", "to-alpha-by-flag"},
		"beta":  {"to-beta-by-flag", "to-beta-by-env", "to-beta-by-use"},
	}
	for name, ids := range want {
		var got []string
		for _, s := range sandruntest.Queued(t, stores[name]) {
			got = append(got, s.ID)
		}
		if !slices.Equal(got, ids) {
			t.Errorf("server %s holds %v, want %v", name, got, ids)
		}
	}
	// A context that does not exist is an error naming how it was chosen.
	if code, _, errOut := sandrun(t, "--context", "gamma", "ls"); code != 1 || !strings.Contains(errOut, `no context "gamma"`) {
		t.Errorf("--context gamma: %d %q", code, errOut)
	}
	// add, show, rm.
	if code, _, errOut := sandrun(t, "context", "add", "manual", "--nats-url", urls["alpha"], "--queue", "gpu"); code != 0 {
		t.Fatal(errOut)
	}
	if code, out, _ := sandrun(t, "context", "show", "manual", "-o", "json"); code != 0 || !strings.Contains(out, `"queue": "gpu"`) {
		t.Errorf("context show: %d %q", code, out)
	}
	if code, _, errOut := sandrun(t, "context", "rm", "beta"); code != 0 {
		t.Fatal(errOut)
	}
	if code, out, _ := sandrun(t, "context", "ls"); code != 0 || strings.Contains(out, "beta") || strings.Contains(out, "*") {
		t.Errorf("after rm of the current context: %q", out)
	}
	if code, _, errOut := sandrun(t, "context", "add", "Bad/Name", "--nats-url", "nats://x:1"); code != 2 || !strings.Contains(errOut, "context name") {
		t.Errorf("a bad context name: %d %q", code, errOut)
	}
}

// A job for a profile no live worker has waits in its queue, as the
// warning says, while the queue's other jobs run; a worker with the
// profile then runs it.
func TestUnservedProfileWaitsForItsWorker(t *testing.T) {
	t.Parallel()
	url, st := setup(t) // a worker with the profile "local" only
	code, out, errOut := sandrun(t, "submit", "--nats-url", url, "--backend", "gpu", "--", "echo ran on gpu")
	if code != 0 || !strings.Contains(errOut, `no live worker of queue "default" has backend profile "gpu"`) ||
		!strings.Contains(errOut, "waits in its queue until one") {
		t.Fatalf("submit --backend gpu: %d %q", code, errOut)
	}
	id := strings.TrimSpace(out)
	// The queue's local jobs run meanwhile: the worker has pulled past
	// the gpu job and left it.
	for i := range 3 {
		if code, out, errOut := sandrun(t, "submit", "--nats-url", url, "--wait", "--", fmt.Sprintf("echo local %d", i)); code != 0 || out != fmt.Sprintf("local %d\n", i) {
			t.Fatalf("a local job behind it: %d %q %q", code, out, errOut)
		}
	}
	if q := sandruntest.Queued(t, st); len(q) != 1 || q[0].ID != id {
		t.Fatalf("queued: %+v, want only the gpu job", q)
	}
	if code, _, errOut := sandrun(t, "status", "--nats-url", url, id); code != 1 || !strings.Contains(errOut, "no record yet: queued") {
		t.Fatalf("status of the waiting job: %d %q", code, errOut)
	}
	reg := backends.NewRegistry()
	lb, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("gpu", lb); err != nil {
		t.Fatal(err)
	}
	cfg := sandruntest.FastConfig()
	cfg.Name = "gpu-worker"
	sandruntest.StartWorkerWith(t, st, cfg, reg)
	r := sandruntest.WaitResult(t, sandruntest.Client(st), id, 30*time.Second)
	if r.State != jobs.StateSucceeded || r.Worker != "gpu-worker" || r.Stdout.Head != "ran on gpu\n" {
		t.Fatalf("the gpu job: %+v", r)
	}
}

// A job asking for what its profile cannot do fails at once, with a
// permanent error naming the option and the profile; it is never run
// without it (the local backend used to run an --image job on the host).
func TestUnsupportedOptionsFailNamingThem(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--image", "alpine:3"}, "container.image: profile local (kind local) does not support it"},
		{[]string{"--session", "s1"}, "session: profile local (kind local) does not support it"},
	} {
		args := append(append([]string{"submit", "--nats-url", url, "--wait"}, tc.args...), "--", "echo ran on the host")
		code, out, errOut := sandrun(t, args...)
		if code == 0 || out != "" || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, " failed ") {
			t.Fatalf("%v: exit %d stdout %q stderr %q, want a failure naming %q", tc.args, code, out, errOut, tc.want)
		}
		id := strings.Fields(strings.SplitN(errOut, "sandrun: job ", 2)[1])[0]
		_, js, _ := sandrun(t, "status", id, "-o", "json", "--nats-url", url)
		var st statusOut
		if err := json.Unmarshal([]byte(js), &st); err != nil || st.Attempt != 1 || st.State != jobs.StateFailed {
			t.Fatalf("%v: %+v %v, want failed on its first attempt, not retried", tc.args, st, err)
		}
	}
}

// Every duration flag of the daemons, below what it can mean, stops the
// daemon before it starts anything, naming the flag (a negative
// --reaper-scan used to panic in time.NewTicker once connected).
func TestDaemonDurationFlagsNameTheFlag(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"worker", "scheduler"} {
		for _, flag := range []string{"lease-ttl", "drain-timeout", "kill-grace", "election-ttl", "reaper-scan", "workspace-idle", "pull-wait"} {
			cmd := exec.Command(workerBin, d, "--nats-url", "nats://127.0.0.1:1", "--"+flag+"=-1s")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "(--"+flag+")") {
				t.Errorf("sandrun %s --%s=-1s: %v, stderr %q; want exit 2 naming --%s", d, flag, err, stderr.String(), flag)
			}
		}
	}
}

// TestLogsFollowWaitsForClaim: a job no worker has claimed yet has no
// record; logs -f waits for it (the record appears with the claim) and
// prints its output, instead of "job not found".
func TestLogsFollowWaitsForClaim(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	url := s.ClientURL()
	code, id, errOut := sandrun(t, "submit", "--nats-url", url, "--", "echo", "claimed-later")
	if code != 0 {
		t.Fatalf("submit with no worker: %d %s", code, errOut)
	}
	id = strings.TrimSpace(id)
	type result struct {
		code        int
		out, errOut string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := sandrun(t, "logs", "-f", id, "--nats-url", url)
		done <- result{code, out, errOut}
	}()
	select {
	case r := <-done:
		t.Fatalf("logs -f returned before any worker ran the job: %d %q %q", r.code, r.out, r.errOut)
	case <-time.After(500 * time.Millisecond):
	}
	sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	select {
	case r := <-done:
		if r.code != 0 || r.out != "claimed-later\n" || !strings.Contains(r.errOut, "not claimed yet") {
			t.Fatalf("logs -f: %d %q %q; want the job's output once a worker claimed it", r.code, r.out, r.errOut)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("logs -f did not return after a worker ran the job")
	}
}
