package httpsandbox

import (
	"context"
	"time"
)

// maxFollowTries bounds how often a broken log stream is re-opened in a
// row without progress.
const maxFollowTries = 5

// Follow reads a log stream with once until once ends it without error.
// A stream that breaks is opened again after a backoff, unless ctx is
// done, final says its error is, or maxFollowTries tries in a row made
// no progress; once reports whether it copied anything new (it skips
// what earlier tries copied).
func Follow(ctx context.Context, once func() (progress bool, err error), final func(error) bool) error {
	for tries := 1; ; tries++ {
		progress, err := once()
		if progress {
			tries = 1
		}
		if err == nil || ctx.Err() != nil || tries == maxFollowTries || final(err) {
			return err
		}
		t := time.NewTimer(Backoff(tries - 1))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
