package modal

import (
	"errors"
	"fmt"

	modal "github.com/modal-labs/modal-client/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sandrun/sandrun/internal/backends"
)

// classify wraps an SDK error from op with what the worker should do
// about it: ErrPermanent for a request Modal refuses as such (a bad image,
// an invalid argument), else ErrUnavailable, which it retries. SDK errors
// carry server messages and names, never tokens or env values.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var (
		invalid modal.InvalidError
		remote  modal.RemoteError
	)
	switch {
	case errors.As(err, &invalid), errors.As(err, &remote):
		return fmt.Errorf("modal: %s: %w: %w", op, err, backends.ErrPermanent)
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.OutOfRange:
		return fmt.Errorf("modal: %s: %w: %w", op, err, backends.ErrPermanent)
	}
	return fmt.Errorf("modal: %s: %w: %w", op, err, backends.ErrUnavailable)
}
