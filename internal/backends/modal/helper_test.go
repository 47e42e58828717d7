package modal

import (
	"context"
	"fmt"
	"os"

	"github.com/sandrun/sandrun/internal/backends"
)

// helperEnv, set, makes the test binary the orphan test's worker.
const helperEnv = "SANDRUN_MODAL_TEST_HELPER"

// helperMain is a worker as deployed: configured by its environment
// (MODAL_SERVER_URL, MODAL_TOKEN_ID, MODAL_TOKEN_SECRET, MODAL_CONFIG_PATH),
// it runs one long job of deployment d1 and waits to be killed.
func helperMain() int {
	b, err := New(Config{Mode: ModeDirect, Image: "alpine:3.21", StateDir: os.Getenv(helperEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	spec := backends.Spec{Deployment: "d1", JobID: "orphan", Attempt: 1, Worker: "w-dead",
		Command: `echo "pid $$"; echo ready; exec sleep 300`}
	_, err = b.Run(context.Background(), spec, backends.Output{Stdout: os.Stdout, Stderr: os.Stderr})
	fmt.Fprintln(os.Stderr, "helper: the job ended:", err)
	return 1
}
