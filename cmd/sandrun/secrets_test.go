package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/local"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/sandruntest"
	"github.com/sandrun/sandrun/internal/scheduler"
	"github.com/sandrun/sandrun/internal/worker"
)

// Secret values travel sealed and never land anywhere in the clear: not
// in any stream or bucket (job messages, records, results, events, output
// objects, the DLQ), not on the server's disk, and not in what `logs`,
// `status` and live events show — even from jobs that print them, fail,
// or die into the DLQ.
func TestSecretsNeverStoredOrShownInTheClear(t *testing.T) {
	t.Parallel()
	url, m, admin := secureSetup(t)
	ctx := sandruntest.Ctx(t)
	c := client.New(admin)

	raw := make([]byte, 12)
	_, _ = rand.Read(raw)
	secret := "sk-live-" + hex.EncodeToString(raw)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	submit := func(args ...string) string {
		t.Helper()
		args = append([]string{"submit", "--nats-url", url, "--creds", m.CredsPath("admin"), "--secret-env", "TOKEN=@" + tokenFile}, args...)
		code, out, errOut := sandrun(t, args...)
		if code != 0 {
			t.Fatalf("submit %v: %d %s", args, code, errOut)
		}
		return strings.TrimSpace(out)
	}
	printer := submit("--", `echo "token=$TOKEN"; echo "$TOKEN" >&2; set -x; : "$TOKEN"`)
	// Printed a character at a time: the value reaches the worker split
	// over many writes.
	trickle := submit("--", `printf '%s\n' "$TOKEN" | fold -w1 | while read -r c; do printf %s "$c"; sleep 0.01; done; echo`)
	// Past the live-output chunk and the result's head: the value sits in
	// the object only.
	big := submit("--", `head -c 100000 /dev/zero | tr '\0' x; echo "$TOKEN"; head -c 100000 /dev/zero | tr '\0' y`)
	failing := submit("--max-attempts", "1", "--", `echo "$TOKEN"; exit 3`)
	dead := submit("--max-attempts", "2", "--", `echo "$TOKEN" >&2; exit 4`)

	// A schedule's secrets are stored sealed as well.
	if err := scheduler.NewCatalog(admin).Put(ctx, scheduler.Schedule{Name: "nightly-secret", Cron: "@daily",
		Job: jobs.Spec{Command: `curl -H "Authorization: $TOKEN" example.invalid`, Env: map[string]string{"TOKEN": secret}, SecretEnv: []string{"TOKEN"}}}, false); err != nil {
		t.Fatal(err)
	}

	want := map[string]jobs.State{printer: jobs.StateSucceeded, trickle: jobs.StateSucceeded, big: jobs.StateSucceeded,
		failing: jobs.StateFailed, dead: jobs.StateDead}
	for id, state := range want {
		if r := sandruntest.WaitResult(t, c, id, 60*time.Second); r.State != state {
			t.Fatalf("job %s: %s, want %s", id, r.State, state)
		}
	}

	// What people see: masked.
	code, out, errOut := sandrun(t, "logs", "--nats-url", url, "--creds", m.CredsPath("admin"), printer)
	if code != 0 || out != "token=[REDACTED]\n" || !strings.Contains(errOut, "[REDACTED]") || strings.Contains(out+errOut, secret) {
		t.Fatalf("logs: %d %q %q", code, out, errOut)
	}
	if _, out, _ = sandrun(t, "logs", "--nats-url", url, "--creds", m.CredsPath("admin"), trickle); out != "[REDACTED]\n" {
		t.Fatalf("logs of the trickled secret: %q", out)
	}
	if _, out, _ = sandrun(t, "logs", "--nats-url", url, "--creds", m.CredsPath("admin"), big); !strings.Contains(out, "x[REDACTED]\ny") || len(out) != 200000+len("[REDACTED]\n") {
		t.Fatalf("logs of the big output: %d bytes, masked value present: %v", len(out), strings.Contains(out, "x[REDACTED]\ny"))
	}
	if _, out, _ = sandrun(t, "status", "--nats-url", url, "--creds", m.CredsPath("admin"), "--json", failing); !strings.Contains(out, jobs.Redacted) || strings.Contains(out, secret) {
		t.Fatalf("status --json: %s", out)
	}
	var events bytes.Buffer
	if _, err := c.Follow(ctx, printer, client.FollowOptions{Stdout: &events, Stderr: &events, Events: func(e jobs.Event) {
		events.WriteString(e.Message)
	}}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(events.String(), secret) || !strings.Contains(events.String(), "[REDACTED]") {
		t.Fatalf("live events: %q", events.String())
	}

	// What is stored: every message of every stream — job messages, KV
	// buckets (records, results, schedules, workers), events, DLQ and the
	// stored output's chunks — read back through the API.
	assertNowhereStored(t, admin.JS, secret, "KV_"+jobs.BucketState, "KV_"+jobs.BucketSchedules, jobs.StreamEvents, jobs.StreamDLQ, jobs.StreamOutputs)
	// The DLQ entry exists (its stored copy was among the messages above).
	entries, err := c.DLQ(ctx)
	if err != nil || len(entries) != 1 || entries[0].Spec == nil || entries[0].Spec.Env["TOKEN"] == secret {
		t.Fatalf("dlq: %+v %v", entries, err)
	}

	// And the server's data directory, file by file.
	dataDir := filepath.Dir(m.Dir) // the server's data directory: auth/, js/, jetstream.key
	files := 0
	err = filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the secret in the clear", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Fatalf("searched %d files under %s", files, dataDir)
	}
}

// A spec whose secret value is not sealed (published around the client)
// is refused before anything stores it, and its DLQ copy hides the value.
func TestUnsealedSecretRefused(t *testing.T) {
	t.Parallel()
	url, st := setup(t)
	_ = url
	c := client.New(st)
	ctx := sandruntest.Ctx(t)
	spec := jobs.Spec{ID: "plain-secret", Queue: "default", Command: "true", Env: map[string]string{"T": "plaintext-value"}, SecretEnv: []string{"T"}}.WithDefaults()
	if err := st.PublishJob(ctx, spec, c.Owner(), spec.ID); err != nil {
		t.Fatal(err)
	}
	if e := waitDLQ(t, c, "secret_env.T"); strings.Contains(e.Raw, "plaintext-value") {
		t.Fatalf("dlq entry %+v", e)
	}
	// The job ends failed, saying why, and its record holds nothing of the
	// refused spec but its ID and queue: no env value.
	r := sandruntest.WaitResult(t, c, "plain-secret", 30*time.Second)
	if r.State != jobs.StateFailed || !strings.Contains(r.Error, "secret_env.T") {
		t.Fatalf("result %s %q, want failed naming secret_env.T", r.State, r.Error)
	}
	st2, err := c.Status(ctx, "plain-secret")
	if err != nil {
		t.Fatal(err)
	}
	if len(st2.Run.Spec.Env) != 0 || st2.Run.Spec.Command != "" {
		t.Fatalf("the refused spec's content reached its record: %+v", st2.Run.Spec)
	}
}

// A sealed value is bound to its owner: another submitter who copies it
// from a job record (submitters may read records) into a job of its own
// gets nothing — the job fails before it runs, and the value is not in
// its output.
func TestSealedSecretReplayedByAnotherOwner(t *testing.T) {
	t.Parallel()
	url, m, admin := secureSetup(t)
	ctx := sandruntest.Ctx(t)
	c := client.New(admin)
	const secret = "alice-only-token-7f3a"
	alice := c.As("manual.alice")
	spec, err := alice.Submit(ctx, jobs.Spec{Command: "true", Env: map[string]string{"TOKEN": secret}, SecretEnv: []string{"TOKEN"}})
	if err != nil {
		t.Fatal(err)
	}
	sandruntest.WaitResult(t, c, spec.ID, 30*time.Second)
	run, _, err := admin.GetRun(ctx, spec.ID)
	if err != nil {
		t.Fatal(err)
	}
	sealed := run.Spec.Env["TOKEN"]

	mallory, err := client.Connect(ctx, client.Options{URL: url, CredsFile: mintFile(t, m, auth.Identity{Name: "mallory", Role: auth.RoleSubmitter})})
	if err != nil {
		t.Fatal(err)
	}
	defer mallory.Close()
	stolen, err := mallory.Submit(ctx, jobs.Spec{Command: `echo "$TOKEN" | base64`, MaxAttempts: 1,
		Env: map[string]string{"TOKEN": sealed}, SecretEnv: []string{"TOKEN"}})
	if err != nil {
		t.Fatal(err)
	}
	r := sandruntest.WaitResult(t, c, stolen.ID, 30*time.Second)
	if r.State != jobs.StateFailed || !strings.Contains(r.Error, "sealed for another submitter") || r.Stdout.Size != 0 {
		t.Fatalf("replayed secret: %s %q, output %d bytes", r.State, r.Error, r.Stdout.Size)
	}
}

// assertNowhereStored reads every message of every stream — job messages,
// KV buckets, events, the DLQ, output chunks — back through the API and
// fails if one holds value in its data, headers or subject; each stream
// named in mustScan must have had a message, so that the search saw
// enough to mean something.
func assertNowhereStored(t *testing.T, js jetstream.JetStream, value string, mustScan ...string) {
	t.Helper()
	ctx := sandruntest.Ctx(t)
	scanned := map[string]int{}
	for name := range js.StreamNames(ctx).Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
			msg, err := s.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				t.Fatalf("%s #%d: %v", name, seq, err)
			}
			scanned[name]++
			hdr := ""
			for k, v := range msg.Header {
				hdr += k + strings.Join(v, ",")
			}
			if bytes.Contains(msg.Data, []byte(value)) || strings.Contains(hdr, value) || strings.Contains(msg.Subject, value) {
				t.Errorf("stream %s message %d (%s) holds the value in the clear", name, seq, msg.Subject)
			}
		}
	}
	for _, name := range mustScan {
		if scanned[name] == 0 {
			t.Fatalf("scanned %v: no message of %s, so the search saw too little to mean anything", scanned, name)
		}
	}
}

// TestForwardEnv: a variable the profile forwards from the worker (from
// its environment or a file) reaches the sandbox of a job that names it;
// the value is in no spec, record, event or output (masked there), and a
// job naming a variable the profile does not forward fails saying so.
func TestForwardEnv(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	raw := make([]byte, 12)
	_, _ = rand.Read(raw)
	secret := "ghp_" + hex.EncodeToString(raw)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := backends.NewRegistry()
	lb, err := local.New(local.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Add("local", lb); err != nil {
		t.Fatal(err)
	}
	sandruntest.StartWorkerDeps(t, st, sandruntest.FastConfig(), reg, func(d *worker.Deps) {
		d.Forward = map[string]worker.Forward{"local": {"GH_TOKEN": "file:" + file}}
	})
	url := s.ClientURL()
	code, out, errOut := sandrun(t, "submit", "--nats-url", url, "--wait", "--forward-env", "GH_TOKEN", "--",
		`printf 'len=%s\n' "${#GH_TOKEN}"; echo "token=$GH_TOKEN"; echo "$GH_TOKEN" >&2`)
	if code != 0 || out != fmt.Sprintf("len=%d\ntoken=[REDACTED]\n", len(secret)) || strings.Contains(out+errOut, secret) {
		t.Fatalf("submit --forward-env: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = sandrun(t, "submit", "--nats-url", url, "--wait", "--max-attempts", "1", "--forward-env", "AWS_SECRET_ACCESS_KEY", "--", "true")
	if code == 0 || !strings.Contains(errOut, "forward_env.AWS_SECRET_ACCESS_KEY: profile local does not forward it") {
		t.Fatalf("an unforwarded name: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut = sandrun(t, "submit", "--nats-url", url, "--forward-env", "GH_TOKEN", "--env", "GH_TOKEN=x", "--", "true"); code == 0 || !strings.Contains(errOut, "forward_env[0]") {
		t.Fatalf("forward_env naming an env variable: exit %d, stderr %q", code, errOut)
	}
	_, js := sandruntest.Connect(t, url)
	assertNowhereStored(t, js, secret, "KV_"+jobs.BucketState, jobs.StreamEvents)
}
