package vercel

import (
	"context"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// stop ends the job once ctx is done (see httpsandbox.Stop): SIGTERM (15)
// through the kill endpoint, then SIGKILL (9) after the grace.
func (r *run) stop(ctx context.Context) (int, bool, httpsandbox.Stopped) {
	return httpsandbox.Stop(ctx, r.job.spec.Grace(), 2*r.b.cfg.RequestTimeout, r.pollExit, func(ctx context.Context, kill bool) {
		sig := 15
		if kill {
			sig = 9
		}
		if err := r.b.api.kill(ctx, r.sid, r.cid, sig); err != nil {
			// A command that ended meanwhile cannot be killed: its exit
			// code is on its way.
			r.b.cfg.Logger.Debug("vercel: kill failed", "signal", sig, "err", err)
		}
	})
}
