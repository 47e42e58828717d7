package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/backends/singularity"
)

// sif manages a singularity profile's SIF cache:
//
//	sandrun sif ls    [--json]
//	sandrun sif prune [--dry-run]
//	sandrun sif pull  REF
//
// The cache is the one of a profile of --config (--profile, or the only
// singularity profile), or the one under --scratch.
func (c cli) sif(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usageErr("sif ls|prune|pull")
	}
	sub, rest := args[0], args[1:]
	fs := flag.NewFlagSet("sandrun sif "+sub, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	configFile := fs.String("config", "", "worker config file holding the singularity profile")
	profile := fs.String("profile", "", "the singularity profile of --config (default: the only one)")
	scratch := fs.String("scratch", "", "scratch directory of the cache, instead of --config")
	binary := fs.String("binary", "", "apptainer or singularity binary, with --scratch (default: found on PATH)")
	maxBytes := fs.Int64("max-bytes", 0, "cache budget in bytes, with --scratch")
	maxImages := fs.Int("max-images", 0, "cache budget in images, with --scratch")
	maxAge := fs.Duration("max-age", 0, "evict images unused this long, with --scratch")
	asJSON := fs.Bool("json", false, "ls: print JSON")
	dryRun := fs.Bool("dry-run", false, "prune: only list what would be removed")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	b, err := sifBackend(*configFile, *profile, singularity.Config{Scratch: *scratch, Binary: *binary,
		CacheMaxBytes: *maxBytes, CacheMaxImages: *maxImages, CacheMaxAge: *maxAge})
	if err != nil {
		return err
	}
	cache := b.Cache()
	switch sub {
	case "ls":
		entries, err := cache.List()
		if err != nil {
			return err
		}
		if *asJSON {
			type row struct {
				Ref      string    `json:"ref"`
				Size     int64     `json:"size"`
				PulledAt time.Time `json:"pulled_at"`
				LastUsed time.Time `json:"last_used"`
				InUse    bool      `json:"in_use"`
			}
			rows := make([]row, 0, len(entries))
			for _, e := range entries {
				rows = append(rows, row{e.Ref, e.Size, e.PulledAt, e.LastUsed, e.InUse})
			}
			enc := json.NewEncoder(c.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "REF\tSIZE\tLAST USED\tIN USE")
		var total int64
		for _, e := range entries {
			total += e.Size
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", e.Ref, humanBytes(e.Size), e.LastUsed.Local().Format(time.DateTime), e.InUse)
		}
		_ = tw.Flush()
		fmt.Fprintf(c.stdout, "%d image(s), %s in %s\n", len(entries), humanBytes(total), cache.Dir())
		return nil
	case "prune":
		evicted, err := cache.Prune(*dryRun)
		if err != nil {
			return err
		}
		verb := "removed"
		if *dryRun {
			verb = "would remove"
		}
		for _, e := range evicted {
			fmt.Fprintf(c.stdout, "%s %s (%s, %s)\n", verb, e.Ref, humanBytes(e.Size), e.Reason)
		}
		fmt.Fprintf(c.stdout, "%d image(s) %s\n", len(evicted), verb)
		return nil
	case "pull":
		if fs.NArg() != 1 {
			return usageErr("sif pull REF")
		}
		path, release, err := cache.Acquire(ctx, fs.Arg(0))
		if err != nil {
			return err
		}
		release()
		fmt.Fprintln(c.stdout, path)
		return nil
	}
	return usageErr("sif ls|prune|pull, not %q", sub)
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
	b, err := singularity.New(cfg.Backends[profile].Singularity(profile, nil))
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
