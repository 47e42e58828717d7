package auth_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/sandrun/sandrun/internal/auth"
	"github.com/sandrun/sandrun/internal/jobs"
	"github.com/sandrun/sandrun/internal/natsutil"
	"github.com/sandrun/sandrun/internal/sandruntest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// secure starts an embedded server that trusts fresh material, with the
// layout created by the admin, and returns the server's URL.
func secure(t *testing.T) (string, *auth.Material) {
	t.Helper()
	dir := t.TempDir()
	m, err := auth.Ensure(filepath.Join(dir, "auth"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsutil.StartEmbedded(natsutil.EmbeddedConfig{Dir: filepath.Join(dir, "js"), Port: -1, Auth: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, js := dial(t, srv.ClientURL(), m.CredsPath("admin"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := jobs.EnsureLayout(ctx, js, nc.ConnectedServerVersion(), jobs.LayoutConfig{}); err != nil {
		t.Fatal(err)
	}
	return srv.ClientURL(), m
}

// violations collects the permission errors the server sends a connection.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func (v *violations) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.errs = append(v.errs, err.Error())
}

func (v *violations) saw(subject string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, e := range v.errs {
		if strings.Contains(e, "Permissions Violation") && strings.Contains(e, `"`+subject+`"`) {
			return true
		}
	}
	return false
}

func dial(t *testing.T, url, creds string, opts ...nats.Option) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	if creds != "" {
		opts = append(opts, nats.UserCredentials(creds))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect with %s: %v", filepath.Base(creds), err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func mint(t *testing.T, m *auth.Material, id auth.Identity) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), id.Name+".creds")
	if err := m.MintFile(id, f); err != nil {
		t.Fatal(err)
	}
	if err := m.MintFile(id, f); err == nil {
		t.Fatal("MintFile overwrote an existing file")
	}
	return f
}

func TestUnauthenticatedRefused(t *testing.T) {
	t.Parallel()
	url, m := secure(t)
	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("a connection without credentials was accepted")
	} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Fatalf("refused with %v, want an authorization error", err)
	}
	// Credentials of another deployment are refused too.
	other, err := auth.Ensure(filepath.Join(t.TempDir(), "other"))
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(url, nats.UserCredentials(other.CredsPath("admin"))); err == nil {
		nc.Close()
		t.Fatal("another deployment's admin was accepted")
	}
	// Files are the owner's alone.
	for _, name := range []string{"", "account.nk", "operator.nk", "admin.creds", "submitter.creds"} {
		fi, err := os.Stat(filepath.Join(m.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s/%s is %v: readable by others", m.Dir, name, fi.Mode().Perm())
		}
	}
}

// A submitter, over a raw JetStream connection (not the CLI), can submit
// under its own name and ask to cancel its own jobs; the server refuses
// everything else it could use to forge or break another job.
func TestSubmitterPermissionsEnforcedByServer(t *testing.T) {
	t.Parallel()
	url, m := secure(t)
	alice := mint(t, m, auth.Identity{Name: "alice", Role: auth.RoleSubmitter, Origin: "subagent"})
	var v violations
	_, js := dial(t, url, alice, nats.ErrorHandler(v.handler))
	_, adminJS := dial(t, url, m.CredsPath("admin"))
	ctx := context.Background()

	// Allowed: its own dispatch subject and its own cancel keys.
	if _, err := js.Publish(ctx, jobs.JobSubject("default", "subagent.alice"), []byte(`{"id":"a1","command":"true"}`)); err != nil {
		t.Fatalf("own submit refused: %v", err)
	}
	if _, err := js.Publish(ctx, "$KV.jobstate."+jobs.CancelKey("subagent.alice", "a1"), []byte("x")); err != nil {
		t.Fatalf("own cancel refused: %v", err)
	}
	if _, err := js.Publish(ctx, "$KV.jobstate."+jobs.WorkspaceQueueKey("subagent.alice", "ws", time.Unix(1, 0), "a1"), []byte("a1")); err != nil {
		t.Fatalf("own workspace place refused: %v", err)
	}
	// A job record of another owner, for the forgery attempts below.
	victim := jobs.Run{Spec: jobs.Spec{ID: "victim", Command: "true"}, Owner: jobs.Owner{Origin: "manual", Name: "bob"}, State: jobs.StateQueued}
	st, err := jobs.OpenLayout(ctx, adminJS, "2.15.0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(ctx, victim); err != nil {
		t.Fatal(err)
	}

	refused := []struct{ what, subject string }{
		{"a lease", "$KV.jobstate." + jobs.LeaseKey("victim")},
		{"another job's record", "$KV.jobstate." + jobs.RunKey("victim")},
		{"its own job's record", "$KV.jobstate." + jobs.RunKey("a1")},
		{"a schedule", "$KV.schedules.nightly"},
		{"a submit as another identity", jobs.JobSubject("default", "manual.bob")},
		{"a submit under another origin", jobs.JobSubject("default", "manual.alice")},
		{"another owner's cancel", "$KV.jobstate." + jobs.CancelKey("manual.bob", "victim")},
		{"a place in another owner's workspace", "$KV.jobstate." + jobs.WorkspaceQueueKey("manual.bob", "ws", time.Unix(1, 0), "x")},
		{"a workspace's lock", "$KV.jobstate." + jobs.WorkspaceLockKey("subagent.alice", "ws")},
		{"an event", jobs.EventSubject("victim", jobs.EventFinished)},
		{"a DLQ entry", jobs.DLQSubject("victim")},
		{"an election", "$KV.elections.reaper"},
		{"output object chunks", "$O.outputs.C.x"},
		{"a purge of the job records", "$JS.API.STREAM.PURGE.KV_jobstate"},
		{"a deletion of the queue", "$JS.API.STREAM.DELETE.JOBS"},
		{"a message deletion", "$JS.API.STREAM.MSG.DELETE.JOBS"},
		{"a consumer on the queue", "$JS.API.CONSUMER.CREATE.JOBS.thief.sandrun.jobs.q.default.>"},
		{"an ack on the queue's consumer", "$JS.ACK.JOBS.q-default.1.1.1.1.0"},
	}
	// Each refused publish waits out its ack: send them all at once.
	errs := make([]error, len(refused))
	var wg sync.WaitGroup
	for i, r := range refused {
		wg.Go(func() { _, errs[i] = js.Publish(ctx, r.subject, []byte(`{"state":"succeeded"}`)) })
	}
	wg.Wait()
	for i, r := range refused {
		if errs[i] == nil {
			t.Errorf("%s (%s): published", r.what, r.subject)
			continue
		}
		if ok, _ := sandruntest.Poll(2*time.Second, func() (bool, string) { return v.saw(r.subject), "" }); !ok {
			t.Errorf("%s (%s): failed with %v, but the server reported no permissions violation", r.what, r.subject, errs[i])
		}
	}
	// Nothing was written: the victim's record is as it was, and no
	// lease or schedule exists.
	got, _, err := st.GetRun(ctx, "victim")
	if err != nil || got.State != jobs.StateQueued || got.Owner.Name != "bob" {
		t.Fatalf("victim record %+v %v: changed", got, err)
	}
	for _, key := range []string{jobs.LeaseKey("victim")} {
		if _, err := st.State.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
			t.Errorf("%s: %v, want not found", key, err)
		}
	}
	if _, err := st.Schedules.Get(ctx, "nightly"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Errorf("schedule: %v, want not found", err)
	}
	// Reading works: a submitter follows its jobs.
	if _, err := js.Stream(ctx, jobs.StreamJobs); err != nil {
		t.Errorf("stream info refused: %v", err)
	}
}

// A worker runs jobs but cannot edit schedules; a scheduler submits cron
// jobs but cannot write job records.
func TestDaemonRoles(t *testing.T) {
	t.Parallel()
	url, m := secure(t)
	ctx := context.Background()
	var wv, sv violations
	_, wjs := dial(t, url, m.CredsPath("worker"), nats.ErrorHandler(wv.handler))
	_, sjs := dial(t, url, m.CredsPath("scheduler"), nats.ErrorHandler(sv.handler))
	if _, err := wjs.Publish(ctx, "$KV.jobstate."+jobs.RunKey("x"), []byte("{}")); err != nil {
		t.Fatalf("worker cannot write a job record: %v", err)
	}
	for _, subj := range []string{"$KV.schedules.nightly", "$JS.API.STREAM.UPDATE.KV_schedules", "$JS.API.STREAM.PURGE.KV_schedules"} {
		if _, err := wjs.Publish(ctx, subj, []byte("{}")); err == nil {
			t.Errorf("worker published to %s", subj)
		}
	}
	if _, err := sjs.Publish(ctx, jobs.JobSubject("default", "cron.scheduler"), []byte(`{}`)); err != nil {
		t.Fatalf("scheduler cannot submit cron jobs: %v", err)
	}
	if _, err := sjs.Publish(ctx, "$KV.schedules.nightly", []byte("{}")); err != nil {
		t.Fatalf("scheduler cannot write schedules: %v", err)
	}
	for _, subj := range []string{"$KV.jobstate." + jobs.RunKey("x2"),
		"$KV.jobstate." + jobs.LeaseKey("x2"), jobs.JobSubject("default", "manual.admin"), "$JS.API.STREAM.DELETE.JOBS"} {
		if _, err := sjs.Publish(ctx, subj, []byte("{}")); err == nil {
			t.Errorf("scheduler published to %s", subj)
		}
	}
	// A worker may create the layout where no scheduler did yet, and
	// leave the schedules bucket alone.
	wnc, wjs2 := dial(t, url, m.CredsPath("worker"))
	if _, err := jobs.EnsureLayout(ctx, wjs2, wnc.ConnectedServerVersion(), jobs.LayoutConfig{KeepSchedules: true}); err != nil {
		t.Fatalf("worker layout: %v", err)
	}
}

func TestIdentityOfCreds(t *testing.T) {
	t.Parallel()
	m, err := auth.Ensure(filepath.Join(t.TempDir(), "auth"))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := m.Mint(auth.Identity{Name: "ci-agent", Role: auth.RoleSubmitter, Origin: "subagent"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := auth.IdentityOf(creds)
	if err != nil || id.Owner() != "subagent.ci-agent" || id.Role != auth.RoleSubmitter {
		t.Fatalf("identity %+v %v", id, err)
	}
	for _, bad := range []auth.Identity{{Name: "Bad.Name", Role: auth.RoleSubmitter}, {Name: "x", Role: "root"},
		{Name: "x", Role: auth.RoleSubmitter, Origin: "kernel"}, {Name: "x", Role: auth.RoleScheduler, Origin: "manual"}} {
		if _, err := m.Mint(bad); err == nil {
			t.Errorf("minted %+v", bad)
		}
	}
	// Two processes making the material at once end with one.
	dir := filepath.Join(t.TempDir(), "shared")
	var wg sync.WaitGroup
	keys := make([]string, 4)
	for i := range keys {
		wg.Go(func() {
			m, err := auth.Ensure(dir)
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := os.ReadFile(filepath.Join(m.Dir, "account.jwt"))
			keys[i] = string(b)
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if k != keys[0] {
			t.Fatal("concurrent Ensure made two deployments")
		}
	}
}

// The system account's user reaches the server's own API (reports, raft
// operations); sandrun's identities do not.
func TestSystemUser(t *testing.T) {
	t.Parallel()
	url, m := secure(t)
	nc, _ := dial(t, url, filepath.Join(m.Dir, "sys.creds"))
	if _, err := nc.Request("$SYS.REQ.SERVER.PING", nil, 2*time.Second); err != nil {
		t.Fatalf("system user cannot ping the servers: %v", err)
	}
	admin, _ := dial(t, url, m.CredsPath("admin"))
	if _, err := admin.Request("$SYS.REQ.SERVER.PING", nil, time.Second); err == nil {
		t.Fatal("the sandrun account reached the system account's API")
	}
}
