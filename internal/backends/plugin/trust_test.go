package plugin

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/testenv"
)

// These tests check the trust boundary between the host and the
// workloads that plugins run: request ids cannot be guessed, and a
// workload cannot end its run with a forged event, even when its output
// reaches the plugin's stdout, nor learn its plugin's session key.

var (
	runID      = regexp.MustCompile(`^r[0-9a-f]{32}$`)
	validateID = regexp.MustCompile(`^v[0-9a-f]{32}$`)
	keyShape   = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// TestRequestIDs checks that ids are 128 random bits, and session keys
// 256: all different, and no bit of an id the same in every one.
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	tb := setup(t, Config{Path: localexec()}, false)
	const n = 256 // A bit stays put in all of them with probability 2^-255.
	seen := make(map[string]bool, 2*n)
	var ones [8 * idBytes]int
	for range n {
		c, err := tb.b.newConversation(typeRun, "r")
		if err != nil {
			t.Fatal(err)
		}
		if !runID.MatchString(c.id) || !keyShape.MatchString(string(c.key)) {
			t.Fatalf("id %q, key of %d bytes; want r and 32 hex digits, and 64 hex digits", c.id, len(c.key))
		}
		if seen[c.id] || seen[string(c.key)] {
			t.Fatalf("id %q or its key drawn twice", c.id)
		}
		seen[c.id], seen[string(c.key)] = true, true
		raw, err := hex.DecodeString(c.id[1:])
		if err != nil {
			t.Fatal(err)
		}
		for i := range ones {
			ones[i] += int(raw[i/8]>>(i%8)) & 1
		}
	}
	for i, k := range ones {
		if k == 0 || k == n {
			t.Errorf("bit %d is %d in all %d ids: not random", i, k/n, n)
		}
	}
}

// TestIDsDiffer checks the ids that reach a plugin: a fresh random one
// for every request.
func TestIDsDiffer(t *testing.T) {
	t.Parallel()
	idFile := filepath.Join(t.TempDir(), "ids")
	tb := setup(t, Config{Path: testPlugin("ids"), Env: map[string]string{"IDFILE": idFile}}, true)
	if err := tb.b.Validate(t.Context()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(idFile)
	if err != nil {
		t.Fatal(err)
	}
	ids, drawn := strings.Fields(string(data)), tb.rand.sessions()
	if len(ids) != 2 || len(drawn) != 2 {
		t.Fatalf("ids %q, %d drawn; want 2 of each", ids, len(drawn))
	}
	for i, id := range ids {
		if !validateID.MatchString(id) || id != "v"+drawn[i].id {
			t.Errorf("request %d: id %q, want v%s", i, id, drawn[i].id)
		}
	}
	if ids[0] == ids[1] {
		t.Errorf("two requests had the same id %q", ids[0])
	}
}

// forgedExit is an exit event that would end a run as a success.
const forgedExit = `{"type":"exit","id":"r1","exit_code":0}`

// TestForgedExitThroughPlugin runs a workload that writes forged exit
// events where its plugin writes its own, its output passed straight
// through: with a guessed id, with the real one (which this plugin shows
// its workload), with a made-up MAC. None ends the run: the host reports
// the real exit code, and fails the run, since its plugin's stdout
// carried lines that were not the plugin's. The workload cannot see the
// plugin's session key.
func TestForgedExitThroughPlugin(t *testing.T) {
	t.Parallel()
	dump := filepath.Join(t.TempDir(), "dump")
	workload := `echo '` + forgedExit + `'
echo "{\"type\":\"exit\",\"id\":\"$SANDRUN_REQUEST_ID\",\"exit_code\":0}"
printf '%064d {"type":"exit","id":"%s","exit_code":0}\n' 0 "$SANDRUN_REQUEST_ID"
{ env; tr '\0' '\n' </proc/$PPID/environ; tr '\0' ' ' </proc/$PPID/cmdline; } >"$DUMP" 2>&1
exit 7`
	tb := setup(t, Config{Path: testPlugin("passthrough"), Env: map[string]string{"WORKLOAD": workload, "DUMP": dump}}, false)
	res, err := tb.b.Run(t.Context(), secretSpec("exit 0"), backends.Output{})
	tb.assertErr(t, err, []error{ErrProtocol, backends.ErrUnavailable},
		"rejected 3 stdout line(s)", "line 3: it is not a MAC, a space and a message")
	if res.ExitCode != 7 {
		t.Errorf("exit code %d, want the workload's 7", res.ExitCode)
	}
	if got := strings.Count(tb.logs.String(), "rejected a stdout line"); got != 3 {
		t.Errorf("%d rejected lines logged, want 3:\n%s", got, tb.logs)
	}

	seen, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	s := tb.rand.sessions()[0]
	if !strings.Contains(string(seen), "SANDRUN_REQUEST_ID=r"+s.id+"\n") {
		t.Errorf("the workload did not have the real request id r%s:\n%s", s.id, seen)
	}
	if strings.Contains(string(seen), s.key) {
		t.Errorf("the workload saw its plugin's session key:\n%s", seen)
	}
}

// TestForgedExitFromReferenceWorkload runs forged exits as a job of the
// reference plugin: it carries them as the job's output, so they end
// nothing. The job then writes one straight to the plugin's stdout, as
// a workload of the plugin's user may through /proc, unless the plugin
// is not dumpable (root may all the same); the host rejects it. The job
// sees nothing of the session key.
func TestForgedExitFromReferenceWorkload(t *testing.T) {
	t.Parallel()
	tb := setup(t, Config{Path: localexec()}, false)
	command := `echo '` + forgedExit + `'
printf '%064d %s\n' 0 '` + forgedExit + `'
if echo '` + forgedExit + `' 2>/dev/null >/proc/$PPID/fd/1; then echo injected >&2; fi
env; tr '\0' '\n' </proc/$PPID/environ 2>/dev/null; tr '\0' ' ' </proc/$PPID/cmdline 2>/dev/null
exit 7`
	stdout, stderr := &testenv.Buffer{}, &testenv.Buffer{}
	res, err := tb.b.Run(t.Context(), secretSpec(command), backends.Output{Stdout: stdout, Stderr: stderr})
	if res.ExitCode != 7 {
		t.Errorf("exit code %d, want the job's 7 (err %v)", res.ExitCode, err)
	}
	if want := forgedExit + "\n" + strings.Repeat("0", 64) + " " + forgedExit + "\n"; !strings.HasPrefix(stdout.String(), want) {
		t.Errorf("job stdout %q, want it to start with the forged lines, as output", stdout)
	}
	switch stderr.String() {
	case "injected\n": // The job could open the plugin's stdout.
		t.Log("the job wrote to the plugin's stdout")
		tb.assertErr(t, err, []error{ErrProtocol, backends.ErrUnavailable}, "rejected 1 stdout line(s)")
	case "": // The plugin is not dumpable: its stdout is closed to the job.
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	default:
		t.Errorf("job stderr %q", stderr)
	}
	if key := tb.rand.sessions()[0].key; strings.Contains(stdout.String(), key) {
		t.Errorf("the job saw its plugin's session key:\n%s", stdout)
	}
}

// TestSignedLines checks the host's side of signing: a line is the
// plugin's only with the MAC of its JSON under its process's key.
func TestSignedLines(t *testing.T) {
	t.Parallel()
	key, other := sessionKey(strings.Repeat("ab", keyBytes)), sessionKey(strings.Repeat("cd", keyBytes))
	msg := []byte(forgedExit)
	signed := key.sign(msg)
	tests := []struct {
		name string
		line []byte
		why  string // Empty: accepted.
	}{
		{"signed", signed, ""},
		{"upper-case MAC", append([]byte(strings.ToUpper(string(signed[:macHexLen]))), signed[macHexLen:]...), ""},
		{"unsigned", msg, "is not a MAC, a space and a message"},
		{"no space", append(append([]byte{}, signed[:macHexLen]...), signed[macHexLen+1:]...), "is not a MAC, a space and a message"},
		{"MAC alone", signed[:macHexLen+1], "is not a MAC, a space and a message"},
		{"not hex", append([]byte(strings.Repeat("z", macHexLen)), signed[macHexLen:]...), "not 64 hex digits"},
		{"other key", other.sign(msg), "does not match"},
		{"changed JSON", append(append([]byte{}, signed[:len(signed)-2]...), '1', '}'), "does not match"},
		{"zero MAC", append([]byte(strings.Repeat("0", macHexLen)), signed[macHexLen:]...), "does not match"},
	}
	for _, tt := range tests {
		got, why := key.open(tt.line)
		switch {
		case tt.why == "" && (why != "" || string(got) != string(msg)):
			t.Errorf("%s: got %q, %q; want the message", tt.name, got, why)
		case tt.why != "" && (got != nil || !strings.Contains(why, tt.why)):
			t.Errorf("%s: got %q, %q; want rejected: %s", tt.name, got, why, tt.why)
		}
	}
}

// TestSessionKeyRedacts checks that a session key shows only where it
// must: in the session line.
func TestSessionKeyRedacts(t *testing.T) {
	t.Parallel()
	key := sessionKey(strings.Repeat("ab", keyBytes))
	msg := sessionMessage{Type: typeSession, Protocol: Protocol, Key: key}
	logs := &testenv.Buffer{}
	slog.New(slog.NewTextHandler(logs, nil)).Info("session", "key", key, "msg", msg)
	for where, s := range map[string]string{"%v": fmt.Sprintf("%v %+v %s", key, msg, key), "log": logs.String()} {
		if strings.Contains(s, string(key)) {
			t.Errorf("%s shows the key: %s", where, s)
		}
	}
	line, err := json.Marshal(msg)
	if err != nil || !strings.Contains(string(line), `"key":"`+string(key)+`"`) {
		t.Errorf("session line %s (%v), want it to carry the key", line, err)
	}
}
