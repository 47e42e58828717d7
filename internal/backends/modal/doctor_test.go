package modal

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/modal/modaltest"
)

// What `sandrun doctor` asks of the backend.
var (
	_ interface {
		Orphans(context.Context, string, func(string, int, string) bool) ([]string, error)
	} = (*Backend)(nil)
	_ backends.Describer = (*Backend)(nil)
)

// TestOrphansListsWithoutTerminating: a worker killed with SIGKILL leaves
// its sandbox running. Orphans lists it — only it, and only while its
// attempt is not live — and terminates nothing: neither the orphan nor
// the backend's own idle session, which ReapOrphans would end first.
// ReapOrphans then terminates both.
func TestOrphansListsWithoutTerminating(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	orphan, orphanPids := killedWorker(t, f)

	// A session of the doctor's own backend, idle for long.
	b := newBackend(t, fakeConfig(t, f))
	spec := backends.Spec{Deployment: "d1", JobID: "mine", Attempt: 1, Worker: "w1", Session: "s1", Command: "true"}
	if res, err := b.Run(t.Context(), spec, backends.Output{}); err != nil || res.ExitCode != 0 {
		t.Fatalf("session job: %+v, %v", res, err)
	}
	b.mu.Lock()
	for _, s := range b.sessions {
		s.lastUsed = time.Now().Add(-2 * b.cfg.SessionIdle)
	}
	b.mu.Unlock()
	if n := len(f.Live()); n != 2 {
		t.Fatalf("%d live sandboxes, want 2 (the orphan and the session)", n)
	}

	calls := f.Calls()
	var asked []string
	notLive := func(job string, _ int, worker string) bool {
		asked = append(asked, job+"/"+worker)
		return false
	}
	got, err := b.Orphans(t.Context(), "d1", notLive)
	want := "sandbox " + orphan + " job orphan attempt 1 worker w-dead"
	if err != nil || !slices.Equal(got, []string{want}) {
		t.Fatalf("Orphans: %q, %v; want [%q]", got, err, want)
	}
	if !slices.Equal(asked, []string{"orphan/w-dead"}) {
		t.Errorf("live asked about %v; want only the orphan (the session is the backend's own)", asked)
	}
	if n := len(f.Live()); n != 2 || backendtest.HostProcessGone(t, orphanPids[0]) {
		t.Fatalf("after Orphans: %d live sandboxes, orphan job gone %v; want both sandboxes and the job running", n, backendtest.HostProcessGone(t, orphanPids[0]))
	}
	if after := f.Calls(); after["SandboxTerminateV2"] != calls["SandboxTerminateV2"] {
		t.Errorf("Orphans terminated sandboxes: SandboxTerminateV2 calls %d -> %d", calls["SandboxTerminateV2"], after["SandboxTerminateV2"])
	}
	b.mu.Lock()
	sessions := slices.Collect(maps.Keys(b.sessions))
	b.mu.Unlock()
	if !slices.Equal(sessions, []string{"s1"}) {
		t.Errorf("sessions after Orphans: %v; want s1 kept", sessions)
	}

	if got, err := b.Orphans(t.Context(), "d1", func(string, int, string) bool { return true }); err != nil || len(got) != 0 {
		t.Errorf("Orphans, attempt live: %q, %v; want none", got, err)
	}
	if got, err := b.Orphans(t.Context(), "another-deployment", notLive); err != nil || len(got) != 0 {
		t.Errorf("Orphans of another deployment: %q, %v; want none", got, err)
	}

	n, err := b.ReapOrphans(t.Context(), "d1", notLive)
	if err != nil || n != 2 {
		t.Fatalf("ReapOrphans: %d, %v; want 2 (the idle session, then the orphan)", n, err)
	}
	backendtest.WaitGone(t, orphanPids)
	if live := f.Live(); len(live) != 0 {
		t.Errorf("live after the reap: %+v; want none", live)
	}
}

// TestDescribe: after Validate, Describe says which server and which
// credential path the profile resolved, never the token.
func TestDescribe(t *testing.T) {
	t.Parallel()
	f := modaltest.Start(t)
	b := newBackend(t, fakeConfig(t, f))
	got, err := b.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mode direct", f.URL, envTokenID} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe: %q; want it to contain %q", got, want)
		}
	}
	for _, secret := range []string{f.TokenID, f.TokenSecret} {
		if strings.Contains(got, secret) {
			t.Errorf("Describe: %q shows a credential", got)
		}
	}
}
