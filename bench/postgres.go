package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// findPostgresBin returns the directory of Debian's newest PostgreSQL
// server binaries (/usr/lib/postgresql/<major>/bin), or the directory of a
// postgres on PATH.
func findPostgresBin() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return vb - va
	})
	for _, d := range dirs {
		if isExecutable(filepath.Join(d, "postgres")) && isExecutable(filepath.Join(d, "initdb")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("postgres"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries (Debian package postgresql, or -pg-bin DIR)")
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// postgresVersion returns `postgres --version`'s version, or "unknown".
func postgresVersion(binDir string) string {
	out, err := exec.Command(filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return "unknown"
	}
	s := strings.TrimSpace(string(out))
	if _, v, ok := strings.Cut(s, "(PostgreSQL) "); ok {
		return v
	}
	return s
}

// postgres is a private PostgreSQL cluster: initdb into a temp dir, trust
// authentication, listening on a loopback port and a socket in the same
// dir, durability settings at their defaults (fsync and
// synchronous_commit on). PostgreSQL refuses to run as root, so when the
// benchmark is root the cluster runs as the system's postgres user.
type postgres struct {
	dir  string
	proc *proc
	url  string
}

func startPostgres(ctx context.Context, binDir string) (_ *postgres, err error) {
	cred, err := postgresCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "river-bench-")
	if err != nil {
		return nil, err
	}
	pg := &postgres{dir: dir}
	defer func() {
		if err != nil {
			_ = pg.stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("postgres data dir: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	// --no-sync only skips initdb's own final sync of the fresh cluster;
	// the server below runs with fsync on.
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	pg.proc, err = startProc(procSpec{
		name: "postgres", path: filepath.Join(binDir, "postgres"), dir: dir, cred: cred,
		// SIGINT: fast shutdown.
		stopSig: os.Interrupt,
		args: []string{"-D", data, "-p", strconv.Itoa(port), "-k", dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "fsync=on", "-c", "synchronous_commit=on"},
	})
	if err != nil {
		return nil, err
	}
	pg.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitReady(ctx, "postgres", 60*time.Second, func(ctx context.Context) error {
		c, err := pgx.Connect(ctx, pg.url)
		if err != nil {
			return err
		}
		return c.Close(ctx)
	}, pg.proc); err != nil {
		return nil, err
	}
	return pg, nil
}

// postgresCredential returns the postgres user's credential when the
// benchmark runs as root, and nil (run as ourselves) otherwise.
func postgresCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, postgres must run as the postgres user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

func (pg *postgres) stop() error {
	var errs []error
	if pg.proc != nil {
		errs = append(errs, pg.proc.stop())
	}
	errs = append(errs, os.RemoveAll(pg.dir))
	return errors.Join(errs...)
}
