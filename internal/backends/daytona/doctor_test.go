package daytona

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/daytona/daytonatest"
)

// What `sandrun doctor` asks of the backend.
var (
	_ interface {
		Orphans(context.Context, string, func(string, int, string) bool) ([]string, error)
	} = (*Backend)(nil)
	_ backends.Describer = (*Backend)(nil)
)

// TestOrphansListsWithoutDeleting: a worker killed mid-job (kill -9)
// leaves its sandbox and job running. Orphans lists that sandbox — only
// while its attempt is not live, and not for another deployment — and
// deletes nothing; ReapOrphans then deletes exactly it.
func TestOrphansListsWithoutDeleting(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	pid := killedWorker(t, f, "orphan-a")
	sbs := f.Sandboxes()
	if len(sbs) != 1 || backendtest.HostProcessGone(t, pid) {
		t.Fatalf("after the kill: %+v, job gone %v; want one sandbox, its job running", sbs, backendtest.HostProcessGone(t, pid))
	}
	id := sbs[0].ID

	b := newBackend(t, fakeConfig(f))
	var asked []string
	notLive := func(job string, _ int, worker string) bool {
		asked = append(asked, job+"/"+worker)
		return false
	}
	got, err := b.Orphans(t.Context(), "d1", notLive)
	want := "sandbox " + id + " job orphan-a attempt 1 worker helper (started)"
	if err != nil || !slices.Equal(got, []string{want}) {
		t.Fatalf("Orphans: %q, %v; want [%q]", got, err, want)
	}
	if !slices.Equal(asked, []string{"orphan-a/helper"}) {
		t.Errorf("live asked about %v", asked)
	}
	if left := f.Sandboxes(); len(left) != 1 || left[0].ID != id || len(f.Deleted()) != 0 || len(f.Kills()) != 0 || backendtest.HostProcessGone(t, pid) {
		t.Fatalf("after Orphans: sandboxes %+v, deleted %v, kills %v, job gone %v; want the orphan untouched and running",
			left, f.Deleted(), f.Kills(), backendtest.HostProcessGone(t, pid))
	}
	if got, err := b.Orphans(t.Context(), "d1", func(string, int, string) bool { return true }); err != nil || len(got) != 0 {
		t.Errorf("Orphans, attempt live: %q, %v; want none", got, err)
	}
	if got, err := b.Orphans(t.Context(), "another-deployment", notLive); err != nil || len(got) != 0 {
		t.Errorf("Orphans of another deployment: %q, %v; want none", got, err)
	}

	if n, err := b.ReapOrphans(t.Context(), "d1", notLive); err != nil || n != 1 {
		t.Fatalf("ReapOrphans: %d, %v; want 1", n, err)
	}
	backendtest.WaitGone(t, []int{pid})
	if left, deleted := f.Sandboxes(), f.Deleted(); len(left) != 0 || !slices.Equal(deleted, []string{id}) {
		t.Errorf("after ReapOrphans: sandboxes %+v, deleted %v; want none left, %s deleted", left, deleted, id)
	}
}

// TestDescribe: after Validate, Describe names the API, the key's
// variable, the organization, target and snapshot, and never the key; an
// api_url's user info and query are left out.
func TestDescribe(t *testing.T) {
	t.Parallel()
	f := daytonatest.Start(t)
	f.AddSnapshot("my-snap")
	cfg := fakeConfig(f)
	cfg.OrganizationID, cfg.Target, cfg.Snapshot, cfg.Mode = "org-1", "eu", "my-snap", ModeExecute
	b := newBackend(t, cfg)
	if err := b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	got, err := b.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"api " + f.URL, "key from " + DefaultAPIKeyEnv, "organization org-1", "target eu", "snapshot my-snap", "mode execute", "auto-stop 15m"} {
		if !strings.Contains(got, want) {
			t.Errorf("Describe: %q; want it to contain %q", got, want)
		}
	}
	if strings.Contains(got, f.APIKey) {
		t.Errorf("Describe: %q shows the API key", got)
	}

	cfg = fakeConfig(f)
	cfg.APIURL = "https://user:hunter2@daytona.example.com/api?token=t0ps3cret"
	cfg.Image = "ubuntu:24.04"
	got, err = newBackend(t, cfg).Describe(t.Context())
	if want := "api https://daytona.example.com/api, key from " + DefaultAPIKeyEnv + ", the organization's default target, image ubuntu:24.04, mode session, auto-stop 15m"; err != nil || got != want {
		t.Errorf("Describe: %q, %v; want %q", got, err, want)
	}
}
