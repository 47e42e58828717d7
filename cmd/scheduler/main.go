// Command scheduler fires cron schedules as jobs (one leader at a time).
// See `scheduler -h`; `sandrun scheduler` is the same program.
package main

import (
	"os"

	"github.com/sandrun/sandrun/internal/app"
)

func main() {
	os.Exit(app.DaemonMain("scheduler", app.Roles{Scheduler: true}, os.Args[1:]))
}
