package daytonatest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sandrun/sandrun/internal/testenv"
)

// How a sandbox's commands see its volumes. They run on the host, where
// a mount path such as /workspace does not exist, so each command of a
// sandbox with volumes starts in a mount namespace of its own (unshare:
// as root, or, for another user, in a user namespace too, where the
// command runs as its root): a tmpfs becomes a new root in which every
// entry of the host's / is bound (recursively) at its own path, every
// directory on the way to a mount path is made instead (its entries
// bound in turn), each volume's directory is bound at its mount path,
// and the command runs chrooted there. So the command sees the host's
// files, as every command of the fake does, plus the volumes at their
// mount paths; the host's filesystem is not changed, and the mounts end
// with the namespace's last process.

// mountScript builds the new root and runs the command in it, as
//
//	/bin/sh -c mountScript daytonatest-mount MOUNT CHROOT MKDIR LN ROOT CWD TEXT OP...
//
// where each OP is `dir PATH`, `bind SRC PATH` (a directory, bound
// recursively), `file SRC PATH` (anything else, bound) or `link TARGET
// PATH`, PATH being in the new root. A failure to build it exits 125.
const mountScript = `mount=$1 chroot=$2 mkdir=$3 ln=$4 root=$5 cwd=$6 text=$7
shift 7
"$mount" -t tmpfs -o mode=0755 daytonatest-root "$root" || exit 125
while [ $# -gt 0 ]; do
	case $1 in
	dir) "$mkdir" -p -- "$root$2" || exit 125; shift 2 ;;
	bind) { "$mkdir" -p -- "$root$3" && "$mount" --rbind "$2" "$root$3"; } || exit 125; shift 3 ;;
	file) { : >"$root$3" && "$mount" --bind "$2" "$root$3"; } || exit 125; shift 3 ;;
	link) "$ln" -s -- "$2" "$root$3" || exit 125; shift 3 ;;
	*) exit 125 ;;
	esac
done
cd "$root" || exit 125
exec "$chroot" "$root" /bin/sh -c 'cd -- "$1" || exit 126; exec /bin/sh -c "$2"' sh "$cwd" "$text"`

// mounter runs commands with volumes: the argv of unshare and the tools
// mountScript needs, found once.
type mounter struct {
	unshare []string
	tools   []string // mount, chroot, mkdir, ln
	err     error
}

var (
	mounterOnce sync.Once
	theMounter  mounter
)

// getMounter returns the mounter, found and tried on first use.
func getMounter() mounter {
	mounterOnce.Do(func() { theMounter = findMounter() })
	return theMounter
}

// findMounter finds unshare and the tools, and runs one command with a
// volume to see that it works here.
func findMounter() mounter {
	if runtime.GOOS != "linux" {
		return mounter{err: errors.New("volume mounts need Linux mount namespaces")}
	}
	var m mounter
	for _, name := range []string{"unshare", "mount", "chroot", "mkdir", "ln"} {
		p, err := exec.LookPath(name)
		if err != nil {
			return mounter{err: fmt.Errorf("volume mounts need %s (util-linux, coreutils): %w", name, err)}
		}
		if name == "unshare" {
			m.unshare = []string{p}
		} else {
			m.tools = append(m.tools, p)
		}
	}
	if os.Geteuid() != 0 {
		m.unshare = append(m.unshare, "--user", "--map-root-user")
	}
	m.unshare = append(m.unshare, "--mount", "--propagation", "private", "--")
	m.err = m.probe()
	return m
}

// probe reads a file through a volume mounted at a path that does not
// exist on the host.
func (m mounter) probe() error {
	tmp, err := os.MkdirTemp("", "daytonatest-probe-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	vol, root := filepath.Join(tmp, "volume"), filepath.Join(tmp, "root")
	for _, d := range []string{vol, root} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(vol, "probe"), []byte("mounted"), 0o600); err != nil {
		return err
	}
	at := "/daytonatest-probe-" + filepath.Base(tmp)
	cmd, err := m.command(root, []mountPoint{{path: at, dir: vol}}, "cat "+at+"/probe", "/")
	if err != nil {
		return err
	}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "mounted" {
		if err == nil {
			err = errors.New("the volume's file was not read")
		}
		how := "unshare --mount"
		if os.Geteuid() != 0 {
			how = "unshare --user --map-root-user --mount (unprivileged user namespaces)"
		}
		return fmt.Errorf("volume mounts do not work here (%s): %w: %s", how, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// command returns the command that runs text, in directory cwd of the
// sandbox, with mounts (see mountScript); root is an empty directory of
// the host for the new root (a tmpfs is mounted on it, privately).
func (m mounter) command(root string, mounts []mountPoint, text, cwd string) (*exec.Cmd, error) {
	if m.err != nil {
		return nil, m.err
	}
	ops, err := rootOps(mounts)
	if err != nil {
		return nil, err
	}
	args := slices.Concat(m.unshare[1:], []string{"/bin/sh", "-c", mountScript, "daytonatest-mount"}, m.tools,
		[]string{root, cwd, text}, ops)
	return exec.Command(m.unshare[0], args...), nil
}

// rootOps returns the operations of mountScript that make the new root:
// the host's / with the mounts.
func rootOps(mounts []mountPoint) ([]string, error) {
	mounts = slices.Clone(mounts)
	slices.SortFunc(mounts, func(a, b mountPoint) int { return strings.Compare(a.path, b.path) })
	isMount := func(p string) bool {
		return slices.ContainsFunc(mounts, func(m mountPoint) bool { return m.path == p })
	}
	onTheWay := func(p string) bool {
		return slices.ContainsFunc(mounts, func(m mountPoint) bool { return strings.HasPrefix(m.path, p+"/") })
	}
	var ops []string
	var walk func(dir string) error
	walk = func(dir string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("daytonatest: mounting volumes: %w", err)
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			switch {
			case isMount(p):
				// The volume goes there, over whatever the host has.
			case onTheWay(p):
				if !e.IsDir() {
					return fmt.Errorf("daytonatest: cannot mount a volume under %s: not a directory on this host (a limit of the fake)", p)
				}
				ops = append(ops, "dir", p)
				if err := walk(p); err != nil {
					return err
				}
			case e.Type()&fs.ModeSymlink != 0:
				target, err := os.Readlink(p)
				if err != nil {
					return fmt.Errorf("daytonatest: mounting volumes: %w", err)
				}
				ops = append(ops, "link", target, p)
			case e.IsDir():
				ops = append(ops, "bind", p, p)
			default:
				ops = append(ops, "file", p, p)
			}
		}
		return nil
	}
	if err := walk("/"); err != nil {
		return nil, err
	}
	for _, m := range mounts {
		ops = append(ops, "bind", m.dir, m.path)
	}
	return ops, nil
}

// VolumesWork returns why the fake cannot run the commands of sandboxes
// with volumes here, or nil: it needs Linux, unshare, mount and chroot,
// and root or unprivileged user namespaces. The first call tries it.
// Creating such a sandbox where it cannot answers 501.
func VolumesWork() error { return getMounter().err }

// RequireVolumes skips the test (fails it under CI) unless VolumesWork.
func RequireVolumes(t testing.TB) {
	t.Helper()
	if err := VolumesWork(); err != nil {
		testenv.Missing(t, "daytonatest: %v", err)
	}
}
