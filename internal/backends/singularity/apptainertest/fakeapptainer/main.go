//go:build linux

// Command fakeapptainer behaves like the apptainer CLI (1.5.x) for
// sandrun's tests, on machines where Apptainer cannot be installed. It is
// built and installed by package apptainertest; see there for its use.
//
// It reads fake.json from the directory of its executable (or, when run
// through a symlink, of the link) and appends one JSON line per
// invocation to the call log named there. It implements:
//
//	version, --version
//	pull  [flags] [OUT.sif] REF    REF is docker://, oras:// or library://
//	build [flags] OUT.sif REF      REF may also be an existing .sif
//	exec  [flags] IMAGE CMD ARGS…  IMAGE must be a SIF with a squashfs system partition
//	cache clean [-f] [-T types] [-n]
//
// pull and build make real SIF files (squashfs of a busybox rootfs,
// wrapped with github.com/apptainer/sif/v2). exec runs CMD on the host
// (host mode) or, with "chroot": true, in a chroot of the unpacked image
// inside new mount (and PID, network) namespaces.
//
// Where apptainer's own behaviour is known from its sources, the fake
// copies it: flags parse like pflag (not interspersed: the image ends the
// flags), flag errors and unknown commands exit 1, apptainer's own
// failures print "FATAL:   …" and exit 255, every flag can also be set as
// APPTAINER_<KEY>, signals the fake receives are forwarded to the
// payload, and a payload killed by signal N makes the fake kill itself
// with N (exit 128+N if it survives that).
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// version is what the fake reports as its package version.
const version = "1.5.3-fake"

// configName is the configuration file next to the executable.
const configName = "fake.json"

// config is fake.json.
type config struct {
	Log       string `json:"log"`        // JSON-lines call log; empty: none
	PullDelay string `json:"pull_delay"` // Go duration slept by pull and build
	FailPull  bool   `json:"fail_pull"`  // pull and build fail after the delay
	Chroot    bool   `json:"chroot"`     // exec runs in a chroot of the image

	pullDelay time.Duration
}

// fatalError is apptainer's own failure: "FATAL:   msg", exit 255.
type fatalError struct{ msg string }

func (e *fatalError) Error() string { return e.msg }

// fatalf returns a fatalError.
func fatalf(format string, args ...any) error {
	return &fatalError{msg: fmt.Sprintf(format, args...)}
}

// usageError is a command-line error reported by cobra: exit 1.
type usageError struct {
	cmd string // the command the error is for, "" for the root
	msg string
}

func (e *usageError) Error() string { return e.msg }

func main() {
	if len(os.Args) > 1 && os.Args[1] == initArg {
		os.Exit(runInit(os.Args[2:]))
	}
	cfg, err := loadConfig()
	if err != nil {
		os.Exit(report(err))
	}
	if err := logCall(cfg); err != nil {
		os.Exit(report(fatalf("fakeapptainer: call log: %v", err)))
	}
	code, err := dispatch(cfg, os.Args[1:])
	if err != nil {
		code = report(err)
	}
	os.Exit(code)
}

// report prints err as apptainer would and returns the exit code.
func report(err error) int {
	var usage *usageError
	if errors.As(err, &usage) {
		if usage.cmd == "" {
			fmt.Fprintf(os.Stderr, "Error: %s\n\n", usage.msg)
		} else {
			fmt.Fprintf(os.Stderr, "Error for command %q: %s\n\n", usage.cmd, usage.msg)
		}
		fmt.Fprintln(os.Stderr, "Run 'apptainer --help' for more detailed usage information.")
		return 1
	}
	fmt.Fprintf(os.Stderr, "FATAL:   %s\n", err)
	return 255
}

// verbosity is set by the global -q/-s flags.
var quiet bool

// info prints an INFO line like apptainer's unless -q or -s was given.
func info(format string, args ...any) {
	if !quiet {
		fmt.Fprintf(os.Stderr, "INFO:    "+format+"\n", args...)
	}
}

// realCommands are apptainer commands the fake does not implement: they
// fail loudly (FATAL) rather than as unknown commands.
var realCommands = map[string]bool{
	"run": true, "shell": true, "test": true, "instance": true, "inspect": true,
	"run-help": true, "push": true, "search": true, "sign": true, "verify": true,
	"key": true, "remote": true, "registry": true, "plugin": true, "sif": true,
	"overlay": true, "config": true, "oci": true, "delete": true, "checkpoint": true,
	"capability": true, "help": true, "completion": true, "keyserver": true,
}

// dispatch parses the global flags and runs the command.
func dispatch(cfg config, args []string) (int, error) {
	global, rest, err := parseFlags("", globalFlags, args)
	if err != nil {
		return 0, err
	}
	quiet = global.bool("quiet") || global.bool("silent")
	if global.bool("version") {
		fmt.Printf("apptainer version %s\n", version)
		return 0, nil
	}
	if len(rest) == 0 {
		return 0, &usageError{msg: "no command given"}
	}
	cmd, args := rest[0], rest[1:]
	switch cmd {
	case "version":
		fmt.Println(version)
		return 0, nil
	case "pull":
		return 0, cmdPull(cfg, args)
	case "build":
		return 0, cmdBuild(cfg, args)
	case "exec":
		return cmdExec(cfg, args)
	case "cache":
		return 0, cmdCache(args)
	}
	if realCommands[cmd] {
		return 0, fatalf("fakeapptainer: %q is an apptainer command the test double does not implement", cmd)
	}
	return 0, &usageError{msg: fmt.Sprintf("unknown command %q for \"apptainer\"", cmd)}
}

// loadConfig reads fake.json. A missing file gives the defaults.
func loadConfig() (config, error) {
	var cfg config
	path := configPath()
	if path == "" {
		return cfg, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return cfg, fatalf("fakeapptainer: %v", err)
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return cfg, fatalf("fakeapptainer: %s: %v", path, err)
	}
	if cfg.PullDelay != "" {
		if cfg.pullDelay, err = time.ParseDuration(cfg.PullDelay); err != nil {
			return cfg, fatalf("fakeapptainer: %s: pull_delay: %v", path, err)
		}
	}
	return cfg, nil
}

// configPath finds fake.json: next to the executable, else next to the
// name it was run by (a symlink, whose target /proc/self/exe shows).
func configPath() string {
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	if arg0 := os.Args[0]; strings.Contains(arg0, "/") {
		dirs = append(dirs, filepath.Dir(arg0))
	} else if p, err := lookPath(arg0, os.Getenv("PATH")); err == nil {
		dirs = append(dirs, filepath.Dir(p))
	}
	for _, d := range dirs {
		p := filepath.Join(d, configName)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// call is one line of the call log.
type call struct {
	Args []string          `json:"args"`
	Env  map[string]string `json:"env"`
	Dir  string            `json:"dir"`
	PID  int               `json:"pid"`
}

// logCall appends this invocation to the call log in one write.
func logCall(cfg config) error {
	if cfg.Log == "" {
		return nil
	}
	c := call{Args: os.Args[1:], Env: map[string]string{}, PID: os.Getpid()}
	if c.Args == nil {
		c.Args = []string{}
	}
	c.Dir, _ = os.Getwd()
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "APPTAINER") || strings.HasPrefix(k, "SINGULARITY") {
			c.Env[k] = v
		}
	}
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(cfg.Log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
