package policy

import (
	"errors"
	"fmt"
	"path/filepath"

	"mvdan.cc/sh/v3/syntax"
)

// Shell is the dialect of the shell that runs a command. The detector
// parses the command the way that shell reads it.
type Shell string

const (
	// ShellSh is /bin/sh, which backends run as `/bin/sh -c COMMAND`: dash
	// on Debian and Ubuntu, busybox ash on Alpine and in many small
	// images, bash in POSIX mode on Fedora and RHEL. A command judged as
	// sh must mean the same to all of them: one that POSIX sh and bash
	// read differently is refused (rule shell-dialect). It is the default.
	ShellSh Shell = "sh"
	// ShellPOSIX is another name for ShellSh.
	ShellPOSIX Shell = "posix"
	// ShellBash is bash, for a backend that runs `bash -c COMMAND`.
	ShellBash Shell = "bash"
)

// ErrUnknownShell is returned by ParseShell, and wrapped in a *FieldError
// by New, for a shell other than sh, posix or bash.
var ErrUnknownShell = errors.New("unknown shell")

// ParseShell parses a shell name as a configuration or flag gives it:
// "sh" or "posix" (ShellSh), "bash" (ShellBash), or "" (none named: the
// default applies).
func ParseShell(s string) (Shell, error) {
	if sh, ok := Shell(s).canonical(); ok || s == "" {
		return sh, nil
	}
	return "", fmt.Errorf("%w %q (valid: sh, posix, bash)", ErrUnknownShell, s)
}

// canonical maps posix to sh; ok is false for "" and unknown names.
func (s Shell) canonical() (Shell, bool) {
	switch s {
	case ShellSh, ShellPOSIX:
		return ShellSh, true
	case ShellBash:
		return ShellBash, true
	}
	return "", false
}

// lang is the parser variant that reads s as its shell does.
func (s Shell) lang() syntax.LangVariant {
	if s == ShellBash {
		return syntax.LangBash
	}
	return syntax.LangPOSIX
}

// other is the dialect the detector reads a script in as well, to find
// the places where the two disagree.
func (s Shell) other() Shell {
	if s == ShellBash {
		return ShellSh
	}
	return ShellBash
}

// shellOf returns the dialect a shell program reads its script in. The
// POSIX shells are sh; bash and the shells nearest to it (ksh, mksh, zsh;
// fish and csh, which neither parser reads, as before) are bash. Anything
// else (a login shell, $SHELL, a script without a known interpreter) is
// sh: the strict reading, which refuses what the dialects read differently.
func shellOf(program string) Shell {
	switch program {
	case "bash", "rbash", "ksh", "ksh93", "mksh", "zsh", "fish", "csh", "tcsh":
		return ShellBash
	}
	return ShellSh
}

// ShellOf is the dialect of the shell at path (or named name): bash for
// bash, sh for everything else a backend runs as `SHELL -c` (sh, dash,
// ash, busybox), which is the stricter reading.
func ShellOf(path string) Shell {
	if filepath.Base(path) == "bash" {
		return ShellBash
	}
	return ShellSh
}
