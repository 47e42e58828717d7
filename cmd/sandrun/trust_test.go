package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

// secureSetup is a deployment as `sandrun dev` makes it — credentials
// required, store encrypted — with a worker on its worker credentials. It
// returns the URL, the credentials and a store opened as admin.
func secureSetup(t *testing.T) (string, *auth.Material, *jobs.Store) {
	t.Helper()
	srv, m := sandruntest.SecureServer(t)
	url := srv.ClientURL()
	admin := sandruntest.StoreAs(t, url, m.CredsPath("admin"), jobs.LayoutConfig{})
	wst := sandruntest.StoreAs(t, url, m.CredsPath("worker"), jobs.LayoutConfig{KeepSchedules: true})
	sandruntest.StartWorker(t, wst, sandruntest.FastConfig())
	return url, m, admin
}

// mintFile writes a .creds file for a new identity.
func mintFile(t *testing.T, m *auth.Material, id auth.Identity) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), id.Name+".creds")
	if err := m.MintFile(id, f); err != nil {
		t.Fatal(err)
	}
	return f
}

// waitDLQ waits for a DLQ entry whose reason contains want.
func waitDLQ(t *testing.T, c *client.Client, want string) jobs.DLQEntry {
	t.Helper()
	var found jobs.DLQEntry
	sandruntest.Eventually(t, 20*time.Second, func() (bool, string) {
		entries, err := c.DLQ(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, e := range entries {
			if strings.Contains(e.Reason, want) {
				found = e
				return true, ""
			}
		}
		return false, fmt.Sprintf("no DLQ entry saying %q: %+v", want, entries)
	})
	return found
}

// homeWithMarker is a HOME for `rm -rf ~`: dangerous to the policy,
// harmless here, and its marker tells whether the command ran.
func homeWithMarker(t *testing.T) (home, marker string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "home")
	marker = filepath.Join(home, "marker")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(marker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, marker
}

// The policy a job runs under comes from who submitted it: a subagent
// identity that claims `origin: manual, approval: approve` — through the
// CLI or publishing to JetStream itself — is judged as a subagent and
// denied; the operator's identity asking for approve runs the command.
func TestPolicyAuthorityComesFromTheIdentity(t *testing.T) {
	t.Parallel()
	url, m, admin := secureSetup(t)
	agent := mintFile(t, m, auth.Identity{Name: "agent-7", Role: auth.RoleSubmitter, Origin: "subagent"})
	c := client.New(admin)
	ctx := sandruntest.Ctx(t)

	expectDenied := func(how, id, marker string) {
		t.Helper()
		r := sandruntest.WaitResult(t, c, id, 30*time.Second)
		if r.State != jobs.StateDenied || r.Policy == nil || !r.Policy.Capped || r.Policy.Mode != "allowlist" {
			t.Fatalf("%s: %s %+v, want denied under the subagent ceiling (allowlist)", how, r.State, r.Policy)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("%s: the denied command ran", how)
		}
		st, err := c.Status(ctx, id)
		if err != nil || st.Run.Owner != (jobs.Owner{Origin: jobs.OriginSubagent, Name: "agent-7"}) || st.Run.Spec.Origin != jobs.OriginSubagent {
			t.Fatalf("%s: record owner %+v origin %s (%v), want subagent.agent-7", how, st.Run.Owner, st.Run.Spec.Origin, err)
		}
	}

	// Through the CLI, with the agent's credentials.
	home, marker := homeWithMarker(t)
	code, out, errOut := sandrun(t, "submit", "--nats-url", url, "--creds", agent, "--origin", "manual", "--approval", "approve",
		"--env", "HOME="+home, "--", "rm -rf ~")
	if code != 0 {
		t.Fatalf("submit: %d %s", code, errOut)
	}
	expectDenied("cli", strings.TrimSpace(out), marker)

	// Straight to JetStream, bypassing the CLI.
	home, marker = homeWithMarker(t)
	nc, err := nats.Connect(url, nats.UserCredentials(agent))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(jobs.Spec{ID: "direct-1", Queue: "default", Command: "rm -rf ~", Origin: jobs.OriginManual,
		Approval: "approve", Env: map[string]string{"HOME": home}})
	if _, err := js.Publish(ctx, jobs.JobSubject("default", "subagent.agent-7"), body); err != nil {
		t.Fatal(err)
	}
	expectDenied("direct publish", "direct-1", marker)
	// Its own subject is the only one the agent may publish to.
	if _, err := js.Publish(ctx, jobs.JobSubject("default", "manual.admin"), body, jetstream.WithStallWait(time.Second)); err == nil {
		t.Fatal("the agent published under the admin's name")
	}

	// A message schedule on its own subject whose target is another
	// identity's subject: the server publishes it there without checking
	// the agent's permissions; the worker refuses it.
	home, marker = homeWithMarker(t)
	body, _ = json.Marshal(jobs.Spec{ID: "scheduled-1", Queue: "default", Command: "rm -rf ~", Approval: "approve",
		Env: map[string]string{"HOME": home}})
	// (The schedule sits on a queue no worker serves, or a worker would
	// claim the schedule message itself, as the agent's own job.)
	if _, err := js.Publish(ctx, jobs.JobSubject("idle", "subagent.agent-7"), body,
		jetstream.WithScheduleAt(time.Now().Add(time.Second)), jetstream.WithScheduleTarget(jobs.JobSubject("default", "manual.admin"))); err != nil {
		t.Fatal(err)
	}
	waitDLQ(t, c, "may not publish jobs as manual.admin")
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("a job scheduled onto the admin's subject ran")
	}
	if _, err := c.Status(ctx, "scheduled-1"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("the forged job has a record: %v", err)
	}

	// The operator's identity (manual, ceiling approve) runs it.
	home, _ = homeWithMarker(t)
	code, out, errOut = sandrun(t, "submit", "--nats-url", url, "--creds", m.CredsPath("admin"), "--approval", "approve",
		"--env", "HOME="+home, "--", "rm -rf ~")
	if code != 0 {
		t.Fatalf("admin submit: %d %s", code, errOut)
	}
	r := sandruntest.WaitResult(t, c, strings.TrimSpace(out), 30*time.Second)
	if r.State != jobs.StateSucceeded || r.Policy == nil || !r.Policy.Dangerous || r.Policy.Decision != "approve" {
		t.Fatalf("admin: %s %+v, want succeeded as approved-dangerous", r.State, r.Policy)
	}
	if _, err := os.Stat(home); !os.IsNotExist(err) {
		t.Fatalf("the approved command did not run: %v", err)
	}
}

// A job's ID is its owner's: a second submitter reusing it is refused
// and the first job is untouched.
func TestJobIDOfAnotherOwnerIsRefused(t *testing.T) {
	t.Parallel()
	url, m, admin := secureSetup(t)
	c := client.New(admin)
	ctx := sandruntest.Ctx(t)
	if _, err := c.As("manual.bob").Submit(ctx, jobs.Spec{ID: "shared-id", Command: "echo bob"}); err != nil {
		t.Fatal(err)
	}
	first := sandruntest.WaitResult(t, c, "shared-id", 30*time.Second)
	f := mintFile(t, m, auth.Identity{Name: "mallory", Role: auth.RoleSubmitter})
	mc, err := client.Connect(ctx, client.Options{URL: url, CredsFile: f})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	// After the deduplication window, or with another message id, the
	// copy reaches a worker: it must not rerun or rewrite bob's job.
	if err := mc.Store().PublishJob(ctx, jobs.Spec{ID: "shared-id", Queue: "default", Backend: "local", Command: "echo mallory",
		Timeout: jobs.Duration(time.Minute), MaxAttempts: 1, Origin: jobs.OriginManual}, mc.Owner(), "other-msg-id"); err != nil {
		t.Fatal(err)
	}
	waitDLQ(t, c, "another submitter")
	st, err := c.Status(ctx, "shared-id")
	if err != nil || st.Result == nil || st.Result.Stdout.Head != first.Stdout.Head || st.Run.Owner.Name != "bob" || st.Run.Attempt != 1 {
		t.Fatalf("bob's job changed: %+v %v", st, err)
	}
}

// startDaemon runs the CLI binary (subcommand args) until the test ends
// and returns the first line it prints on stdout.
func startDaemon(t *testing.T, args ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(workerBin, args...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+os.Getenv("XDG_CONFIG_HOME"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%v:\n%s", args, stderr.String())
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-lines:
		return l, cmd
	case <-time.After(60 * time.Second):
		t.Fatalf("%v printed nothing in 60s: %s", args, stderr.String())
		return "", nil
	}
}

// `sandrun server` and `sandrun dev` refuse connections without
// credentials; the CLI of the same user on the same machine needs no
// flag to get in (the README's quick start).
func TestLocalServersRequireCredentials(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"server", "dev"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			port, err := natsutil.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			url := fmt.Sprintf("nats://127.0.0.1:%d", port)
			data := t.TempDir()
			if kind == "server" {
				startDaemon(t, "server", "--data", data, "--port", fmt.Sprint(port))
				// A worker on the same machine finds the credentials too.
				wcmd := exec.Command(workerBin, "worker", "--nats-url", url, "--name", "trust-w")
				wcmd.Env = os.Environ()
				if err := wcmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = wcmd.Process.Signal(os.Interrupt); _ = wcmd.Wait() })
			} else {
				cmd := exec.Command(workerBin, "dev", "--data", data, "--port", fmt.Sprint(port))
				cmd.Env = os.Environ()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
			}
			if err := waitListening(url); err != nil {
				t.Fatal(err)
			}
			if nc, err := nats.Connect(url); err == nil {
				nc.Close()
				t.Fatalf("%s accepted a connection without credentials", kind)
			}
			// The store is encrypted at rest: its key sits beside it.
			if fi, err := os.Stat(filepath.Join(data, "jetstream.key")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("encryption key: %v %v", fi, err)
			}
			sandruntest.Eventually(t, 60*time.Second, func() (bool, string) {
				code, out, errOut := sandrun(t, "submit", "--nats-url", url, "--wait", "--", "echo quick start")
				return code == 0 && out == "quick start\n", fmt.Sprintf("submit without flags: %d %q %q", code, out, errOut)
			})
			if kind == "dev" && os.Geteuid() == 0 {
				// dev's worker runs as root here: its jobs run as nobody,
				// away from the credentials in the data directory. (wc
				// counts: the policy, which refuses cat of a .creds file,
				// lets it through, so the test reaches the file system.)
				creds := filepath.Join(data, "auth", "admin.creds")
				code, out, errOut := sandrun(t, "submit", "--nats-url", url, "--wait", "--max-attempts", "1", "--", "id -u; wc -c < "+creds)
				if out != "65534\n" || code == 0 || !strings.Contains(errOut, "Permission denied") {
					t.Fatalf("a dev job as root: %d %q %q, want uid 65534 and no access to %s", code, out, errOut, creds)
				}
			}
		})
	}
}

func waitListening(url string) error {
	var err error
	if ok, _ := sandruntest.Poll(60*time.Second, func() (bool, string) {
		var nc *nats.Conn
		if nc, err = nats.Connect(url); err == nil {
			nc.Close()
			return true, ""
		}
		// It answered, if only to refuse.
		return !strings.Contains(err.Error(), "connection refused") && !strings.Contains(err.Error(), "no servers"), ""
	}); !ok {
		return fmt.Errorf("%s: not listening after 60s: %w", url, err)
	}
	return nil
}

// Job x never receives the events (or output) of job x.1, whoever
// submitted it.
func TestEventsOfOneJobOnly(t *testing.T) {
	t.Parallel()
	url, st := setup(t)
	_ = url
	c := client.New(st)
	ctx := sandruntest.Ctx(t)
	// x.1 runs first and ends: its events are in the stream when x is
	// followed from the start.
	if _, err := c.Submit(ctx, jobs.Spec{ID: "iso.1", Command: "echo from-x1; exit 5", MaxAttempts: 1}); err != nil {
		t.Fatal(err)
	}
	sandruntest.WaitResult(t, c, "iso.1", 30*time.Second)
	if _, err := c.Submit(ctx, jobs.Spec{ID: "iso", Command: "echo from-x"}); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var foreign []string
	r, err := c.Follow(ctx, "iso", client.FollowOptions{Stdout: &out, Stderr: &out, Events: func(e jobs.Event) {
		if e.JobID != "iso" {
			foreign = append(foreign, e.JobID+":"+e.Kind)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != jobs.StateSucceeded || r.JobID != "iso" || out.String() != "from-x\n" || len(foreign) != 0 {
		t.Fatalf("follow iso: %s %s output %q, foreign events %v", r.JobID, r.State, out.String(), foreign)
	}
}

// A submitter's credentials are enough for a batch (the record is the
// workers' to write), and another submitter cannot add items to it.
func TestBatchOfASubmitter(t *testing.T) {
	t.Parallel()
	url, m, admin := secureSetup(t)
	ctx := sandruntest.Ctx(t)
	connectAs := func(name string) *client.Client {
		f := mintFile(t, m, auth.Identity{Name: name, Role: auth.RoleSubmitter, Origin: "batch"})
		c, err := client.Connect(ctx, client.Options{URL: url, CredsFile: f})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	alice, mallory := connectAs("alice"), connectAs("mallory")
	items := make([]jobs.Spec, 5)
	for i := range items {
		items[i] = jobs.Spec{Command: fmt.Sprintf("echo item %d", i)}
	}
	if _, err := alice.SubmitBatch(ctx, client.BatchOptions{ID: "eval-a", MaxParallel: 2}, items); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p, err := alice.WaitBatch(wctx, "eval-a", client.WaitOptions{})
	if err != nil || p.Total != 5 || p.Counts[jobs.StateSucceeded] != 5 {
		t.Fatalf("batch: %+v %v", p, err)
	}
	b, err := admin.GetBatch(ctx, "eval-a")
	if err != nil || b.Owner != "batch.alice" || b.MaxParallel != 2 || b.Total != 5 {
		t.Fatalf("batch record %+v %v", b, err)
	}
	// mallory's item claiming to belong to alice's batch is refused.
	spec := jobs.Spec{ID: jobs.BatchItemID("eval-a", 7), Command: "echo injected",
		Labels: map[string]string{jobs.LabelBatch: "eval-a", jobs.LabelBatchIndex: "7", jobs.LabelBatchTotal: "8"}}
	if _, err := mallory.Submit(ctx, spec); err != nil {
		t.Fatal(err)
	}
	waitDLQ(t, client.New(admin), "another submitter's")
	if p, err := alice.BatchStatus(ctx, "eval-a"); err != nil || p.Total != 5 || p.Counts[jobs.StateSucceeded] != 5 {
		t.Fatalf("alice's batch after the injection: %+v %v", p, err)
	}
}

// `sandrun auth` makes the credentials, mints identities and prints what
// an external nats-server must trust.
func TestAuthCommands(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "auth")
	if code, out, errOut := sandrun(t, "auth", "init", "--dir", dir); code != 0 || strings.TrimSpace(out) != dir {
		t.Fatalf("init: %d %q %q", code, out, errOut)
	}
	f := filepath.Join(t.TempDir(), "a.creds")
	if code, _, errOut := sandrun(t, "auth", "add", "--dir", dir, "--name", "ci-agent", "--origin", "subagent", "-o", f); code != 0 {
		t.Fatalf("add: %d %q", code, errOut)
	}
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := auth.IdentityOf(data); err != nil || id.Owner() != "subagent.ci-agent" || id.Role != auth.RoleSubmitter {
		t.Fatalf("minted %+v %v", id, err)
	}
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o600 {
		t.Fatalf("creds file mode %v", fi.Mode().Perm())
	}
	if code, _, errOut := sandrun(t, "auth", "add", "--dir", dir, "--name", "x", "--role", "root"); code == 0 || !strings.Contains(errOut, "identity role") {
		t.Fatalf("bad role: %d %q", code, errOut)
	}
	code, out, _ := sandrun(t, "auth", "export", "--dir", dir)
	keys := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "=")
		keys[k] = v != ""
	}
	for _, k := range []string{"operator_jwt", "system_account", "system_account_jwt", "sandrun_account", "sandrun_account_jwt"} {
		if !keys[k] {
			t.Errorf("export: %s missing in %q", k, out)
		}
	}
	if code != 0 {
		t.Fatalf("export: %d", code)
	}
	for _, seedFile := range []string{"operator.nk", "account.nk", "secrets.nk"} {
		seed, err := os.ReadFile(filepath.Join(dir, seedFile))
		if err != nil || len(seed) < 20 || strings.Contains(out, strings.TrimSpace(string(seed))) {
			t.Fatalf("export printed %s (or it is missing: %v)", seedFile, err)
		}
	}
}
