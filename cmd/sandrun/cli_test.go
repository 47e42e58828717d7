package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// sandrun runs the CLI in-process and returns its exit code and output.
func sandrun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli{stdout: &out, stderr: &errb, stdin: strings.NewReader("")}.run(args)
	return code, out.String(), errb.String()
}

func setup(t *testing.T) (string, *jobs.Store) {
	t.Helper()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	w := sandruntest.StartWorker(t, st, sandruntest.FastConfig())
	// Registered too, not only started: submit's placement warning reads
	// the registry, and a test that submits at once must find it there.
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := st.Workers.Get(ctx, w.Name()); err != nil {
			return false, fmt.Sprintf("worker %s not registered: %v", w.Name(), err)
		}
		return true, ""
	})
	return s.ClientURL(), st
}

func TestSubmitWaitExitCodes(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	cases := []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"--", "echo", "hello"}, 0, "hello\n"},
		{[]string{"--max-attempts", "1", "--", "echo out; exit 3"}, 3, "out\n"},
		{[]string{"--timeout", "1s", "--max-attempts", "1", "--", "sleep 30"}, 124, ""},
		{[]string{"--env", "WHO=world", "--", `echo "hi $WHO"`}, 0, "hi world\n"},
		// Several words each arrive as given, as with docker run.
		{[]string{"--max-attempts", "1", "--", "sh", "-c", "echo hi; exit 3"}, 3, "hi\n"},
		{[]string{"--", "printf", "%s|", "a b", "$HOME", "it's", "--flag"}, 0, "a b|$HOME|it's|--flag|"},
	}
	for _, tc := range cases {
		args := append([]string{"submit", "--nats-url", url, "--wait"}, tc.args...)
		code, out, errOut := sandrun(t, args...)
		if code != tc.code || out != tc.stdout {
			t.Errorf("%v: exit %d stdout %q (stderr %q), want %d %q", tc.args, code, out, errOut, tc.code, tc.stdout)
		}
	}
}

func TestSubmitBadInputNamesTheFieldAndPublishesNothing(t *testing.T) {
	t.Parallel()
	url, st := setup(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--timeout", "soon", "--", "true"}, "--timeout"},
		{[]string{"--queue", "Bad Queue", "--", "true"}, "queue"},
		{[]string{"--env", "NOEQUALS", "--", "true"}, "--env"},
		{[]string{"--approval", "yolo", "--", "true"}, "approval"},
		{[]string{"--origin", "martian", "--", "true"}, "origin"},
		{[]string{}, "command"},
	}
	for _, tc := range cases {
		code, _, errOut := sandrun(t, append([]string{"submit", "--nats-url", url}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d stderr %q, want an error naming %q", tc.args, code, errOut, tc.want)
		}
	}
	ctx := sandruntest.Ctx(t)
	s, err := st.JS.Stream(ctx, jobs.StreamJobs)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.FirstSeq > 1 || info.State.Msgs > 0 {
		t.Fatalf("invalid submits published %d messages", info.State.LastSeq)
	}
}

func TestStatusLsLogsCancelDLQ(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A value on the command line is refused, naming the flag.
	if code, _, errOut := sandrun(t, "submit", "--nats-url", url, "--secret-env", "TOKEN=hunter2", "--", "true"); code != 2 || !strings.Contains(errOut, "visible to every user") || strings.Contains(errOut, "hunter2") {
		t.Fatalf("secret on argv: %d %q", code, errOut)
	}
	code, out, errOut := sandrun(t, "submit", "--nats-url", url, "--secret-env", "TOKEN=@"+tokenFile, "--", "echo line1; echo line2 >&2")
	if code != 0 {
		t.Fatalf("submit: %d %s", code, errOut)
	}
	id := strings.TrimSpace(out)
	c := sandruntest.Client(mustStore(t, url))
	sandruntest.WaitResult(t, c, id, 30*time.Second)

	code, out, _ = sandrun(t, "status", "--nats-url", url, "--json", id)
	if code != 0 {
		t.Fatalf("status: %d", code)
	}
	var st struct {
		ID     string       `json:"id"`
		State  string       `json:"state"`
		Spec   jobs.Spec    `json:"spec"`
		Result *jobs.Result `json:"result"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json is not JSON: %v\n%s", err, out)
	}
	if st.ID != id || st.State != "succeeded" || st.Result == nil || st.Result.ExitCode != 0 {
		t.Fatalf("status: %+v", st)
	}
	if strings.Contains(out, "hunter2") || st.Spec.Env["TOKEN"] != jobs.Redacted {
		t.Fatalf("secret env leaked into status: %s", out)
	}
	code, out, errOut = sandrun(t, "logs", "--nats-url", url, id)
	if code != 0 || out != "line1\n" || errOut != "line2\n" {
		t.Fatalf("logs: %d %q %q", code, out, errOut)
	}
	code, out, _ = sandrun(t, "ls", "--nats-url", url, "--state", "succeeded")
	if code != 0 || !strings.Contains(out, id) {
		t.Fatalf("ls: %d %q", code, out)
	}
	if code, _, errOut = sandrun(t, "ls", "--nats-url", url, "--state", "happy"); code != 2 || !strings.Contains(errOut, "state") {
		t.Fatalf("ls bad state: %d %q", code, errOut)
	}
	// cancel of a finished job is an error; of a job queued where no
	// worker serves, a request the claiming worker will honour.
	if code, _, _ = sandrun(t, "cancel", "--nats-url", url, id); code == 0 {
		t.Fatal("cancel of a finished job succeeded")
	}
	_, out, _ = sandrun(t, "submit", "--nats-url", url, "--queue", "nobody", "--", "true")
	queued := strings.TrimSpace(out)
	if code, out, _ = sandrun(t, "cancel", "--nats-url", url, queued); code != 0 || !strings.Contains(out, "cancel requested") {
		t.Fatalf("cancel queued: %d %q", code, out)
	}
	// dlq: a dead job is listed and can be retried.
	_, out, _ = sandrun(t, "submit", "--nats-url", url, "--max-attempts", "2", "--", "exit 4")
	dead := strings.TrimSpace(out)
	sandruntest.Eventually(t, 30*time.Second, func() (bool, string) {
		_, out, _ = sandrun(t, "dlq", "ls", "--nats-url", url, "--json")
		return strings.Contains(out, dead), "dead job not in dlq ls: " + out
	})
	if code, out, errOut = sandrun(t, "dlq", "retry", "--nats-url", url, dead); code != 0 {
		t.Fatalf("dlq retry: %d %q %q", code, out, errOut)
	}
}

func TestUnknownCommandAndJobErrors(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	if code, _, errOut := sandrun(t, "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errOut)
	}
	if code, _, errOut := sandrun(t, "status", "--nats-url", url, "nope"); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("status of unknown job: %d %q", code, errOut)
	}
}

func TestDevDemo(t *testing.T) {
	t.Parallel()
	code, out, errOut := sandrun(t, "dev", "--demo", "--data", t.TempDir(), "--port", "-1")
	if code != 0 || !strings.Contains(out, "all demo jobs ended as expected") {
		t.Fatalf("dev --demo: %d\n%s\n%s", code, out, errOut)
	}
}

// TestDevDemoOnCluster: `dev --cluster 3` runs the demo on three embedded
// servers with every stream replicated to all three (each node's data
// directory holds the JOBS stream and the jobstate bucket).
func TestDevDemoOnCluster(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := sandrun(t, "dev", "--demo", "--cluster", "3", "--data", dir, "--port", "-1")
	if code != 0 || !strings.Contains(out, "all demo jobs ended as expected") {
		t.Fatalf("dev --demo --cluster 3: %d\n%s\n%s", code, out, errOut)
	}
	for i := 1; i <= 3; i++ {
		for _, stream := range []string{jobs.StreamJobs, "KV_" + jobs.BucketState} {
			// The account's directory is named by its public key (A…).
			p := filepath.Join(dir, fmt.Sprintf("node-%d", i), "jetstream", "A*", "streams", stream)
			if m, _ := filepath.Glob(p); len(m) != 1 {
				t.Errorf("node %d has no replica of %s (%s)", i, stream, p)
			}
		}
	}
}

func mustStore(t *testing.T, url string) *jobs.Store {
	return sandruntest.Store(t, url)
}

// TestSubmitWarnsWhenNoWorkerCanRunIt: submit accepts the job but says on
// stderr when no live worker serves its queue or has its backend profile.
func TestSubmitWarnsWhenNoWorkerCanRunIt(t *testing.T) {
	t.Parallel()
	url, st := setup(t)
	sandruntest.Eventually(t, 10*time.Second, func() (bool, string) {
		ws, err := sandruntest.Client(st).Workers(t.Context())
		return err == nil && len(ws) == 1 && ws[0].Profiles["local"].Kind == "local", fmt.Sprintf("worker not registered: %+v %v", ws, err)
	})
	for _, tc := range []struct {
		args []string
		warn string
	}{
		{[]string{"--", "true"}, ""},
		{[]string{"--queue", "gpu", "--", "true"}, `warning: no live worker serves queue "gpu"`},
		{[]string{"--backend", "cloud", "--", "true"}, `warning: no live worker of queue "default" has backend profile "cloud"`},
	} {
		code, out, errOut := sandrun(t, append([]string{"submit", "--nats-url", url}, tc.args...)...)
		if code != 0 || strings.TrimSpace(out) == "" {
			t.Fatalf("%v: exit %d, stdout %q: the job is accepted either way", tc.args, code, out)
		}
		if (tc.warn == "") != !strings.Contains(errOut, "warning") || !strings.Contains(errOut, tc.warn) {
			t.Fatalf("%v: stderr %q, want %q", tc.args, errOut, tc.warn)
		}
	}
}

// TestCommandLine: one word is a script as written; several are quoted
// for sh one by one; a word sh cannot carry is an error naming it.
func TestCommandLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"echo hi; exit 3"}, "echo hi; exit 3"},
		{[]string{"sh", "-c", "echo hi; exit 3"}, "sh -c 'echo hi; exit 3'"},
		{[]string{"echo", "$HOME", "a'b"}, `echo '$HOME' "a'b"`},
		{nil, ""},
	} {
		got, err := commandLine(tc.words)
		if err != nil || got != tc.want {
			t.Errorf("commandLine(%q) = %q, %v; want %q", tc.words, got, err, tc.want)
		}
	}
	if _, err := commandLine([]string{"echo", "a\x00b"}); err == nil || !strings.Contains(err.Error(), "word 2") {
		t.Errorf("a NUL byte: err = %v, want one naming word 2", err)
	}
	// policy check judges the words as the job would run them.
	if code, out, _ := sandrun(t, "policy", "check", "--", "echo", "rm -rf /"); code != 0 {
		t.Errorf("policy check -- echo 'rm -rf /': exit %d, want 0 (an argument, not a command):\n%s", code, out)
	}
}

// TestWorkspaceCommands: submit --workspace twice, workspace ls shows it,
// workspace rm removes its storage (the next job finds it empty), and a
// name never used is an error.
func TestWorkspaceCommands(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	reg := backends.NewRegistry()
	lb, err := local.New(local.Config{WorkspaceRoot: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("local", lb); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorkerWith(t, st, sandruntest.FastConfig(), reg)
	url := s.ClientURL()
	for _, step := range []struct{ cmd, out string }{{"echo kept > f", ""}, {"cat f", "kept\n"}} {
		if code, out, errOut := sandrun(t, "submit", "--nats-url", url, "--wait", "--workspace", "w1", "--", step.cmd); code != 0 || out != step.out {
			t.Fatalf("submit --workspace w1 -- %s: %d %q %q", step.cmd, code, out, errOut)
		}
	}
	if code, out, _ := sandrun(t, "workspace", "ls", "--nats-url", url); code != 0 || !strings.Contains(out, "WORKSPACE") || !strings.Contains(out, "w1 ") {
		t.Fatalf("workspace ls: %d\n%s", code, out)
	}
	if code, out, errOut := sandrun(t, "workspace", "rm", "--nats-url", url, "w1"); code != 0 || !strings.Contains(out, "workspace w1 removed") {
		t.Fatalf("workspace rm: %d %q %q", code, out, errOut)
	}
	if code, out, _ := sandrun(t, "submit", "--nats-url", url, "--wait", "--workspace", "w1", "--", "ls"); code != 0 || out != "" {
		t.Fatalf("after rm the workspace starts empty: %d %q", code, out)
	}
	if code, _, errOut := sandrun(t, "workspace", "rm", "--nats-url", url, "never-used"); code == 0 || !strings.Contains(errOut, "no such workspace") {
		t.Fatalf("workspace rm of an unknown name: %d %q", code, errOut)
	}
}
