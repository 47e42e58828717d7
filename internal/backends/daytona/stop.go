package daytona

import (
	"context"
	"time"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// signalTimeout bounds the execute that sends a signal.
const signalTimeout = 10 * time.Second

// stop ends the job once ctx is done (see httpsandbox.Stop): TERM, then
// KILL after the grace, each sent by a script through execute.
func (r *run) stop(ctx context.Context, poll httpsandbox.PollFunc) (int, bool, httpsandbox.Stopped) {
	return httpsandbox.Stop(ctx, r.job.spec.Grace(), 2*signalTimeout, poll, func(ctx context.Context, kill bool) {
		sig := "TERM"
		if kill {
			sig = "KILL"
		}
		if _, err := r.tb.runScript(ctx, signalScript(sig), signalTimeout); err != nil {
			r.b.cfg.Logger.Warn("daytona: could not signal the job; its sandbox will be deleted", "signal", sig, "err", err)
		}
	})
}
