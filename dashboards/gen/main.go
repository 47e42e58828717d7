// Command gen writes sandrun's Grafana dashboards (package dashboards) to
// JSON files in the current directory: go generate ./dashboards.
package main

import (
	"fmt"
	"os"

	"github.com/sandrun/sandrun/dashboards"
)

func main() {
	for _, d := range dashboards.All {
		data, err := dashboards.Render(d)
		if err == nil {
			err = os.WriteFile(dashboards.FileName(d), data, 0o644) //nolint:gosec // dashboards are public files
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gen:", err)
			os.Exit(1)
		}
	}
}
