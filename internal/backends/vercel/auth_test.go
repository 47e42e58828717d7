package vercel

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandrun/sandrun/internal/backends"
	"github.com/sandrun/sandrun/internal/backends/httpsandbox/sandboxtest"
	"github.com/sandrun/sandrun/internal/backends/vercel/verceltest"
)

// TestWrongTokenIsPermanent: the API answers 403 to a wrong token or
// team; Validate and Run fail with ErrPermanent, naming the variable that
// held the token and never the token.
func TestWrongTokenIsPermanent(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	const wrong = "vc_wrong_token_0123456789"
	wrongToken := fakeConfig(f)
	wrongToken.LookupEnv = envOf(map[string]string{DefaultTokenEnv: wrong})
	wrongTeam := fakeConfig(f)
	wrongTeam.TeamID = "team_other"
	for _, cfg := range []Config{wrongToken, wrongTeam} {
		b := newBackend(t, cfg)
		err := b.Validate(t.Context())
		if !errors.Is(err, backends.ErrPermanent) || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), DefaultTokenEnv) {
			t.Fatalf("Validate: %v; want ErrPermanent, 403, naming %s", err, DefaultTokenEnv)
		}
		_, runErr := b.Run(t.Context(), backends.Spec{JobID: "j", Attempt: 1, Command: "true"}, backends.Output{})
		if !errors.Is(runErr, backends.ErrPermanent) {
			t.Fatalf("Run: %v; want ErrPermanent", runErr)
		}
		for _, e := range []error{err, runErr} {
			if strings.Contains(e.Error(), wrong) || strings.Contains(e.Error(), f.Token) {
				t.Errorf("error shows a token: %v", e)
			}
		}
	}
	if len(f.Created()) != 0 {
		t.Errorf("a sandbox was created with wrong credentials")
	}
}

// TestOIDCToken: an OIDC token alone reaches the API, for the team and
// project its payload names.
func TestOIDCToken(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	b := newBackend(t, Config{APIURL: f.URL, LookupEnv: envOf(map[string]string{DefaultOIDCTokenEnv: f.OIDCToken()})})
	if err := b.Validate(t.Context()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if res, err := b.Run(t.Context(), backends.Spec{JobID: "j", Attempt: 1, Command: "exit 4"}, backends.Output{}); err != nil || res.ExitCode != 4 {
		t.Fatalf("Run: %+v, %v", res, err)
	}
}

// TestUnreachableIsUnavailable: connection failures are ErrUnavailable.
func TestUnreachableIsUnavailable(t *testing.T) {
	t.Parallel()
	f := verceltest.Start(t)
	cfg := fakeConfig(f)
	f.Close()
	sandboxtest.ValidateUnavailable(t, newBackend(t, cfg))
}
