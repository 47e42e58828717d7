package modal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Mode says where the backend's Modal credentials come from.
type Mode string

// Credential modes (Config.Mode).
const (
	// ModeAuto uses the managed gateway when it is configured and ready,
	// else direct credentials.
	ModeAuto Mode = "auto"
	// ModeDirect uses a Modal token from MODAL_TOKEN_ID/MODAL_TOKEN_SECRET
	// or a profile of the Modal config file.
	ModeDirect Mode = "direct"
	// ModeManaged uses Config.Gateway, and only once it is ready.
	ModeManaged Mode = "managed"
)

// ErrNoCredentials is wrapped by every ResolveError.
var ErrNoCredentials = errors.New("modal: no usable credentials")

// ResolveError says why no credential mode could be used: which mode was
// asked, what was found (never a secret value) and what to set.
type ResolveError struct {
	Mode  Mode
	Found []string
	Set   string
}

func (e *ResolveError) Error() string {
	return fmt.Sprintf("modal: mode %s: no usable credentials: %s; %s", e.Mode, strings.Join(e.Found, "; "), e.Set)
}

// Unwrap returns ErrNoCredentials.
func (e *ResolveError) Unwrap() error { return ErrNoCredentials }

// token is a Modal token pair. It is only ever held behind a pointer in
// unexported fields, so printing a value that holds one shows an address.
type token struct{ id, secret string }

// Endpoint is a Modal API server and the token that opens it. The token
// is not exported: a readiness check inside this package uses it.
type Endpoint struct {
	ServerURL string
	token     *token
}

// ReadyFunc reports whether a managed gateway takes work. Resolve calls it
// with a context bounded by gateway.check_timeout; anything but (true,
// nil) in time — false, an error, a panic, no answer — keeps the managed
// path closed.
type ReadyFunc func(ctx context.Context, gateway Endpoint) (bool, error)

// ResolveInput is everything Resolve looks at, so that it can be tested
// without touching the worker's environment or home directory.
type ResolveInput struct {
	// Config is the backend profile (mode, profile, config_path,
	// server_url, environment, gateway); defaults need not be filled in.
	Config Config
	// LookupEnv reads environment variables; nil reads none.
	LookupEnv func(key string) (string, bool)
	// HomeDir holds .modal.toml unless config_path or MODAL_CONFIG_PATH
	// says otherwise; empty means there is no such file.
	HomeDir string
	// Ready checks the managed gateway; nil means it is never ready.
	Ready ReadyFunc
}

// Resolution is the credential path Resolve chose. Printing it (%v, %+v,
// %#v, slog) never shows the token.
type Resolution struct {
	// Mode is the mode asked for; Using is the path taken (direct or
	// managed), empty while nothing has been resolved.
	Mode  Mode
	Using Mode
	// ServerURL and Environment are what the SDK is given.
	ServerURL   string
	Environment string
	// Source says where the token came from, by name only.
	Source string
	// Fallback says why auto mode did not take the managed path.
	Fallback string

	token *token
}

// String describes r in one line, without secrets.
func (r Resolution) String() string {
	if r.Using == "" {
		return "modal: credentials not resolved"
	}
	s := fmt.Sprintf("modal: mode %s using %s: %s, token from %s", r.Mode, r.Using, r.ServerURL, r.Source)
	if r.Environment != "" {
		s += ", environment " + r.Environment
	}
	if r.Fallback != "" {
		s += " (managed not used: " + r.Fallback + ")"
	}
	return s
}

// GoString keeps %#v from printing the token.
func (r Resolution) GoString() string { return r.String() }

// LogValue implements slog.LogValuer without the token.
func (r Resolution) LogValue() slog.Value {
	return slog.GroupValue(slog.String("mode", string(r.Mode)), slog.String("using", string(r.Using)),
		slog.String("server_url", r.ServerURL), slog.String("environment", r.Environment),
		slog.String("source", r.Source), slog.String("fallback", r.Fallback))
}

// endpoint is the server and token r resolved to.
func (r Resolution) endpoint() Endpoint { return Endpoint{ServerURL: r.ServerURL, token: r.token} }

// Resolve picks the backend's credentials, in one place for start-up,
// `sandrun doctor` and submit-time checks:
//
//	mode     gateway ready   direct token found   result
//	managed  yes             -                    managed
//	managed  no/error        -                    ResolveError
//	direct   -               yes                  direct
//	direct   -               no                   ResolveError
//	auto     yes             -                    managed
//	auto     no/error/unset  yes                  direct (Fallback says why)
//	auto     no/error/unset  no                   ResolveError
//
// A direct token is MODAL_TOKEN_ID/MODAL_TOKEN_SECRET, each overriding the
// same key of the Modal config file's profile — the one Config.Profile or
// MODAL_PROFILE names, else the one marked active — as the SDK does.
func Resolve(ctx context.Context, in ResolveInput) (Resolution, error) {
	mode := Mode(firstNonEmpty(string(in.Config.Mode), string(ModeAuto)))
	if in.LookupEnv == nil {
		in.LookupEnv = func(string) (string, bool) { return "", false }
	}
	var found []string
	if mode == ModeManaged || (mode == ModeAuto && in.Config.Gateway.URL != "") {
		r, why := resolveManaged(ctx, in)
		if why == "" {
			r.Mode = mode
			return r, nil
		}
		found = append(found, "managed: "+why)
		if mode == ModeManaged {
			return Resolution{}, &ResolveError{Mode: mode, Found: found, Set: setManaged}
		}
	}
	if mode != ModeDirect && mode != ModeAuto {
		return Resolution{}, &ResolveError{Mode: mode, Found: []string{"unknown mode"}, Set: "set mode: auto, direct or managed"}
	}
	r, why := resolveDirect(in)
	if why != nil {
		if mode == ModeAuto && len(found) == 0 {
			found = append(found, "managed: gateway.url is not set")
		}
		found = append(found, "direct: "+strings.Join(why, ", "))
		set := setDirect
		if mode == ModeAuto {
			set += "; or " + setManaged
		}
		return Resolution{}, &ResolveError{Mode: mode, Found: found, Set: set}
	}
	r.Mode = mode
	if len(found) > 0 {
		r.Fallback = strings.TrimPrefix(found[0], "managed: ")
	}
	return r, nil
}

const (
	setDirect  = "set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or run `modal token set` to write ~/.modal.toml (config_path, profile: pick the file and profile)"
	setManaged = "set gateway.url and the gateway token variables gateway.token_id_env and gateway.token_secret_env name, and make sure the gateway answers"
)
