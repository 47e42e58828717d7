package main

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what the binary knows of its build: the module version
// (a tag, a pseudo-version, or "(devel)"), the commit and whether the
// tree had uncommitted changes, as the go command recorded them.
type buildVersion struct {
	Version  string `json:"version"`
	Commit   string `json:"commit,omitempty"`
	Time     string `json:"commit_time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: "(unknown)", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Version = info.Main.Version
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// versionString is the one-line form of --version.
func versionString() string {
	v := readBuildVersion()
	s := v.Version
	if v.Commit != "" {
		s += " (commit " + v.Commit
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s + " " + v.Go + " " + v.Platform
}

func (c cli) versionCmd() *cobra.Command {
	var out outputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "print the version and commit this binary was built from",
		Args:  argsUsage(0, 0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			v := readBuildVersion()
			return c.emit(out, v, func(t *table) {
				t.row("version", v.Version)
				t.row("commit", dash(v.Commit)+map[bool]string{true: " (modified)"}[v.Modified])
				t.row("commit time", dash(v.Time))
				t.row("go", v.Go)
				t.row("platform", v.Platform)
			})
		},
	}
	out.register(cmd)
	return cmd
}
