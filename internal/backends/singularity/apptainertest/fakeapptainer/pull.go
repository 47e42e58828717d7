//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apptainer/sif/v2/pkg/sif"
)

// registryFlags are the registry options pull and build share.
var registryFlags = []flagDef{
	{name: "force", short: "F", kind: boolFlag, env: []string{"FORCE"}},
	{name: "library", kind: stringFlag, env: []string{"LIBRARY"}},
	{name: "no-https", kind: boolFlag, env: []string{"NOHTTPS", "NO_HTTPS"}},
	{name: "nohttps", kind: boolFlag},
	{name: "tmpdir", kind: stringFlag, env: []string{"TMPDIR"}},
	{name: "disable-cache", kind: boolFlag, env: []string{"DISABLE_CACHE"}},
	{name: "docker-host", kind: stringFlag, env: []string{"DOCKER_HOST"}},
	{name: "docker-username", kind: stringFlag, env: []string{"DOCKER_USERNAME"}},
	{name: "docker-password", kind: stringFlag, env: []string{"DOCKER_PASSWORD"}},
	{name: "docker-login", kind: boolFlag, env: []string{"DOCKER_LOGIN"}},
	{name: "no-cleanup", kind: boolFlag},
	{name: "arch", kind: stringFlag, env: []string{"PULL_ARCH"}},
	{name: "authfile", kind: stringFlag},
	{name: "sandbox", kind: boolFlag, env: []string{"SANDBOX"}},
}

// pullFlags are apptainer pull's flags (cmd/internal/cli/pull.go).
var pullFlags = append([]flagDef{
	{name: "name", kind: stringFlag, env: []string{"PULL_NAME"}},
	{name: "dir", kind: stringFlag, env: []string{"PULLDIR", "PULLFOLDER"}},
	{name: "allow-unsigned", short: "U", kind: boolFlag, env: []string{"ALLOW_UNSIGNED"}},
	{name: "allow-unauthenticated", kind: boolFlag, env: []string{"ALLOW_UNAUTHENTICATED"}},
	{name: "arch-variant", kind: stringFlag, env: []string{"PULL_ARCH_VARIANT"}},
}, registryFlags...)

// buildFlags are the apptainer build flags the fake accepts.
var buildFlags = append([]flagDef{
	{name: "fakeroot", short: "f", kind: boolFlag, env: []string{"FAKEROOT"}},
	{name: "fix-perms", kind: boolFlag, env: []string{"FIXPERMS"}},
	{name: "notest", short: "T", kind: boolFlag, env: []string{"NOTEST"}},
	{name: "section", kind: sliceFlag, env: []string{"SECTION"}},
	{name: "update", short: "u", kind: boolFlag, env: []string{"UPDATE"}},
	{name: "json", kind: boolFlag},
	{name: "build-arg", kind: arrayFlag},
	{name: "build-arg-file", kind: stringFlag},
	{name: "userns", kind: boolFlag},
	{name: "ignore-fakeroot-command", kind: boolFlag},
}, registryFlags...)

// remoteTransports are the references pull accepts.
var remoteTransports = []string{"docker://", "oras://", "library://"}

// cmdPull is apptainer pull [flags] [OUT] REF.
func cmdPull(cfg config, args []string) error {
	fl, args, err := parseFlags("pull", pullFlags, args)
	if err != nil {
		return err
	}
	if len(args) < 1 || len(args) > 2 {
		return &usageError{cmd: "pull", msg: fmt.Sprintf("accepts between 1 and 2 arg(s), received %d", len(args))}
	}
	ref := args[len(args)-1]
	transport, rest, ok := strings.Cut(ref, "://")
	if !ok || rest == "" {
		if ok {
			return fatalf("Bad URI %s", ref)
		}
		return fatalf("No transport type URI supplied")
	}
	out := fl.str("name")
	if out == "" {
		if len(args) == 2 {
			out = args[0]
		} else {
			out = imageName(rest)
		}
	}
	if dir := fl.str("dir"); dir != "" {
		out = filepath.Join(dir, out)
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) && !fl.bool("force") {
		return fatalf("Image file already exists: %q - will not overwrite", out)
	}
	if !hasRemoteTransport(ref) {
		return fatalf("Unsupported transport type: %s", transport)
	}
	if fl.bool("sandbox") {
		return fatalf("fakeapptainer: --sandbox is not implemented by the test double")
	}
	if err := fetch(cfg, ref); err != nil {
		return err
	}
	return writeImage(out, ref, fl)
}

// cmdBuild is apptainer build [flags] OUT REF.
func cmdBuild(cfg config, args []string) error {
	fl, args, err := parseFlags("build", buildFlags, args)
	if err != nil {
		return err
	}
	if len(args) != 2 {
		return &usageError{cmd: "build", msg: fmt.Sprintf("accepts 2 arg(s), received %d", len(args))}
	}
	out, ref := args[0], args[1]
	if fl.bool("sandbox") {
		return fatalf("fakeapptainer: --sandbox is not implemented by the test double")
	}
	if !hasRemoteTransport(ref) {
		st, err := os.Stat(ref)
		switch {
		case err != nil:
			return fatalf("Unable to build from %s: %v", ref, err)
		case st.IsDir() || !strings.HasSuffix(ref, ".sif"):
			return fatalf("fakeapptainer: building from %s (a definition file or sandbox) is not implemented by the test double", ref)
		}
		if _, err := openImage(ref); err != nil {
			return fatalf("Unable to build from %s: %v", ref, err)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) && !fl.bool("force") && !fl.bool("update") {
		return fatalf("While checking build target: build target '%s' already exists. Use --force if you want to overwrite it", out)
	}
	if hasRemoteTransport(ref) {
		if err := fetch(cfg, ref); err != nil {
			return err
		}
	}
	return writeImage(out, ref, fl)
}

// hasRemoteTransport reports whether ref names a registry image.
func hasRemoteTransport(ref string) bool {
	for _, t := range remoteTransports {
		if strings.HasPrefix(ref, t) && len(ref) > len(t) {
			return true
		}
	}
	return false
}

// imageName is the file pull names an image after when given no output:
// docker://library/alpine:3.20 → alpine_3.20.sif.
func imageName(ref string) string {
	name := ref[strings.LastIndex(ref, "/")+1:]
	name, _, _ = strings.Cut(name, "@")
	base, tag, ok := strings.Cut(name, ":")
	if !ok {
		tag = "latest"
	}
	return base + "_" + tag + ".sif"
}

// fetch stands in for the network part of a pull: it waits pull_delay and
// fails when fail_pull is set.
func fetch(cfg config, ref string) error {
	time.Sleep(cfg.pullDelay)
	if cfg.FailPull {
		return fatalf("While making image from oci registry: error fetching image to cache: "+
			"failed to get checksum for %s: fake registry failure (fail_pull)", ref)
	}
	return nil
}

// writeImage makes the SIF for ref at out, through the cache when one is
// configured: out.tmp-PID is written and then renamed to out.
func writeImage(out, ref string, fl *flagValues) error {
	tmpBase := fl.str("tmpdir")
	if tmpBase == "" {
		tmpBase = os.TempDir()
	}
	tmpOut := fmt.Sprintf("%s.tmp-%d", out, os.Getpid())
	defer func() { _ = os.Remove(tmpOut) }()

	cached := cachedImage(ref, fl.bool("disable-cache"))
	if cached != "" {
		if err := copyFile(cached, tmpOut); err == nil {
			info("Using cached SIF image")
			return rename(tmpOut, out)
		}
	}
	info("Converting OCI blobs to SIF format")
	if err := makeSIF(tmpOut, ref, tmpBase); err != nil {
		return fatalf("While making image from oci registry: %v", err)
	}
	if cached != "" {
		if err := os.MkdirAll(filepath.Dir(cached), 0o750); err == nil {
			tmp := fmt.Sprintf("%s.tmp-%d", cached, os.Getpid())
			if copyFile(tmpOut, tmp) == nil {
				_ = os.Rename(tmp, cached)
			}
			_ = os.Remove(tmp)
		}
	}
	return rename(tmpOut, out)
}

// rename moves a finished image into place.
func rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fatalf("While making image from oci registry: %v", err)
	}
	return nil
}

// makeSIF writes a real SIF for ref at out: a busybox rootfs, squashed
// with mksquashfs and wrapped as the primary system partition.
func makeSIF(out, ref, tmpBase string) error {
	work, err := os.MkdirTemp(tmpBase, "build-temp-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }()
	root := filepath.Join(work, "rootfs")
	if err := makeRootfs(root, ref); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	sqfs := filepath.Join(work, "rootfs.sqfs")
	// Fixed times make the same reference give the same bytes.
	mk := exec.Command("mksquashfs", root, sqfs, //nolint:gosec // squashes the rootfs it just made "-noappend", "-all-root", "-quiet", "-no-progress",
		"-mkfs-time", "0", "-all-time", "0")
	if msg, err := mk.CombinedOutput(); err != nil {
		return fmt.Errorf("mksquashfs: %w: %s", err, msg)
	}
	f, err := os.Open(sqfs)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	di, err := sif.NewDescriptorInput(sif.DataPartition, f,
		sif.OptPartitionMetadata(sif.FsSquash, sif.PartPrimSys, runtime.GOARCH))
	if err != nil {
		return err
	}
	img, err := sif.CreateContainerAtPath(out,
		sif.OptCreateWithDescriptors(di),
		sif.OptCreateDeterministic(),
		sif.OptCreateWithLaunchScript("#!/usr/bin/env run-singularity\n"))
	if err != nil {
		return err
	}
	return img.UnloadContainer()
}

// makeRootfs lays out a minimal static rootfs at root: /bin/busybox with
// a symlink per applet, the usual mount points, and /etc/sandrun-ref
// holding ref (so images of different references differ).
func makeRootfs(root, ref string) error {
	dirs := map[string]os.FileMode{
		"bin": 0o755, "dev": 0o755, "proc": 0o755, "sys": 0o755, "etc": 0o755,
		"root": 0o700, "home": 0o755, "mnt": 0o755, "var": 0o755, "tmp": 0o1777, "var/tmp": 0o1777,
	}
	for d, mode := range dirs {
		p := filepath.Join(root, d)
		if err := os.MkdirAll(p, 0o755); err != nil { //nolint:gosec // an image's layout: world-readable
			return err
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	if err := copyFile("/bin/busybox", filepath.Join(root, "bin", "busybox")); err != nil {
		return fmt.Errorf("/bin/busybox (Debian's busybox-static): %w", err)
	}
	if err := os.Chmod(filepath.Join(root, "bin", "busybox"), 0o755); err != nil { //nolint:gosec // the image's shell
		return err
	}
	list, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		return fmt.Errorf("busybox --list: %w", err)
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet == "busybox" || strings.Contains(applet, "/") {
			continue
		}
		if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
			return err
		}
	}
	files := map[string]string{ //nolint:gosec // /etc/passwd of the image, no credential
		"etc/sandrun-ref": ref + "\n",
		"etc/passwd":      "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":       "root:x:0:\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil { //nolint:gosec // an image's files: world-readable
			return err
		}
	}
	return nil
}

// copyFile copies from to to (created or truncated) with from's mode.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// cacheRoot is $APPTAINER_CACHEDIR/cache (or SINGULARITY_CACHEDIR's).
// Unlike apptainer, the fake has no default under ~/.apptainer: without
// the variable it neither caches nor cleans, so tests never touch a real
// user cache.
func cacheRoot() string {
	for _, prefix := range envPrefixes {
		if d := os.Getenv(prefix + "CACHEDIR"); d != "" {
			return filepath.Join(d, "cache")
		}
	}
	return ""
}

// cachedImage is where the cache keeps ref's SIF, or "" when caching is
// off (no cache dir, or --disable-cache, which APPTAINER_DISABLE_CACHE
// also sets).
func cachedImage(ref string, disabled bool) string {
	root := cacheRoot()
	if root == "" || disabled {
		return ""
	}
	sum := sha256.Sum256([]byte(ref))
	return filepath.Join(root, "oci-tmp", hex.EncodeToString(sum[:]))
}
