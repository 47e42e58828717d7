// Command sandrun-backend-localexec is the reference sandrun backend
// plugin. It runs each job as `SHELL -c COMMAND` in a process group of its
// own on this host, much as sandrun's built-in local backend does, and
// speaks protocol v2 (docs/plugins.md) with the sandrun worker that
// started it: the session line and one request per process, read from
// stdin; events written to stdout, each signed with the session's key;
// its own log on stderr.
//
// Build it and put it on the worker's PATH, where a backend profile named
// localexec finds it:
//
//	go build -o /usr/local/bin/sandrun-backend-localexec ./examples/plugin/sandrun-backend-localexec
//
// Flags (a profile's args): -shell, the shell that runs job commands
// (default /bin/sh).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"syscall"
)

const (
	protocol    = 2
	name        = "localexec"
	version     = "1.0.0"
	protocolEnv = "SANDRUN_PLUGIN_PROTOCOL"
	// maxRequest bounds one request line: a run request carries the
	// job's command and environment.
	maxRequest = 16 << 20
)

func main() {
	shell := flag.String("shell", "/bin/sh", "the shell that runs `SHELL -c COMMAND`")
	flag.Parse()
	logger := log.New(os.Stderr, "", 0) // The worker adds time and level.
	switch v := os.Getenv(protocolEnv); v {
	case "":
		logger.Print("this is a sandrun backend plugin: a sandrun worker starts it (see docs/plugins.md)")
		os.Exit(2)
	case strconv.Itoa(protocol):
	default:
		logger.Printf("started by a sandrun that speaks protocol %s; this plugin speaks protocol %d", v, protocol)
		os.Exit(2)
	}
	// Jobs run as this plugin's user. Not dumpable, this process's
	// /proc files (its memory, which holds the session key, and its
	// stdout, which jobs could write forged events to) are closed to them.
	// The signatures are what keeps forged events out; this is one more
	// fence.
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		logger.Printf("prctl(PR_SET_DUMPABLE, 0): %v", errno)
	}
	os.Exit(serve(*shell, os.Stdin, os.Stdout, logger))
}

// serve answers the one request of this process and returns the exit
// status. It returns once the request has had its last event.
func serve(shell string, stdin io.Reader, stdout io.Writer, logger *log.Logger) int {
	requests := bufio.NewScanner(stdin)
	requests.Buffer(make([]byte, 0, 64<<10), maxRequest)
	// The session line first: its key signs every event, the hello too.
	if !requests.Scan() {
		logger.Print("no session line: the host went away")
		return 2
	}
	var s session
	if err := json.Unmarshal(requests.Bytes(), &s); err != nil || s.Type != "session" || s.Protocol != protocol || s.Key == "" {
		// Not the line: it holds the key.
		logger.Printf("the first line is not a protocol %d session line with a key", protocol)
		return 2
	}
	ev := newEvents(stdout, s.Key)
	err := ev.send(hello{Type: "hello", Protocol: protocol, Name: name, Version: version,
		Capabilities: map[string]bool{"resource_usage": true}})
	if err != nil {
		logger.Printf("writing hello: %v", err)
		return 1
	}
	if !requests.Scan() {
		return 0 // The host went away without a request.
	}
	var req request
	if err := json.Unmarshal(requests.Bytes(), &req); err != nil {
		logger.Printf("reading the request: %v", err) // Not the line: it may hold secrets.
		return 2
	}
	switch req.Type {
	case "validate":
		err = ev.send(validate(shell, req.ID))
	case "run":
		err = run(shell, req, requests, ev, logger)
	default:
		err = ev.send(failure{Type: "error", ID: req.ID, Message: fmt.Sprintf("unexpected request type %q", req.Type)})
	}
	if err != nil {
		logger.Printf("writing events: %v", err)
		return 1
	}
	return 0
}

// validate checks that the shell is an executable file.
func validate(shell, id string) any {
	fi, err := os.Stat(shell)
	switch {
	case err != nil:
		return failure{Type: "error", ID: id, Message: fmt.Sprintf("shell: %v", err)}
	case !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0:
		return failure{Type: "error", ID: id, Message: fmt.Sprintf("shell: %s is not an executable file", shell)}
	}
	return reply{Type: "valid", ID: id}
}

// run runs the job of req, following the host's cancels on requests.
func run(shell string, req request, requests *bufio.Scanner, ev *events, logger *log.Logger) error {
	j, err := startJob(shell, req.ID, req.Spec, ev)
	if err != nil {
		return ev.send(failure{Type: "error", ID: req.ID, Message: err.Error(), Permanent: isPermanent(err)})
	}
	go follow(requests, req.ID, j, logger)
	return ev.send(j.wait())
}

// follow reads the host's requests during a run: cancels. The end of
// stdin means the host is gone: nobody will read the output, so the job
// is killed. follow may still be reading when the plugin exits.
func follow(requests *bufio.Scanner, id string, j *job, logger *log.Logger) {
	for requests.Scan() {
		var req request
		if err := json.Unmarshal(requests.Bytes(), &req); err != nil || req.Type != "cancel" || req.ID != id {
			logger.Printf("ignoring an unexpected request during run %s", id)
			continue
		}
		if req.Force {
			j.kill()
		} else {
			j.terminate()
		}
	}
	j.kill()
}
