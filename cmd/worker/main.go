// Command worker claims jobs from the configured queues and runs them.
// See `worker -h`; `sandrun worker` is the same program.
package main

import (
	"os"

	"github.com/sandrun/sandrun/internal/app"
)

func main() {
	os.Exit(app.DaemonMain("worker", app.Roles{Worker: true}, os.Args[1:]))
}
