//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// initArg makes the fake run as the container's init (runInit) in the
// namespaces runChroot created. It is not an apptainer command and is not
// logged.
const initArg = "__fakeapptainer-init"

// initSpec tells the init how to build the container.
type initSpec struct {
	Root          string     `json:"root"`    // the unpacked image (shared, never written)
	Staging       string     `json:"staging"` // a host directory the init mounts its tmpfs on (shared: each init's mount is private)
	Mounts        []bindSpec `json:"mounts"`  // host binds in order: home, cwd, --bind
	HomeTmpfs     string     `json:"home_tmpfs,omitempty"`
	Contain       bool       `json:"contain"`
	PidNS         bool       `json:"pid_ns"`
	NetNS         bool       `json:"net_ns"`
	WritableTmpfs bool       `json:"writable_tmpfs"`
	Cwd           string     `json:"cwd"`
	CustomCwd     bool       `json:"custom_cwd"`
	HomeDst       string     `json:"home_dst"`
	Argv          []string   `json:"argv"`
	Env           []string   `json:"env"`
}

// runChroot runs the payload in a chroot of the image: the fake starts
// itself as init in new mount (and PID, IPC, network) namespaces; the
// init mounts an overlay of the unpacked image, the binds, /proc, /dev and
// /tmp, chroots, and runs the payload. The payload's wait status comes
// back through a pipe.
func runChroot(o *execOptions, img image) (syscall.WaitStatus, error) {
	root, err := unpackedRoot(o.image, img)
	if err != nil {
		return 0, err
	}
	staging := filepath.Join(workBase(), "staging")
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return 0, fatalf("%v", err)
	}
	spec := initSpec{
		Root: root, Staging: staging, Contain: o.contain, PidNS: o.pidNS, NetNS: o.netNS,
		WritableTmpfs: o.writableTmpfs, Cwd: o.cwd, CustomCwd: o.customCwd, HomeDst: o.home.Dst,
		Argv: o.argv, Env: o.env,
	}
	if !o.noHome {
		if o.contain {
			spec.HomeTmpfs = o.home.Dst
		} else {
			spec.Mounts = append(spec.Mounts, o.home)
		}
	}
	if cwd, err := os.Getwd(); err == nil && !o.contain && !underSystemDir(cwd) {
		spec.Mounts = append(spec.Mounts, bindSpec{Src: cwd, Dst: cwd})
	}
	spec.Mounts = append(spec.Mounts, o.binds...)
	data, err := json.Marshal(spec)
	if err != nil {
		return 0, fatalf("%v", err)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, fatalf("%v", err)
	}
	// The spec goes in an unlinked file on fd 4 (not in argv, where the
	// payload could read the environment from /proc); the payload's wait
	// status comes back through a pipe on fd 3.
	specFile, err := os.CreateTemp(workBase(), "spec-")
	if err != nil {
		return 0, fatalf("%v", err)
	}
	defer func() { _ = specFile.Close() }()
	_ = os.Remove(specFile.Name())
	if _, err := specFile.Write(data); err != nil {
		return 0, fatalf("%v", err)
	}
	if _, err := specFile.Seek(0, io.SeekStart); err != nil {
		return 0, fatalf("%v", err)
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return 0, fatalf("%v", err)
	}
	defer func() { _ = statusR.Close() }()
	flags := uintptr(syscall.CLONE_NEWNS)
	if o.pidNS {
		flags |= syscall.CLONE_NEWPID
	}
	if o.ipcNS {
		flags |= syscall.CLONE_NEWIPC
	}
	if o.netNS {
		flags |= syscall.CLONE_NEWNET
	}
	// Pdeathsig belongs to the thread that starts the child.
	runtime.LockOSThread()
	cmd := &exec.Cmd{
		Path: self, Args: []string{self, initArg},
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		ExtraFiles:  []*os.File{statusW, specFile},
		SysProcAttr: &syscall.SysProcAttr{Cloneflags: flags, Pdeathsig: syscall.SIGKILL},
	}
	ws, err := runForwarding(cmd)
	_ = statusW.Close()
	if err != nil {
		return 0, fatalf("could not start the container (chroot mode needs root and namespaces): %v", err)
	}
	var buf [4]byte
	if _, err := io.ReadFull(statusR, buf[:]); err == nil {
		ws = syscall.WaitStatus(binary.LittleEndian.Uint32(buf[:]))
	}
	return ws, nil
}

// underSystemDir reports whether a host directory is one apptainer never
// binds as the working directory (it is mounted already, or is the root).
func underSystemDir(dir string) bool {
	for _, d := range []string{"/proc", "/sys", "/dev", "/tmp", "/var/tmp"} {
		if dir == d || len(dir) > len(d) && dir[:len(d)+1] == d+"/" {
			return true
		}
	}
	return dir == "/"
}

// workBase is where chroot mode keeps its files, shared by every fake:
// unpacked images, the staging mount point, specs being handed over.
func workBase() string { return filepath.Join(os.TempDir(), "fakeapptainer") }

// staleAfter is how long an unpacked image may go unused before a fake
// that unpacks another one removes it.
const staleAfter = 24 * time.Hour

// unpackedRoot unpacks the image's system partition once: into a cache
// under workBase() keyed by the partition's content (identical images
// share it; the fake never writes to it). Using an entry refreshes its
// time; entries unused for staleAfter are removed.
func unpackedRoot(path string, img image) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fatalf("could not open image %s: %v", path, err)
	}
	h := sha256.New()
	_, err = io.Copy(h, io.NewSectionReader(f, img.offset, img.size))
	_ = f.Close()
	if err != nil {
		return "", fatalf("could not read image %s: %v", path, err)
	}
	key := hex.EncodeToString(h.Sum(nil))[:32]
	base := filepath.Join(workBase(), "rootfs")
	dst := filepath.Join(base, key)
	if st, err := os.Stat(dst); err == nil && st.IsDir() {
		now := time.Now()
		_ = os.Chtimes(dst, now, now)
		return dst, nil
	}
	pruneStale(base)
	if err := os.MkdirAll(base, 0o750); err != nil {
		return "", fatalf("%v", err)
	}
	tmp, err := os.MkdirTemp(base, key+".tmp-")
	if err != nil {
		return "", fatalf("%v", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	out := filepath.Join(tmp, "root")
	unsq := exec.Command("unsquashfs", "-no-progress", "-quiet", //nolint:gosec // unpacks the image it was given, as apptainer --unsquash does
		"-offset", strconv.FormatInt(img.offset, 10), "-dest", out, path)
	if msg, err := unsq.CombinedOutput(); err != nil {
		return "", fatalf("could not unpack image %s: %v: %s", path, err, msg)
	}
	// The image's times are fixed (1970); the entry's time is its last use.
	now := time.Now()
	if err := os.Chtimes(out, now, now); err != nil {
		return "", fatalf("%v", err)
	}
	if err := os.Rename(out, dst); err != nil {
		// Another fake may have unpacked the same image first.
		if st, serr := os.Stat(dst); serr != nil || !st.IsDir() {
			return "", fatalf("could not unpack image %s: %v", path, err)
		}
	}
	return dst, nil
}

// pruneStale removes the unpacked images in base unused for staleAfter.
func pruneStale(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleAfter {
			_ = os.RemoveAll(filepath.Join(base, e.Name()))
		}
	}
}

// runInit is the container's init: it builds the container's mounts,
// chroots, runs the payload, forwards signals to it, reaps orphans, and
// reports the payload's wait status on fd 3 before exiting with it. Its
// spec is on fd 4.
func runInit(args []string) int {
	// The payload must hold neither the status pipe nor the spec.
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	status, specFile := os.NewFile(3, "status"), os.NewFile(4, "spec")
	var spec initSpec
	data, err := io.ReadAll(specFile)
	_ = specFile.Close()
	if len(args) != 0 || err != nil || json.Unmarshal(data, &spec) != nil || len(spec.Argv) == 0 {
		return report(fatalf("fakeapptainer: bad init spec"))
	}
	if err := setupContainer(&spec); err != nil {
		return report(err)
	}
	path, err := lookPath(spec.Argv[0], envValue(spec.Env, "PATH"))
	if err != nil {
		return report(fatalf("%q: executable file not found in $PATH", spec.Argv[0]))
	}
	ws, err := runPayload(path, spec.Argv, spec.Env)
	if err != nil {
		return report(err)
	}
	var buf [4]byte
	binary.LittleEndian.PutUint32(buf[:], uint32(ws))
	_, _ = status.Write(buf[:])
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}

// mountPoint makes target (a directory, or an empty file when dir is
// false) exist.
func mountPoint(target string, dir bool) error {
	if dir {
		return os.MkdirAll(target, 0o750)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}

// chdirIn enters the working directory inside the chroot as apptainer's
// SetWorkingDirectory does: a --pwd that fails is fatal, the default one
// (home when contained, else the host's) falls back with a warning to
// home, then to /.
func chdirIn(s *initSpec) error {
	err := os.Chdir(s.Cwd)
	switch {
	case err == nil:
	case s.CustomCwd:
		return fatalf("failed to set working directory: %v", err)
	case os.Chdir(s.HomeDst) == nil:
		warn("Error changing the container working directory. Using '%s' instead: %v", s.HomeDst, err)
	default:
		warn("Error changing the container working directory. Using '/' instead: chdir %s: no such file or directory", s.HomeDst)
		return os.Chdir("/")
	}
	return nil
}
