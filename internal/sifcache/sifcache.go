// Package sifcache keeps the SIF images that Apptainer jobs run, on a
// scratch filesystem that may be shared by many workers and purged by
// the cluster behind its back.
//
// One SIF per image reference (docker://, oras://, library://; a tag or
// digest is part of the reference) is pulled once, under a lock that
// holds across processes and machines sharing the directory (flock), into
// DIR/images/<key>.sif with a small JSON record beside it. Every use checks
// the file first — it exists, its SIF header and descriptors load with
// github.com/apptainer/sif/v2, its primary partition lies inside it and its
// size is the size pulled — and pulls it again when the cluster purged or
// truncated it. Rotation evicts the least recently used images beyond the
// size and count budgets, and images older than MaxAge; an image in use (a
// shared lock held by every job running it, in any process) is never
// evicted.
//
// Local .sif paths are used in place, after the same check.
package sifcache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/apptainer/sif/v2/pkg/sif"

	"github.com/sandrun/sandrun/internal/metrics"
)

// Puller fetches ref into a new SIF file at out (apptainer pull).
type Puller func(ctx context.Context, out, ref string) error

// Config configures a Cache.
type Config struct {
	// Dir holds the cache (created if missing).
	Dir string
	// MaxBytes and MaxImages bound the cache; zero means no bound. When a
	// pull makes the cache exceed either, least recently used images are
	// evicted (reason size).
	MaxBytes  int64
	MaxImages int
	// MaxAge evicts images unused this long (reason age); zero: never.
	MaxAge time.Duration
	// Pull fetches an image. Required for remote references.
	Pull Puller
	// Metrics, if set, receive the cache's figures, labelled with Profile
	// (the backend profile that owns the cache).
	Metrics *metrics.Metrics
	Profile string
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Cache is a SIF cache directory. It is safe for concurrent use, and
// several processes may share the directory.
type Cache struct {
	cfg Config
}

// Eviction reasons, as metrics and `sandrun sif prune` name them.
const (
	ReasonSize    = "size"
	ReasonAge     = "age"
	ReasonCorrupt = "corrupt"
	ReasonPurged  = "purged"
)

// Entry is one cached image.
type Entry struct {
	Key      string    `json:"-"`
	Ref      string    `json:"ref"`
	Size     int64     `json:"size"`
	PulledAt time.Time `json:"pulled_at"`
	LastUsed time.Time `json:"last_used"`
	// InUse is set by List when a job holds the image.
	InUse bool `json:"-"`
}

// Eviction is an image removed (or, in a dry run, that would be).
type Eviction struct {
	Entry
	Reason string
}

// New opens (creating) the cache directory.
func New(cfg Config) (*Cache, error) {
	if cfg.Dir == "" {
		return nil, errors.New("sif cache: dir: required")
	}
	if cfg.MaxBytes < 0 || cfg.MaxImages < 0 || cfg.MaxAge < 0 {
		return nil, errors.New("sif cache: max_bytes, max_images, max_age: must not be negative")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	for _, d := range []string{"images", "locks", "tmp"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o750); err != nil {
			return nil, fmt.Errorf("sif cache: dir: %w", err)
		}
	}
	c := &Cache{cfg: cfg}
	c.count(func(m *metrics.Metrics) {
		p := cfg.Profile
		m.SIFCacheBudget.WithLabelValues(p).Set(float64(cfg.MaxBytes))
		for _, r := range []string{ReasonSize, ReasonAge, ReasonCorrupt, ReasonPurged} {
			m.SIFEvictions.WithLabelValues(p, r)
		}
		m.SIFPulls.WithLabelValues(p, "ok")
		m.SIFPulls.WithLabelValues(p, "error")
		m.SIFHits.WithLabelValues(p)
		m.SIFMisses.WithLabelValues(p)
	})
	c.updateGauges()
	return c, nil
}

// Dir returns the cache directory.
func (c *Cache) Dir() string { return c.cfg.Dir }

var schemeRE = regexp.MustCompile(`^(docker|oras|library)://[^\s]+$`)

// IsLocal reports whether ref names a local SIF file rather than a remote
// image.
func IsLocal(ref string) bool { return !strings.Contains(ref, "://") }

// CheckRef reports a reference the cache cannot serve.
func CheckRef(ref string) error {
	switch {
	case ref == "":
		return errors.New("empty image reference")
	case IsLocal(ref) && !strings.HasSuffix(ref, ".sif"):
		return fmt.Errorf("image %q: a local image must be a .sif file", ref)
	case IsLocal(ref) && !filepath.IsAbs(ref):
		return fmt.Errorf("image %q: a local .sif path must be absolute", ref)
	case !IsLocal(ref) && !schemeRE.MatchString(ref):
		return fmt.Errorf("image %q: want docker://, oras:// or library:// followed by a reference, or an absolute .sif path", ref)
	}
	return nil
}

// key names ref's files: readable, and unique through a hash.
func key(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, ref)
	if len(name) > 80 {
		name = name[:80]
	}
	return name + "-" + hex.EncodeToString(sum[:6])
}

func (c *Cache) sifPath(k string) string  { return filepath.Join(c.cfg.Dir, "images", k+".sif") }
func (c *Cache) metaPath(k string) string { return filepath.Join(c.cfg.Dir, "images", k+".json") }
func (c *Cache) lockPath(k, kind string) string {
	return filepath.Join(c.cfg.Dir, "locks", k+"."+kind)
}

// Acquire returns the path of a checked SIF for ref, pulling it when it
// is missing, purged or corrupt, and a release function to call when the
// job no longer runs it; until then no process evicts it.
func (c *Cache) Acquire(ctx context.Context, ref string) (string, func(), error) {
	if err := CheckRef(ref); err != nil {
		return "", nil, err
	}
	if IsLocal(ref) {
		fi, err := os.Stat(ref)
		if err != nil {
			return "", nil, fmt.Errorf("image %s: %w", ref, err)
		}
		if err := Check(ref, fi.Size()); err != nil {
			return "", nil, err
		}
		return ref, func() {}, nil
	}
	k := key(ref)
	// The use lock first: once held, no eviction can remove the file
	// this call is about to check or pull.
	use, err := lock(ctx, c.lockPath(k, "use"), syscall.LOCK_SH)
	if err != nil {
		return "", nil, fmt.Errorf("sif cache: %w", err)
	}
	release := func() { unlock(use) }
	path, err := c.ensure(ctx, k, ref)
	if err != nil {
		release()
		return "", nil, err
	}
	c.rotate(k)
	return path, release, nil
}

// ensure makes sure the image of k is there and sound, pulling it under
// the pull lock if not.
func (c *Cache) ensure(ctx context.Context, k, ref string) (string, error) {
	pull, err := lock(ctx, c.lockPath(k, "pull"), syscall.LOCK_EX)
	if err != nil {
		return "", fmt.Errorf("sif cache: %w", err)
	}
	defer unlock(pull)
	path := c.sifPath(k)
	e, metaErr := c.readMeta(k)
	switch reason := c.verify(path, e, metaErr); reason {
	case "":
		c.count(func(m *metrics.Metrics) { m.SIFHits.WithLabelValues(c.cfg.Profile).Inc() })
		e.LastUsed = c.cfg.Now().UTC()
		_ = c.writeMeta(k, e)
		return path, nil
	case ReasonPurged, ReasonCorrupt:
		c.count(func(m *metrics.Metrics) { m.SIFEvictions.WithLabelValues(c.cfg.Profile, reason).Inc() })
		_ = os.Remove(path)
	}
	c.count(func(m *metrics.Metrics) { m.SIFMisses.WithLabelValues(c.cfg.Profile).Inc() })
	if c.cfg.Pull == nil {
		return "", fmt.Errorf("sif cache: %s is not cached and no puller is configured", ref)
	}
	tmp := filepath.Join(c.cfg.Dir, "tmp", fmt.Sprintf("%s.%d.sif", k, os.Getpid()))
	_ = os.Remove(tmp)
	began := c.cfg.Now()
	err = c.cfg.Pull(ctx, tmp, ref)
	c.count(func(m *metrics.Metrics) {
		m.SIFPullSeconds.WithLabelValues(c.cfg.Profile).Observe(c.cfg.Now().Sub(began).Seconds())
	})
	if err != nil {
		_ = os.Remove(tmp)
		c.count(func(m *metrics.Metrics) { m.SIFPulls.WithLabelValues(c.cfg.Profile, "error").Inc() })
		return "", fmt.Errorf("sif cache: pull %s: %w", ref, err)
	}
	fi, err := os.Stat(tmp)
	if err == nil {
		err = Check(tmp, fi.Size())
	}
	if err != nil {
		_ = os.Remove(tmp)
		c.count(func(m *metrics.Metrics) { m.SIFPulls.WithLabelValues(c.cfg.Profile, "error").Inc() })
		return "", fmt.Errorf("sif cache: pull %s produced no valid SIF: %w", ref, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("sif cache: %w", err)
	}
	c.count(func(m *metrics.Metrics) { m.SIFPulls.WithLabelValues(c.cfg.Profile, "ok").Inc() })
	now := c.cfg.Now().UTC()
	if err := c.writeMeta(k, Entry{Ref: ref, Size: fi.Size(), PulledAt: now, LastUsed: now}); err != nil {
		return "", fmt.Errorf("sif cache: %w", err)
	}
	c.updateGauges()
	return path, nil
}

// verify returns "" when the cached file is sound, ReasonPurged when it is
// gone although recorded, ReasonCorrupt when it is damaged, and "missing"
// when it was never cached.
func (c *Cache) verify(path string, e Entry, metaErr error) string {
	fi, err := os.Stat(path)
	switch {
	case metaErr != nil && err != nil:
		return "missing"
	case err != nil:
		return ReasonPurged
	case metaErr != nil:
		return ReasonCorrupt // a file nobody recorded: a pull that died half-way
	}
	if fi.Size() != e.Size || Check(path, e.Size) != nil {
		return ReasonCorrupt
	}
	return ""
}

// Check reports whether path is a loadable SIF of size bytes whose primary
// system partition lies inside the file.
func Check(path string, size int64) error {
	f, err := sif.LoadContainerFromPath(path, sif.OptLoadWithFlag(os.O_RDONLY))
	if err != nil {
		return fmt.Errorf("image %s: not a loadable SIF: %w", path, err)
	}
	defer func() { _ = f.UnloadContainer() }()
	d, err := f.GetDescriptor(sif.WithPartitionType(sif.PartPrimSys))
	if err != nil {
		return fmt.Errorf("image %s: no primary system partition: %w", path, err)
	}
	if end := d.Offset() + d.Size(); end > size {
		return fmt.Errorf("image %s: truncated: its partition ends at byte %d of %d", path, end, size)
	}
	return nil
}

// List returns the cached images, most recently used first.
func (c *Cache) List() ([]Entry, error) {
	names, err := filepath.Glob(filepath.Join(c.cfg.Dir, "images", "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, n := range names {
		k := strings.TrimSuffix(filepath.Base(n), ".json")
		e, err := c.readMeta(k)
		if err != nil {
			continue
		}
		e.InUse = c.inUse(k)
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return b.LastUsed.Compare(a.LastUsed) })
	return out, nil
}

// inUse reports whether a job holds k's use lock.
func (c *Cache) inUse(k string) bool {
	f, err := tryLock(c.lockPath(k, "use"), syscall.LOCK_EX)
	if err != nil {
		return true
	}
	unlock(f)
	return false
}

// Prune evicts what the budgets and MaxAge allow, and records of files
// purged behind the cache's back; with dryRun it only reports.
func (c *Cache) Prune(dryRun bool) ([]Eviction, error) {
	return c.evict("", dryRun)
}

// rotate applies the budgets after a use of keep (which is in use).
func (c *Cache) rotate(keep string) {
	_, _ = c.evict(keep, false) // best effort: the next use or prune tries again
}

// evict picks the images to remove: purged records, then images past
// MaxAge, then the least recently used until within the budgets. Images
// in use (and keep) are skipped.
func (c *Cache) evict(keep string, dryRun bool) ([]Eviction, error) {
	entries, err := c.List()
	if err != nil {
		return nil, err
	}
	now := c.cfg.Now()
	var (
		out    []Eviction
		bytes  int64
		images int
	)
	// Oldest use last in entries: walk from the end for LRU.
	kept := make([]Entry, 0, len(entries))
	for _, e := range entries {
		e.Key = key(e.Ref)
		if _, err := os.Stat(c.sifPath(e.Key)); errors.Is(err, fs.ErrNotExist) && !e.InUse && e.Key != keep {
			out = append(out, Eviction{e, ReasonPurged})
			continue
		}
		if c.cfg.MaxAge > 0 && now.Sub(e.LastUsed) > c.cfg.MaxAge && !e.InUse && e.Key != keep {
			out = append(out, Eviction{e, ReasonAge})
			continue
		}
		kept = append(kept, e)
		bytes += e.Size
		images++
	}
	for i := len(kept) - 1; i >= 0; i-- {
		over := (c.cfg.MaxBytes > 0 && bytes > c.cfg.MaxBytes) || (c.cfg.MaxImages > 0 && images > c.cfg.MaxImages)
		if !over {
			break
		}
		e := kept[i]
		if e.InUse || e.Key == keep {
			continue
		}
		out = append(out, Eviction{e, ReasonSize})
		bytes -= e.Size
		images--
	}
	if dryRun {
		return out, nil
	}
	done := out[:0]
	for _, ev := range out {
		if c.remove(ev.Key) {
			c.count(func(m *metrics.Metrics) { m.SIFEvictions.WithLabelValues(c.cfg.Profile, ev.Reason).Inc() })
			done = append(done, ev)
		}
	}
	c.updateGauges()
	return done, nil
}

// remove deletes k's image unless a job took it meanwhile.
func (c *Cache) remove(k string) bool {
	f, err := tryLock(c.lockPath(k, "use"), syscall.LOCK_EX)
	if err != nil {
		return false
	}
	defer unlock(f)
	_ = os.Remove(c.sifPath(k))
	_ = os.Remove(c.metaPath(k))
	return true
}

// updateGauges recounts the cache's images and bytes.
func (c *Cache) updateGauges() {
	m := c.cfg.Metrics
	if m == nil {
		return
	}
	entries, err := c.List()
	if err != nil {
		return
	}
	var bytes int64
	for _, e := range entries {
		bytes += e.Size
	}
	m.SIFCacheBytes.WithLabelValues(c.cfg.Profile).Set(float64(bytes))
	m.SIFCacheImages.WithLabelValues(c.cfg.Profile).Set(float64(len(entries)))
}

func (c *Cache) count(f func(*metrics.Metrics)) {
	if c.cfg.Metrics != nil {
		f(c.cfg.Metrics)
	}
}

func (c *Cache) readMeta(k string) (Entry, error) {
	data, err := os.ReadFile(c.metaPath(k))
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return Entry{}, err
	}
	e.Key = k
	return e, nil
}

// writeMeta replaces k's record atomically.
func (c *Cache) writeMeta(k string, e Entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	tmp := c.metaPath(k) + fmt.Sprintf(".%d.tmp", os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.metaPath(k))
}

// lock takes a flock on path (created if needed), waiting until ctx is done.
func lock(ctx context.Context, path string, how int) (*os.File, error) {
	for wait := 5 * time.Millisecond; ; wait = min(wait*2, 200*time.Millisecond) {
		f, err := tryLock(path, how)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %s: %w", path, context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}

// tryLock takes a flock on path without waiting.
func tryLock(path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func unlock(f *os.File) {
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	_ = f.Close()
}
