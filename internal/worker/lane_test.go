package worker_test

import (
	"encoding/json"
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

// TestLaneNamesTheProfile: a message published straight to one profile's
// lane whose spec names another profile is refused, not run on either: a
// submitter cannot reach a profile's workers with a job for another (or
// the other way round) by choosing the subject.
func TestLaneNamesTheProfile(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	st := sandruntest.Store(t, s.ClientURL())
	reg := backends.NewRegistry()
	for _, p := range []string{"local", "gpu"} {
		lb, err := local.New(local.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Add(p, lb); err != nil {
			t.Fatal(err)
		}
	}
	sandruntest.StartWorkerWith(t, st, sandruntest.FastConfig(), reg)
	ctx := sandruntest.Ctx(t)
	ran := filepath.Join(t.TempDir(), "ran")
	spec := jobs.Spec{ID: "wrong-lane", Command: "touch " + ran, Backend: "local"}.WithDefaults()
	data, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.JS.Publish(ctx, jobs.LaneSubject(spec.Queue, "gpu", "manual.tester"), data); err != nil {
		t.Fatal(err)
	}
	c := sandruntest.Client(st)
	r := sandruntest.WaitResult(t, c, spec.ID, time.Minute)
	if r.State != jobs.StateFailed || !strings.Contains(r.Error, `backend: is "local" but the message was published to the lane of profile "gpu"`) {
		t.Fatalf("result %+v, want failed, refused for naming another profile than its lane", r)
	}
	if _, err := os.Stat(ran); !os.IsNotExist(err) {
		t.Fatalf("the command ran (%v)", err)
	}
}
