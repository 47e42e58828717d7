//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// mount is one mount of the container, relative to its root.
type mount struct {
	src, fstype, data string
	dst               string // inside the container
	flags             uintptr
	dir               bool // the mount point is a directory
	ro                bool
}

// setupContainer runs in the init's new mount namespace: it mounts a
// tmpfs on the staging directory, an overlay of the image (upper layer in
// that tmpfs) as the new root, then the container's mounts, makes the
// root read-only unless --writable-tmpfs, and chroots into it.
func setupContainer(s *initSpec) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fatalf("container creation failed: make mounts private: %v", err)
	}
	if err := syscall.Mount("tmpfs", s.Staging, "tmpfs", 0, "mode=0755"); err != nil {
		return fatalf("container creation failed: staging tmpfs: %v", err)
	}
	upper, work, root := filepath.Join(s.Staging, "upper"), filepath.Join(s.Staging, "work"), filepath.Join(s.Staging, "root")
	for _, d := range []string{upper, work, root} {
		if err := os.Mkdir(d, 0o755); err != nil { //nolint:gosec // root becomes the container's /, 0755 as in any image
			return fatalf("container creation failed: %v", err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", s.Root, upper, work)
	if err := syscall.Mount("overlay", root, "overlay", 0, opts); err != nil {
		// Without overlayfs the image itself is bound: mount points are
		// then created in the shared unpacked tree.
		if err := syscall.Mount(s.Root, root, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fatalf("container creation failed: mount image: %v", err)
		}
	}
	for _, m := range containerMounts(s) {
		target := filepath.Join(root, m.dst)
		if err := mountPoint(target, m.dir); err != nil {
			return fatalf("container creation failed: mount point %s: %v", m.dst, err)
		}
		if err := syscall.Mount(m.src, target, m.fstype, m.flags, m.data); err != nil {
			return fatalf("container creation failed: mount %s->%s error: %v", m.src, m.dst, err)
		}
		if m.ro {
			if err := syscall.Mount("", target, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
				return fatalf("container creation failed: remount %s read-only: %v", m.dst, err)
			}
		}
	}
	if s.Contain {
		if err := devLinks(root); err != nil {
			return fatalf("container creation failed: /dev: %v", err)
		}
	}
	if !s.WritableTmpfs {
		if err := syscall.Mount("", root, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
			return fatalf("container creation failed: remount root read-only: %v", err)
		}
	}
	if s.NetNS {
		if err := loopbackUp(); err != nil {
			return fatalf("container creation failed: network: %v", err)
		}
	}
	if err := syscall.Chroot(root); err != nil {
		return fatalf("container creation failed: chroot: %v", err)
	}
	return chdirIn(s)
}

// containerMounts lists the mounts in the order they are made: /proc,
// /sys, /dev, /tmp and /var/tmp (fresh when contained, the host's
// otherwise), the home directory, then the host binds.
func containerMounts(s *initSpec) []mount {
	bind := func(src, dst string, ro bool) mount {
		st, err := os.Stat(src)
		return mount{src: src, dst: dst, flags: syscall.MS_BIND | syscall.MS_REC, dir: err == nil && st.IsDir(), ro: ro}
	}
	tmpfs := func(dst, mode string) mount {
		return mount{src: "tmpfs", dst: dst, fstype: "tmpfs", data: "mode=" + mode, flags: syscall.MS_NOSUID | syscall.MS_NODEV, dir: true}
	}
	var ms []mount
	if s.PidNS {
		ms = append(ms, mount{src: "proc", dst: "/proc", fstype: "proc", flags: syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC, dir: true})
	} else {
		ms = append(ms, bind("/proc", "/proc", false))
	}
	ms = append(ms, bind("/sys", "/sys", false))
	if s.Contain {
		ms = append(ms, tmpfs("/dev", "0755"))
		for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
			ms = append(ms, bind("/dev/"+d, "/dev/"+d, false))
		}
		ms = append(ms, tmpfs("/dev/shm", "1777"), tmpfs("/tmp", "1777"), tmpfs("/var/tmp", "1777"))
	} else {
		ms = append(ms, bind("/dev", "/dev", false), bind("/tmp", "/tmp", false), bind("/var/tmp", "/var/tmp", false))
	}
	if s.HomeTmpfs != "" {
		ms = append(ms, tmpfs(s.HomeTmpfs, "0755"))
	}
	for _, b := range s.Mounts {
		ms = append(ms, bind(b.Src, b.Dst, b.RO))
	}
	return ms
}

// devLinks adds the /dev symlinks of a contained /dev.
func devLinks(root string) error {
	links := map[string]string{
		"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0", "stdout": "/proc/self/fd/1",
		"stderr": "/proc/self/fd/2",
	}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(root, "dev", name)); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	return nil
}

// loopbackUp brings up lo in a new network namespace, as apptainer does
// for --network none.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer func() { _ = unix.Close(fd) }()
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// runPayload starts the payload in the chroot and waits for it while
// forwarding every signal to it and reaping orphans (the init may be PID
// 1 of its namespace).
func runPayload(path string, argv, env []string) (syscall.WaitStatus, error) {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
	if err != nil {
		return 0, fatalf("%s: %v", argv[0], err)
	}
	go func() {
		for s := range sigs {
			if sig, ok := s.(syscall.Signal); ok && sig != syscall.SIGCHLD && sig != syscall.SIGURG {
				_ = syscall.Kill(pid, sig)
			}
		}
	}()
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			return 0, fatalf("waiting for %s: %v", argv[0], err)
		case wpid == pid:
			return ws, nil
		}
	}
}
