package modal

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Environment variables the SDK reads, which Resolve reads the same way.
const (
	envTokenID     = "MODAL_TOKEN_ID"     //nolint:gosec // a variable's name, not a credential
	envTokenSecret = "MODAL_TOKEN_SECRET" //nolint:gosec // a variable's name, not a credential
	envServerURL   = "MODAL_SERVER_URL"
	envProfile     = "MODAL_PROFILE"
	envEnvironment = "MODAL_ENVIRONMENT"
)

// resolveDirect finds a Modal token in the environment and the Modal
// config file. On failure it returns what it found instead, by name.
func resolveDirect(in ResolveInput) (Resolution, []string) {
	file, err := readModalFile(modalConfigPath(in))
	if err != nil {
		return Resolution{}, []string{err.Error()}
	}
	name, why := in.Config.Profile, "profile"
	if name == "" {
		name, _ = in.LookupEnv(envProfile)
		why = envProfile
	}
	name, prof, problem := file.pick(name, why)
	if problem != "" {
		return Resolution{}, []string{problem}
	}
	envID, _ := in.LookupEnv(envTokenID)
	envSecret, _ := in.LookupEnv(envTokenSecret)
	tok := &token{id: firstNonEmpty(envID, prof.TokenID), secret: firstNonEmpty(envSecret, prof.TokenSecret)}
	if tok.id == "" || tok.secret == "" {
		return Resolution{}, describeMissing(file, name, prof, envID != "", envSecret != "")
	}

	envURL, _ := in.LookupEnv(envServerURL)
	if envURL != "" && in.Config.ServerURL != "" && envURL != in.Config.ServerURL {
		return Resolution{}, []string{fmt.Sprintf("server_url %s conflicts with %s=%s, which the SDK would use", in.Config.ServerURL, envServerURL, envURL)}
	}
	server := firstNonEmpty(envURL, in.Config.ServerURL, prof.ServerURL, DefaultServerURL)
	if err := checkServerURL(server); err != nil {
		return Resolution{}, []string{"server URL: " + err.Error()}
	}
	envEnv, _ := in.LookupEnv(envEnvironment)
	return Resolution{
		Using:       ModeDirect,
		ServerURL:   server,
		Environment: firstNonEmpty(in.Config.Environment, envEnv, prof.Environment),
		Source:      tokenSource(file, name, envID != "", envSecret != ""),
		token:       tok,
	}, nil
}

// describeMissing says, by name only, where a token was looked for.
func describeMissing(file modalFile, name string, prof modalProfile, envID, envSecret bool) []string {
	var found []string
	switch {
	case envID && envSecret:
	case envID:
		found = append(found, envTokenID+" is set but "+envTokenSecret+" is not")
	case envSecret:
		found = append(found, envTokenSecret+" is set but "+envTokenID+" is not")
	default:
		found = append(found, envTokenID+" and "+envTokenSecret+" are not set")
	}
	switch {
	case file.path == "":
		found = append(found, "no home directory for ~/.modal.toml")
	case !file.exists:
		found = append(found, file.path+" does not exist")
	case name == "":
		found = append(found, file.path+" has no active profile")
	case prof.OAuthRefreshToken != "" && prof.TokenID == "":
		found = append(found, fmt.Sprintf("profile %q in %s holds OAuth credentials, which this backend does not use", name, file.path))
	default:
		found = append(found, fmt.Sprintf("profile %q in %s has token_id %s, token_secret %s", name, file.path, have(prof.TokenID), have(prof.TokenSecret)))
	}
	return found
}

// tokenSource names where each half of a token came from.
func tokenSource(file modalFile, name string, envID, envSecret bool) string {
	prof := fmt.Sprintf("profile %q in %s", name, file.path)
	switch {
	case envID && envSecret:
		return envTokenID + ", " + envTokenSecret
	case envID:
		return envTokenID + " and the token_secret of " + prof
	case envSecret:
		return envTokenSecret + " and the token_id of " + prof
	default:
		return prof
	}
}

func have(s string) string {
	if s == "" {
		return "missing"
	}
	return "set"
}

// resolveManaged takes the gateway path if the gateway is configured,
// has its token and passes its readiness check. Otherwise it says why.
func resolveManaged(ctx context.Context, in ResolveInput) (Resolution, string) {
	gw := in.Config.Gateway
	idEnv, secretEnv := firstNonEmpty(gw.TokenIDEnv, defaultTokenIDEnv), firstNonEmpty(gw.TokenSecretEnv, defaultSecretEnv)
	if gw.URL == "" {
		return Resolution{}, "gateway.url is not set"
	}
	if err := checkServerURL(gw.URL); err != nil {
		return Resolution{}, "gateway.url: " + err.Error()
	}
	id, _ := in.LookupEnv(idEnv)
	secret, _ := in.LookupEnv(secretEnv)
	if id == "" || secret == "" {
		return Resolution{}, fmt.Sprintf("gateway token: %s is %s, %s is %s", idEnv, set(id), secretEnv, set(secret))
	}
	if envURL, _ := in.LookupEnv(envServerURL); envURL != "" && envURL != gw.URL {
		return Resolution{}, fmt.Sprintf("%s=%s is set, and the SDK would send the gateway token there instead of gateway.url", envServerURL, envURL)
	}
	r := Resolution{Using: ModeManaged, ServerURL: gw.URL, Environment: in.Config.Environment,
		Source: idEnv + ", " + secretEnv, token: &token{id: id, secret: secret}}
	timeout := gw.CheckTimeout
	if timeout <= 0 {
		timeout = defaultCheckTimeout
	}
	if err := checkReady(ctx, in.Ready, r.endpoint(), timeout); err != nil {
		return Resolution{}, "gateway " + gw.URL + " not ready: " + err.Error()
	}
	return r, ""
}

func set(s string) string {
	if s == "" {
		return "not set"
	}
	return "set"
}

// errNotReady is a readiness check's "no".
var errNotReady = errors.New("the check says not ready")

// checkReady runs ready and fails closed: a nil check, false, an error, a
// panic or no answer within timeout are all "not ready". The check runs on
// its own goroutine so that one ignoring ctx cannot hold up start-up; it is
// left to finish on its own.
func checkReady(ctx context.Context, ready ReadyFunc, ep Endpoint, timeout time.Duration) error {
	if ready == nil {
		return errors.New("no readiness check")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fmt.Errorf("the check panicked: %v", p)
			}
		}()
		ok, err := ready(ctx, ep)
		switch {
		case err != nil:
			done <- err
		case !ok:
			done <- errNotReady
		default:
			done <- nil
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("no answer: %w", context.Cause(ctx))
	}
}
