package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/sandruntest"
)

func sandrunIn(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli{stdout: &out, stderr: &errb, stdin: strings.NewReader(stdin)}.run(args)
	return code, out.String(), errb.String()
}

func TestSchedulesCLI(t *testing.T) {
	t.Parallel()
	s := sandruntest.Server(t, "")
	sandruntest.Store(t, s.ClientURL())
	url := s.ClientURL()
	file := `schedules:
  - name: nightly
    cron: "30 2 * * *"
    time_zone: Europe/Madrid
    overlap: forbid
    job: {command: "echo nightly", queue: nobody}
`
	if code, out, errOut := sandrunIn(t, file, "schedules", "add", "--nats-url", url, "-"); code != 0 || !strings.Contains(out, "nightly saved") {
		t.Fatalf("add: %d %q %q", code, out, errOut)
	}
	code, out, _ := sandrun(t, "schedules", "ls", "--nats-url", url, "--json")
	var rows []struct {
		Name      string `json:"name"`
		Next      string `json:"next"`
		Suspended bool   `json:"suspended"`
	}
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 || rows[0].Name != "nightly" || rows[0].Next == "" {
		t.Fatalf("ls: %d %v %q", code, err, out)
	}
	if !strings.Contains(rows[0].Next, "T02:30:00+0") {
		t.Fatalf("next fire %q is not 02:30 Madrid time", rows[0].Next)
	}
	if code, _, errOut := sandrun(t, "schedules", "suspend", "--nats-url", url, "nightly"); code != 0 {
		t.Fatalf("suspend: %d %q", code, errOut)
	}
	_, out, _ = sandrun(t, "schedules", "ls", "--nats-url", url, "--json")
	if !strings.Contains(out, `"suspended": true`) {
		t.Fatalf("not suspended: %s", out)
	}
	if code, _, _ := sandrun(t, "schedules", "resume", "--nats-url", url, "nightly"); code != 0 {
		t.Fatal("resume failed")
	}
	code, out, _ = sandrun(t, "schedules", "trigger", "--nats-url", url, "nightly")
	id := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(id, "cron-nightly-trigger-") {
		t.Fatalf("trigger: %d %q", code, out)
	}
	if code, out, _ = sandrun(t, "schedules", "history", "--nats-url", url, "nightly"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "trigger") {
		t.Fatalf("history: %d %q", code, out)
	}
	// No worker serves the schedule's queue here: the job is dispatched,
	// and has no record until one claims it.
	if code, _, errOut := sandrun(t, "status", "--nats-url", url, id); code == 0 || !strings.Contains(errOut, "not claimed") {
		t.Fatalf("status of the triggered, unclaimed job: %d %q", code, errOut)
	}
	bad := "schedules:\n  - {name: broken, cron: '@every 1s', time_zone: Mars/Olympus, job: {command: x}}\n"
	if code, _, errOut := sandrunIn(t, bad, "schedules", "add", "--nats-url", url, "-"); code == 0 || !strings.Contains(errOut, "schedules.broken.time_zone") {
		t.Fatalf("bad add: %d %q", code, errOut)
	}
	if code, _, _ = sandrun(t, "schedules", "rm", "--nats-url", url, "nightly"); code != 0 {
		t.Fatal("rm failed")
	}
	if code, _, errOut := sandrun(t, "schedules", "history", "--nats-url", url, "nightly"); code == 0 || !strings.Contains(errOut, "no such schedule") {
		t.Fatalf("history after rm: %d %q", code, errOut)
	}
}
