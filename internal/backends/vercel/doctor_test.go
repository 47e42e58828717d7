package vercel

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/backendtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
)

// What `sandrun doctor` asks of the backend.
var (
	_ interface {
		Orphans(context.Context, string, func(string, int, string) bool) ([]string, error)
	} = (*Backend)(nil)
	_ backends.Describer = (*Backend)(nil)
)

// TestOrphansListsWithoutRemoving: a worker killed mid-job (kill -9)
// leaves its sandbox and job running. Orphans lists that sandbox — only
// while its attempt is not live, and not for another deployment — and
// neither stops nor deletes it; ReapOrphans then removes exactly it.
func TestOrphansListsWithoutRemoving(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	pid := killedWorker(t, f, "orphan-a")
	sbs := f.Sandboxes()
	if len(sbs) != 1 || backendtest.HostProcessGone(t, pid) {
		t.Fatalf("after the kill: %+v, job gone %v; want one sandbox, its job running", sbs, backendtest.HostProcessGone(t, pid))
	}
	name := sbs[0].Name

	b := newBackend(t, fakeConfig(f))
	var asked []string
	notLive := func(job string, _ int, worker string) bool {
		asked = append(asked, job+"/"+worker)
		return false
	}
	got, err := b.Orphans(t.Context(), "d1", notLive)
	want := "sandbox " + name + " job orphan-a attempt 1 worker helper (running)"
	if err != nil || !slices.Equal(got, []string{want}) {
		t.Fatalf("Orphans: %q, %v; want [%q]", got, err, want)
	}
	if !slices.Equal(asked, []string{"orphan-a/helper"}) {
		t.Errorf("live asked about %v", asked)
	}
	if left := f.Sandboxes(); len(left) != 1 || left[0].Name != name || len(f.Deleted()) != 0 || len(f.Stopped()) != 0 ||
		len(f.Kills()) != 0 || backendtest.HostProcessGone(t, pid) {
		t.Fatalf("after Orphans: sandboxes %+v, deleted %v, stopped %v, kills %v, job gone %v; want the orphan untouched and running",
			left, f.Deleted(), f.Stopped(), f.Kills(), backendtest.HostProcessGone(t, pid))
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
	if left, deleted := f.Sandboxes(), f.Deleted(); len(left) != 0 || !slices.Equal(deleted, []string{name}) {
		t.Errorf("after ReapOrphans: sandboxes %+v, deleted %v; want none left, %s deleted", left, deleted, name)
	}
}

// TestDescribe: after Validate, Describe names the API, the team and
// project, where the token comes from and the sandboxes' make, and never
// the token — an access token or an OIDC one; an api_url's user info and
// query are left out.
func TestDescribe(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	cfg := fakeConfig(f)
	cfg.Runtime, cfg.VCPUs, cfg.NetworkPolicy = "python3.13", 4, NetworkDenyAll
	oidc := Config{APIURL: f.URL, LookupEnv: envOf(map[string]string{DefaultOIDCTokenEnv: f.OIDCToken()})}
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{cfg, []string{"access token from " + DefaultTokenEnv, "runtime python3.13", "4 vCPUs", "network deny-all"}},
		{oidc, []string{"OIDC token from " + DefaultOIDCTokenEnv + " (expires ", "runtime " + DefaultRuntime, "network allow-all"}},
	} {
		b := newBackend(t, c.cfg)
		if err := b.Validate(t.Context()); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		got, err := b.Describe(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range append(c.want, "api "+f.URL, "team "+f.TeamID, "project "+f.ProjectID, "sandbox timeout 45m0s") {
			if !strings.Contains(got, want) {
				t.Errorf("Describe: %q; want it to contain %q", got, want)
			}
		}
		for _, token := range []string{f.Token, f.OIDCToken()} {
			if strings.Contains(got, token) {
				t.Errorf("Describe: %q shows a token", got)
			}
		}
	}

	cfg = fakeConfig(f)
	cfg.APIURL = "https://user:hunter2@vercel.example.com/api?token=t0ps3cret"
	got, err := newBackend(t, cfg).Describe(t.Context())
	if err != nil || strings.Contains(got, "hunter2") || strings.Contains(got, "t0ps3cret") || !strings.Contains(got, "api https://vercel.example.com/api,") {
		t.Errorf("Describe: %q, %v; want the api_url without its user info and query", got, err)
	}
}
