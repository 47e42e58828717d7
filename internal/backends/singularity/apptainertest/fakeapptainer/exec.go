//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/apptainer/sif/v2/pkg/sif"
)

// execFlags are the action flags of apptainer exec
// (cmd/internal/cli/action_flags.go), with their APPTAINER_<KEY> names.
var execFlags = []flagDef{
	{name: "app", kind: stringFlag, env: []string{"APP", "APPNAME"}},
	{name: "bind", short: "B", kind: arrayFlag, env: []string{"BIND", "BINDPATH"}},
	{name: "mount", kind: arrayFlag, env: []string{"MOUNT"}},
	{name: "home", short: "H", kind: stringFlag, env: []string{"HOME"}},
	{name: "overlay", short: "o", kind: sliceFlag, env: []string{"OVERLAY", "OVERLAYIMAGE"}},
	{name: "scratch", short: "S", kind: sliceFlag, env: []string{"SCRATCH", "SCRATCHDIR"}},
	{name: "workdir", short: "W", kind: stringFlag, env: []string{"WORKDIR"}},
	{name: "disable-cache", kind: boolFlag, env: []string{"DISABLE_CACHE"}},
	{name: "cwd", kind: stringFlag, env: []string{"CWD", "TARGET_CWD"}},
	{name: "pwd", kind: stringFlag, env: []string{"PWD", "TARGET_PWD"}},
	{name: "hostname", kind: stringFlag, env: []string{"HOSTNAME"}},
	{name: "network", kind: stringFlag, env: []string{"NETWORK"}},
	{name: "network-args", kind: sliceFlag, env: []string{"NETWORK_ARGS"}},
	{name: "dns", kind: stringFlag, env: []string{"DNS"}},
	{name: "security", kind: sliceFlag, env: []string{"SECURITY"}},
	{name: "apply-cgroups", kind: stringFlag, env: []string{"APPLY_CGROUPS"}},
	{name: "containlibs", kind: sliceFlag, env: []string{"CONTAINLIBS"}},
	{name: "fusemount", kind: sliceFlag, env: []string{"FUSESPEC"}},
	{name: "tmpdir", kind: stringFlag, env: []string{"TMPDIR"}},
	{name: "fakeroot", short: "f", kind: boolFlag, env: []string{"FAKEROOT"}},
	{name: "cleanenv", short: "e", kind: boolFlag, env: []string{"CLEANENV"}},
	{name: "compat", kind: boolFlag, env: []string{"COMPAT"}},
	{name: "contain", short: "c", kind: boolFlag, env: []string{"CONTAIN"}},
	{name: "containall", short: "C", kind: boolFlag, env: []string{"CONTAINALL"}},
	{name: "nv", kind: boolFlag, env: []string{"NV"}},
	{name: "nvccli", kind: boolFlag, env: []string{"NVCCLI"}},
	{name: "rocm", kind: boolFlag, env: []string{"ROCM"}},
	{name: "writable", short: "w", kind: boolFlag, env: []string{"WRITABLE"}},
	{name: "writable-tmpfs", kind: boolFlag, env: []string{"WRITABLE_TMPFS"}},
	{name: "no-home", kind: boolFlag, env: []string{"NO_HOME"}},
	{name: "no-mount", kind: sliceFlag, env: []string{"NO_MOUNT"}},
	{name: "no-init", kind: boolFlag, env: []string{"NOSHIMINIT"}},
	{name: "no-nv", kind: boolFlag, env: []string{"NV_OFF", "NO_NV"}},
	{name: "no-rocm", kind: boolFlag, env: []string{"ROCM_OFF", "NO_ROCM"}},
	{name: "pid", short: "p", kind: boolFlag, env: []string{"PID", "UNSHARE_PID"}},
	{name: "ipc", short: "i", kind: boolFlag, env: []string{"IPC", "UNSHARE_IPC"}},
	{name: "net", short: "n", kind: boolFlag, env: []string{"NET", "UNSHARE_NET"}},
	{name: "uts", kind: boolFlag, env: []string{"UTS", "UNSHARE_UTS"}},
	{name: "userns", short: "u", kind: boolFlag, env: []string{"USERNS", "UNSHARE_USERNS"}},
	{name: "keep-privs", kind: boolFlag, env: []string{"KEEP_PRIVS"}},
	{name: "no-privs", kind: boolFlag, env: []string{"NO_PRIVS"}},
	{name: "add-caps", kind: stringFlag, env: []string{"ADD_CAPS"}},
	{name: "drop-caps", kind: stringFlag, env: []string{"DROP_CAPS"}},
	{name: "allow-setuid", kind: boolFlag, env: []string{"ALLOW_SETUID"}},
	{name: "env", kind: mapFlag},
	{name: "env-file", kind: stringFlag, env: []string{"ENV_FILE"}},
	{name: "no-umask", kind: boolFlag, env: []string{"NO_UMASK"}},
	{name: "no-eval", kind: boolFlag, env: []string{"NO_EVAL"}},
	{name: "blkio-weight", kind: intFlag, env: []string{"BLKIO_WEIGHT"}},
	{name: "blkio-weight-device", kind: sliceFlag, env: []string{"BLKIO_WEIGHT_DEVICE"}},
	{name: "cpu-shares", kind: intFlag, env: []string{"CPU_SHARES"}},
	{name: "cpus", kind: stringFlag, env: []string{"CPU_SHARES"}},
	{name: "cpuset-cpus", kind: stringFlag, env: []string{"CPUSET_CPUS"}},
	{name: "cpuset-mems", kind: stringFlag, env: []string{"CPUSET_MEMS"}},
	{name: "memory", kind: stringFlag, env: []string{"MEMORY"}},
	{name: "memory-reservation", kind: stringFlag, env: []string{"MEMORY_RESERVATION"}},
	{name: "memory-swap", kind: stringFlag, env: []string{"MEMORY_SWAP"}},
	{name: "oom-kill-disable", kind: boolFlag, env: []string{"OOM_KILL_DISABLE"}},
	{name: "pids-limit", kind: intFlag, env: []string{"PIDS_LIMIT"}},
	{name: "unsquash", kind: boolFlag, env: []string{"UNSQUASH"}},
	{name: "underlay", kind: boolFlag, env: []string{"UNDERLAY"}},
	{name: "passphrase", kind: boolFlag},
	{name: "pem-path", kind: stringFlag},
	{name: "no-https", kind: boolFlag, env: []string{"NOHTTPS", "NO_HTTPS"}},
	{name: "docker-login", kind: boolFlag, env: []string{"DOCKER_LOGIN"}},
	{name: "docker-host", kind: stringFlag, env: []string{"DOCKER_HOST"}},
	{name: "docker-username", kind: stringFlag, env: []string{"DOCKER_USERNAME"}},
	{name: "docker-password", kind: stringFlag, env: []string{"DOCKER_PASSWORD"}},
	{name: "ignore-subuid", kind: boolFlag},
	{name: "ignore-fakeroot-command", kind: boolFlag},
	{name: "ignore-userns", kind: boolFlag},
}

// bindSpec is one --bind entry.
type bindSpec struct {
	Src string `json:"src"` // host path, absolute
	Dst string `json:"dst"` // container path, absolute
	RO  bool   `json:"ro"`
}

// execOptions is what exec does, from its flags.
type execOptions struct {
	image         string // absolute path of the SIF
	argv          []string
	contain       bool // -c, -C: fresh /dev, /tmp and home
	cleanEnv      bool // -e, -C
	pidNS         bool // -p, -C
	ipcNS         bool // -i, -C
	netNS         bool // -n
	writableTmpfs bool
	noHome        bool
	home          bindSpec // the home directory (Src on the host, Dst inside)
	binds         []bindSpec
	cwd           string // working directory inside the container: --pwd, else home when contained, else the host's
	customCwd     bool   // cwd is from --pwd/--cwd: failing to enter it is fatal
	env           []string
}

// cmdExec is apptainer exec [flags] IMAGE CMD [ARGS...]. It returns the
// exit code to leave with; a payload killed by a signal kills the fake.
func cmdExec(cfg config, args []string) (int, error) {
	fl, rest, err := parseFlags("exec", execFlags, args)
	if err != nil {
		return 0, err
	}
	if len(rest) < 2 {
		return 0, &usageError{cmd: "exec", msg: fmt.Sprintf("requires at least 2 arg(s), only received %d", len(rest))}
	}
	o, err := newExecOptions(fl, rest)
	if err != nil {
		return 0, err
	}
	img, err := openImage(o.image)
	if err != nil {
		if _, serr := os.Lstat(o.image); serr != nil {
			return 0, fatalf("could not open image %s: failed to retrieve path for %s: %v", o.image, o.image, serr)
		}
		return 0, fatalf("could not open image %s: image format not recognized (%v)", o.image, err)
	}
	var ws syscall.WaitStatus
	if cfg.Chroot {
		ws, err = runChroot(o, img)
	} else {
		ws, err = runHost(o)
	}
	if err != nil {
		return 0, err
	}
	return exitStatus(ws), nil
}

// newExecOptions interprets exec's flags.
func newExecOptions(fl *flagValues, rest []string) (*execOptions, error) {
	all := fl.bool("containall") || fl.bool("compat")
	o := &execOptions{
		argv:          rest[1:],
		contain:       all || fl.bool("contain"),
		cleanEnv:      all || fl.bool("cleanenv"),
		pidNS:         all || fl.bool("pid"),
		ipcNS:         all || fl.bool("ipc"),
		netNS:         fl.bool("net") || fl.str("network") != "",
		writableTmpfs: fl.bool("writable-tmpfs") || fl.bool("compat"),
		noHome:        fl.bool("no-home"),
	}
	var err error
	if o.image, err = filepath.Abs(rest[0]); err != nil {
		return nil, fatalf("could not open image %s: %v", rest[0], err)
	}
	if o.home, err = homeSpec(fl.str("home")); err != nil {
		return nil, err
	}
	for _, spec := range fl.list("bind") {
		b, err := parseBinds(spec)
		if err != nil {
			return nil, err
		}
		o.binds = append(o.binds, b...)
	}
	o.cwd = fl.str("pwd")
	if c := fl.str("cwd"); c != "" {
		o.cwd = c
	}
	o.customCwd = o.cwd != ""
	switch {
	case o.customCwd:
	case o.contain:
		o.cwd = o.home.Dst
	default:
		if o.cwd, err = os.Getwd(); err != nil {
			return nil, fatalf("could not get current working directory: %v", err)
		}
	}
	if o.env, err = containerEnv(o, fl.str("env-file"), fl.stringMap("env")); err != nil {
		return nil, err
	}
	return o, nil
}

// homeSpec parses --home src[:dst]; empty means the user's home.
func homeSpec(spec string) (bindSpec, error) {
	if spec == "" {
		home := os.Getenv("HOME")
		if u, err := user.Current(); err == nil && u.HomeDir != "" {
			home = u.HomeDir
		}
		if home == "" {
			home = "/root"
		}
		return bindSpec{Src: home, Dst: home}, nil
	}
	src, dst, ok := strings.Cut(spec, ":")
	if !ok {
		dst = src
	}
	src, err := filepath.Abs(src)
	if err != nil || !filepath.IsAbs(dst) {
		return bindSpec{}, fatalf("home destination %s must be an absolute path", dst)
	}
	return bindSpec{Src: src, Dst: filepath.Clean(dst)}, nil
}

// parseBinds parses one --bind value: a comma-separated list of
// src[:dst[:ro|rw]]. Sources must exist.
func parseBinds(spec string) ([]bindSpec, error) {
	var out []bindSpec
	for _, one := range strings.Split(spec, ",") {
		if one == "" {
			continue
		}
		parts := strings.Split(one, ":")
		if len(parts) > 3 {
			return nil, fatalf("while getting bind paths: wrong bind syntax: %s", one)
		}
		b := bindSpec{Src: parts[0], Dst: parts[0]}
		if len(parts) > 1 && parts[1] != "" {
			b.Dst = parts[1]
		}
		if len(parts) == 3 {
			switch parts[2] {
			case "ro":
				b.RO = true
			case "rw":
			default:
				return nil, fatalf("while getting bind paths: %s: unknown bind option %q", one, parts[2])
			}
		}
		src, err := filepath.Abs(b.Src)
		if err != nil {
			return nil, fatalf("while getting bind paths: %v", err)
		}
		if _, err := os.Stat(src); err != nil {
			return nil, fatalf("container creation failed: mount hook function failure: mount %s->%s error: "+
				"while mounting %s: mount source %s doesn't exist", src, b.Dst, src, src)
		}
		if !filepath.IsAbs(b.Dst) {
			return nil, fatalf("while getting bind paths: %s: destination must be an absolute path", one)
		}
		b.Src, b.Dst = src, filepath.Clean(b.Dst)
		out = append(out, b)
	}
	return out, nil
}

// image is an opened SIF's system partition.
type image struct {
	offset, size int64
}

// openImage checks that path is a SIF with a squashfs primary system
// partition, as apptainer's image loader does.
func openImage(path string) (image, error) {
	f, err := sif.LoadContainerFromPath(path, sif.OptLoadWithFlag(os.O_RDONLY))
	if err != nil {
		return image{}, err
	}
	defer func() { _ = f.UnloadContainer() }()
	d, err := f.GetDescriptor(sif.WithPartitionType(sif.PartPrimSys))
	if err != nil {
		return image{}, fmt.Errorf("no primary system partition: %w", err)
	}
	fsType, _, _, err := d.PartitionMetadata()
	if err != nil {
		return image{}, err
	}
	if fsType != sif.FsSquash {
		return image{}, fmt.Errorf("primary partition is %v, not squashfs", fsType)
	}
	return image{offset: d.Offset(), size: d.Size()}, nil
}

// hostPath maps a container path to the host in host mode: through the
// longest matching bind destination, else the home directory when it is
// mounted, else unchanged.
func (o *execOptions) hostPath(p string) string {
	best, bestLen := p, -1
	mounts := o.binds
	if !o.noHome && !o.contain {
		mounts = append([]bindSpec{o.home}, mounts...)
	}
	for _, b := range mounts {
		rel, err := filepath.Rel(b.Dst, p)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		if len(b.Dst) > bestLen {
			best, bestLen = filepath.Join(b.Src, rel), len(b.Dst)
		}
	}
	return best
}

// runHost runs the payload on the host: the working directory is mapped
// through the binds, nothing else is isolated.
func runHost(o *execOptions) (syscall.WaitStatus, error) {
	dir, err := o.hostWorkDir()
	if err != nil {
		return 0, err
	}
	path, err := lookPath(o.argv[0], envValue(o.env, "PATH"))
	if err != nil {
		return 0, fatalf("%q: executable file not found in $PATH", o.argv[0])
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	// Same process group as the fake: whoever signals the group reaches
	// the payload too, as with apptainer.
	cmd := &exec.Cmd{
		Path: path, Args: o.argv, Env: o.env, Dir: dir,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}
	return runForwarding(cmd)
}

// hostWorkDir is the host directory host mode runs the payload in: a
// --pwd mapped through the binds (fatal if missing, as in apptainer),
// else / when contained (apptainer would start in a fresh, empty home
// directory, which host mode does not have), else the host's.
func (o *execOptions) hostWorkDir() (string, error) {
	switch {
	case o.customCwd:
		dir := o.hostPath(o.cwd)
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return "", fatalf("failed to set working directory: chdir %s: no such file or directory", o.cwd)
		}
		return dir, nil
	case o.contain:
		return "/", nil
	}
	return o.cwd, nil
}

// lookPath finds name in the colon-separated path list, like execvp.
func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("not found")
}
