package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/backends/singularity"
	"github.com/sandrun/sandrun/internal/sifcache"
)

// sifCmd manages a singularity profile's SIF cache: the cache of a
// profile of --config (--profile, or the only singularity profile), or
// the one under --scratch.
func (c cli) sifCmd() *cobra.Command {
	var (
		configFile, profile, scratch, binary string
		maxBytes                             int64
		maxImages                            int
		maxAge                               time.Duration
	)
	cmd := &cobra.Command{
		Use:   "sif",
		Short: "the SIF cache of a singularity profile: ls, prune, pull",
		Example: `  sandrun sif ls --scratch ./sif-cache
  sandrun sif prune --dry-run --scratch ./sif-cache`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&configFile, "config", "", "worker config file holding the singularity profile")
	pf.StringVar(&profile, "profile", "", "the singularity profile of --config (default: the only one)")
	pf.StringVar(&scratch, "scratch", "", "scratch directory of the cache, instead of --config")
	pf.StringVar(&binary, "binary", "", "apptainer or singularity binary, with --scratch (default: found on PATH)")
	pf.Int64Var(&maxBytes, "max-bytes", 0, "cache budget in bytes, with --scratch")
	pf.IntVar(&maxImages, "max-images", 0, "cache budget in images, with --scratch")
	pf.DurationVar(&maxAge, "max-age", 0, "evict images unused this long, with --scratch")
	open := func() (*sifcache.Cache, error) {
		switch {
		case maxBytes < 0:
			return nil, usageErr("--max-bytes: must be 0 (no budget) or more, got %d", maxBytes)
		case maxImages < 0:
			return nil, usageErr("--max-images: must be 0 (no budget) or more, got %d", maxImages)
		case maxAge < 0:
			return nil, usageErr("--max-age: must be 0 (no limit) or more, got %s", maxAge)
		}
		b, err := sifBackend(configFile, profile, singularity.Config{Scratch: scratch, Binary: binary,
			CacheMaxBytes: maxBytes, CacheMaxImages: maxImages, CacheMaxAge: maxAge})
		if err != nil {
			return nil, err
		}
		return b.Cache(), nil
	}
	var out outputFlag
	ls := &cobra.Command{
		Use:   "ls",
		Short: "list the cached images",
		Args:  argsUsage(0, 0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			if _, err := out.kind(); err != nil {
				return err
			}
			cache, err := open()
			if err != nil {
				return err
			}
			entries, err := cache.List()
			if err != nil {
				return err
			}
			type row struct {
				Ref      string    `json:"ref"`
				Size     int64     `json:"size"`
				PulledAt time.Time `json:"pulled_at"`
				LastUsed time.Time `json:"last_used"`
				InUse    bool      `json:"in_use"`
			}
			rows := make([]row, 0, len(entries))
			var total int64
			for _, e := range entries {
				rows = append(rows, row{e.Ref, e.Size, e.PulledAt, e.LastUsed, e.InUse})
				total += e.Size
			}
			return c.emit(out, rows, func(t *table) {
				t.header("REF", "SIZE", "LAST USED", "IN USE")
				for _, e := range rows {
					t.row(e.Ref, humanBytes(e.Size), e.LastUsed.Local().Format(time.DateTime), fmt.Sprint(e.InUse))
				}
				t.row(fmt.Sprintf("%d image(s), %s in %s", len(entries), humanBytes(total), cache.Dir()))
			})
		},
	}
	out.register(ls)
	var dryRun bool
	prune := &cobra.Command{
		Use:   "prune",
		Short: "evict what the cache's budget says must go",
		Args:  argsUsage(0, 0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			cache, err := open()
			if err != nil {
				return err
			}
			evicted, err := cache.Prune(dryRun)
			if err != nil {
				return err
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			for _, e := range evicted {
				fmt.Fprintf(c.stdout, "%s %s (%s, %s)\n", verb, e.Ref, humanBytes(e.Size), e.Reason)
			}
			fmt.Fprintf(c.stdout, "%d image(s) %s\n", len(evicted), verb)
			return nil
		},
	}
	prune.Flags().BoolVar(&dryRun, "dry-run", false, "only list what would be removed")
	pull := &cobra.Command{
		Use:   "pull REF",
		Short: "fetch an image into the cache (prints its path)",
		Args:  argsUsage(1, 1, "one image reference"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cache, err := open()
			if err != nil {
				return err
			}
			path, release, err := cache.Acquire(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			release()
			fmt.Fprintln(c.stdout, path)
			return nil
		},
	}
	cmd.AddCommand(ls, prune, pull)
	return cmd
}

// sifBackend builds the singularity backend whose cache `sandrun sif`
// works on.
func sifBackend(configFile, profile string, direct singularity.Config) (*singularity.Backend, error) {
	if direct.Scratch != "" {
		if configFile != "" {
			return nil, usageErr("--scratch and --config: give one")
		}
		return singularity.New(direct)
	}
	if configFile == "" {
		return nil, usageErr("--config FILE (with a singularity profile) or --scratch DIR is required")
	}
	cfg, err := app.LoadFile(configFile)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range slices.Sorted(maps.Keys(cfg.Backends)) {
		if k := cfg.Backends[n].Kind; k == "singularity" || k == "apptainer" {
			names = append(names, n)
		}
	}
	switch {
	case profile != "" && !slices.Contains(names, profile):
		return nil, fmt.Errorf("--profile: %q is not a singularity profile of %s (it has %v)", profile, configFile, names)
	case profile == "" && len(names) != 1:
		return nil, fmt.Errorf("--profile: %s has singularity profiles %v: name one", configFile, names)
	case profile == "":
		profile = names[0]
	}
	b, err := singularity.New(cfg.Backends[profile].SingularityConfig(profile, nil))
	if err != nil {
		return nil, fmt.Errorf("backends.%s.%w", profile, err)
	}
	return b, nil
}

// humanBytes prints n in binary units.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
