package policy

import (
	"errors"
	"fmt"
)

// Mode says what happens to a job whose command the detector flags as
// dangerous. Modes are ordered by permissiveness: deny < allowlist < approve.
type Mode string

const (
	// ModeDeny refuses every dangerous command. It is the default for every
	// origin: a job opts into anything more permissive by setting its mode.
	ModeDeny Mode = "deny"
	// ModeApprove runs every command; a dangerous one is recorded as
	// approved-dangerous (Decision.Dangerous is true).
	ModeApprove Mode = "approve"
	// ModeAllowlist runs a dangerous command only when every rule that fired
	// is named in Config.Allowlist.
	ModeAllowlist Mode = "allowlist"
)

// ErrUnknownMode is wrapped by every error about a mode that is not one of
// ModeDeny, ModeAllowlist or ModeApprove.
var ErrUnknownMode = errors.New("unknown mode")

// ParseMode parses a mode name as written in configuration. The empty string
// is an error too: callers that want "the origin default" leave
// Request.Mode empty instead of parsing.
func ParseMode(s string) (Mode, error) {
	m := Mode(s)
	if !m.valid() {
		return "", fmt.Errorf("%w %q (valid: deny, allowlist, approve)", ErrUnknownMode, s)
	}
	return m, nil
}

func (m Mode) valid() bool {
	return m == ModeDeny || m == ModeAllowlist || m == ModeApprove
}

// rank orders modes by permissiveness; an invalid mode ranks as deny.
func (m Mode) rank() int {
	switch m {
	case ModeAllowlist:
		return 1
	case ModeApprove:
		return 2
	default:
		return 0
	}
}

// minMode returns the less permissive of a and b.
func minMode(a, b Mode) Mode {
	if b.rank() < a.rank() {
		return b
	}
	return a
}
