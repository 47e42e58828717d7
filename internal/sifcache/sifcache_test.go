package sifcache

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apptainer/sif/v2/pkg/sif"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandrun/sandrun/internal/metrics"
)

// writeSIF writes a real SIF at out whose primary partition holds payload
// (a stand-in for a squashfs: the cache checks the container, not the
// file system inside).
func writeSIF(out string, payload []byte) error {
	di, err := sif.NewDescriptorInput(sif.DataPartition, bytes.NewReader(payload),
		sif.OptPartitionMetadata(sif.FsSquash, sif.PartPrimSys, runtime.GOARCH))
	if err != nil {
		return err
	}
	f, err := sif.CreateContainerAtPath(out, sif.OptCreateWithDescriptors(di), sif.OptCreateDeterministic())
	if err != nil {
		return err
	}
	return f.UnloadContainer()
}

// puller counts pulls and writes a SIF of ref (its size grows with ref).
type puller struct {
	n     atomic.Int64
	delay time.Duration
}

func (p *puller) pull(_ context.Context, out, ref string) error {
	p.n.Add(1)
	time.Sleep(p.delay)
	return writeSIF(out, []byte(strings.Repeat(ref, 100)))
}

func newCache(t *testing.T, cfg Config) (*Cache, *puller, *metrics.Metrics) {
	t.Helper()
	p := &puller{}
	m := metrics.New()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	cfg.Pull, cfg.Metrics = p.pull, m
	if cfg.Profile == "" {
		cfg.Profile = "hpc"
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, p, m
}

func acquire(t *testing.T, c *Cache, ref string) (string, func()) {
	t.Helper()
	path, release, err := c.Acquire(t.Context(), ref)
	if err != nil {
		t.Fatalf("Acquire %s: %v", ref, err)
	}
	return path, release
}

func refs(entries []Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Ref)
	}
	return out
}

// TestRotationKeepsImagesInUse: with a 3-image budget, a fourth pull
// evicts the least recently used image that no job is running; the image
// in use survives although it is the least recently used.
func TestRotationKeepsImagesInUse(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Minute); return clock }
	c, p, m := newCache(t, Config{MaxImages: 3, Now: now})
	_, inUse := acquire(t, c, "docker://a:1") // held by a "running job"
	for _, ref := range []string{"docker://b:1", "docker://c:1"} {
		_, release := acquire(t, c, ref)
		release()
	}
	_, release := acquire(t, c, "docker://d:1")
	release()
	entries, err := c.List()
	if err != nil {
		t.Fatal(err)
	}
	if got := refs(entries); strings.Join(got, " ") != "docker://d:1 docker://c:1 docker://a:1" {
		t.Fatalf("cache holds %v: want d, c and the in-use a (b, least recently used among free ones, evicted)", got)
	}
	if n := testutil.ToFloat64(m.SIFEvictions.WithLabelValues("hpc", ReasonSize)); n != 1 {
		t.Errorf("size evictions %v, want 1", n)
	}
	inUse()
	if p.n.Load() != 4 {
		t.Errorf("pulls %d, want 4", p.n.Load())
	}
	// Reusing a is a hit; the next new image now evicts the LRU free one (c).
	_, release = acquire(t, c, "docker://a:1")
	release()
	_, release = acquire(t, c, "docker://e:1")
	release()
	entries, _ = c.List()
	if got := refs(entries); strings.Join(got, " ") != "docker://e:1 docker://a:1 docker://d:1" {
		t.Fatalf("cache holds %v after reuse of a", got)
	}
	if h := testutil.ToFloat64(m.SIFHits.WithLabelValues("hpc")); h != 1 {
		t.Errorf("hits %v, want 1", h)
	}
	if n := testutil.ToFloat64(m.SIFCacheImages.WithLabelValues("hpc")); n != 3 {
		t.Errorf("images gauge %v, want 3", n)
	}
}

// TestPurgedAndTruncatedArePulledAgain: a SIF deleted or truncated behind
// the cache's back is found before use and pulled again.
func TestPurgedAndTruncatedArePulledAgain(t *testing.T) {
	t.Parallel()
	c, p, m := newCache(t, Config{})
	path, release := acquire(t, c, "docker://alpine:3.20")
	release()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	path2, release := acquire(t, c, "docker://alpine:3.20")
	release()
	if path2 != path || p.n.Load() != 2 {
		t.Fatalf("after purge: path %s, pulls %d; want the same path pulled again", path2, p.n.Load())
	}
	fi, _ := os.Stat(path)
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, release = acquire(t, c, "docker://alpine:3.20")
	release()
	if p.n.Load() != 3 {
		t.Fatalf("after truncation: pulls %d, want 3", p.n.Load())
	}
	if err := Check(path, fi.Size()); err != nil {
		t.Fatalf("the re-pulled file does not check: %v", err)
	}
	for reason, want := range map[string]float64{ReasonPurged: 1, ReasonCorrupt: 1} {
		if n := testutil.ToFloat64(m.SIFEvictions.WithLabelValues("hpc", reason)); n != want {
			t.Errorf("%s evictions %v, want %v", reason, n, want)
		}
	}
	if n := testutil.ToFloat64(m.SIFMisses.WithLabelValues("hpc")); n != 3 {
		t.Errorf("misses %v, want 3", n)
	}
}

// TestConcurrentAcquireOnePull: many acquirers of one image, in two
// caches on the same directory (two workers), cause one pull.
func TestConcurrentAcquireOnePull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, pa, _ := newCache(t, Config{Dir: dir})
	b, pb, _ := newCache(t, Config{Dir: dir})
	pa.delay, pb.delay = 300*time.Millisecond, 300*time.Millisecond
	var wg sync.WaitGroup
	for i := range 8 {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Go(func() {
			_, release := acquire(t, c, "docker://big:1")
			release()
		})
	}
	wg.Wait()
	if n := pa.n.Load() + pb.n.Load(); n != 1 {
		t.Fatalf("%d pulls, want 1", n)
	}
}

// TestAgeAndPrune: images unused past MaxAge go on prune; a dry run
// removes nothing.
func TestAgeAndPrune(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	c, _, m := newCache(t, Config{MaxAge: 7 * 24 * time.Hour, Now: now})
	_, release := acquire(t, c, "docker://old:1")
	release()
	mu.Lock()
	clock = clock.Add(10 * 24 * time.Hour)
	mu.Unlock()
	_, release = acquire(t, c, "docker://new:1") // rotation runs here too
	release()
	entries, _ := c.List()
	if got := refs(entries); len(got) != 1 || got[0] != "docker://new:1" {
		t.Fatalf("cache holds %v, want only new (old is 10 days unused)", got)
	}
	if n := testutil.ToFloat64(m.SIFEvictions.WithLabelValues("hpc", ReasonAge)); n != 1 {
		t.Errorf("age evictions %v, want 1", n)
	}
	mu.Lock()
	clock = clock.Add(10 * 24 * time.Hour)
	mu.Unlock()
	ev, err := c.Prune(true)
	if err != nil || len(ev) != 1 || ev[0].Reason != ReasonAge {
		t.Fatalf("dry run: %v, %v", ev, err)
	}
	if entries, _ := c.List(); len(entries) != 1 {
		t.Fatal("a dry run removed an image")
	}
	if ev, err := c.Prune(false); err != nil || len(ev) != 1 {
		t.Fatalf("prune: %v, %v", ev, err)
	}
	if entries, _ := c.List(); len(entries) != 0 {
		t.Fatalf("prune left %v", refs(entries))
	}
}

func TestLocalAndBadRefs(t *testing.T) {
	t.Parallel()
	c, p, _ := newCache(t, Config{})
	local := filepath.Join(t.TempDir(), "img.sif")
	if err := writeSIF(local, []byte("payload")); err != nil {
		t.Fatal(err)
	}
	path, release := acquire(t, c, local)
	release()
	if path != local || p.n.Load() != 0 {
		t.Fatalf("local image: path %s, pulls %d", path, p.n.Load())
	}
	notSIF := filepath.Join(t.TempDir(), "fake.sif")
	if err := os.WriteFile(notSIF, []byte("not a sif"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"", "alpine", "relative.sif", "http://x/y", "docker://", notSIF} {
		if _, _, err := c.Acquire(t.Context(), ref); err == nil {
			t.Errorf("Acquire(%q) succeeded", ref)
		}
	}
}

// TestProfilesKeepTheirOwnGauges: two singularity profiles of one worker
// (two caches, one registry) report their figures under their own
// backend label instead of overwriting each other's.
func TestProfilesKeepTheirOwnGauges(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	open := func(profile string, budget int64) *Cache {
		c, err := New(Config{Dir: t.TempDir(), MaxBytes: budget, Pull: (&puller{}).pull, Metrics: m, Profile: profile})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := open("hpc-a", 1<<30), open("hpc-b", 2<<30)
	for _, ref := range []string{"docker://x:1", "docker://y:1"} {
		_, release := acquire(t, a, ref)
		release()
	}
	_, release := acquire(t, b, "docker://z:1")
	release()
	for _, tc := range []struct {
		profile        string
		images, budget float64
	}{{"hpc-a", 2, 1 << 30}, {"hpc-b", 1, 2 << 30}} {
		if n := testutil.ToFloat64(m.SIFCacheImages.WithLabelValues(tc.profile)); n != tc.images {
			t.Errorf("%s: images %v, want %v", tc.profile, n, tc.images)
		}
		if n := testutil.ToFloat64(m.SIFCacheBudget.WithLabelValues(tc.profile)); n != tc.budget {
			t.Errorf("%s: budget %v, want %v", tc.profile, n, tc.budget)
		}
		if n := testutil.ToFloat64(m.SIFMisses.WithLabelValues(tc.profile)); n != tc.images {
			t.Errorf("%s: misses %v, want %v", tc.profile, n, tc.images)
		}
	}
}
