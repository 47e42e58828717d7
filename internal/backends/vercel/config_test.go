package vercel

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// jwtFor returns an unsigned JWT carrying claims.
func jwtFor(claims map[string]any) string {
	payload, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(payload) + ".sig"
}

// TestNewChecksEveryField: New refuses each bad field, and credentials
// that do not go together, with an error naming the field; it never shows
// a token.
func TestNewChecksEveryField(t *testing.T) {
	t.Parallel()
	const token = "vc_secret_token_123"
	oidc := jwtFor(map[string]any{"owner_id": "team_o", "project_id": "prj_o", "exp": time.Now().Add(time.Hour).Unix()})
	noProject := jwtFor(map[string]any{"owner_id": "team_o"})
	expired := jwtFor(map[string]any{"owner_id": "team_o", "project_id": "prj_o", "exp": time.Now().Add(-time.Hour).Unix()})
	withToken := map[string]string{DefaultTokenEnv: token}
	tests := []struct {
		name string
		cfg  Config
		env  map[string]string
		want string // Substring of the error; "" means no error.
	}{
		{"token, team and project", Config{TeamID: "t", ProjectID: "p"}, withToken, ""},
		{"token without team", Config{ProjectID: "p"}, withToken, "vercel.team_id: required with token (token_env VERCEL_TOKEN)"},
		{"token without project", Config{TeamID: "t"}, withToken, "project_id: required with token"},
		{"token alone", Config{}, withToken, "team_id, project_id: required with token"},
		{"no credentials", Config{TeamID: "t", ProjectID: "p"}, nil, "token_env: VERCEL_TOKEN and oidc_token_env: VERCEL_OIDC_TOKEN are both unset"},
		{"blank token", Config{TeamID: "t", ProjectID: "p"}, map[string]string{DefaultTokenEnv: " "}, "both unset"},
		{"oidc", Config{}, map[string]string{DefaultOIDCTokenEnv: oidc}, ""},
		{"oidc, same team", Config{TeamID: "team_o", ProjectID: "prj_o"}, map[string]string{DefaultOIDCTokenEnv: oidc}, ""},
		{"oidc, other team", Config{TeamID: "t"}, map[string]string{DefaultOIDCTokenEnv: oidc}, "team_id: t, but the OIDC token in VERCEL_OIDC_TOKEN is for team team_o"},
		{"oidc, other project", Config{ProjectID: "p"}, map[string]string{DefaultOIDCTokenEnv: oidc}, "project_id: p, but the OIDC token"},
		{"oidc without project", Config{}, map[string]string{DefaultOIDCTokenEnv: noProject}, "project_id: required: the OIDC token in VERCEL_OIDC_TOKEN names no project"},
		{"oidc without project, set", Config{ProjectID: "p"}, map[string]string{DefaultOIDCTokenEnv: noProject}, ""},
		{"oidc expired", Config{}, map[string]string{DefaultOIDCTokenEnv: expired}, "oidc_token_env: the token in VERCEL_OIDC_TOKEN expired"},
		{"oidc not a JWT", Config{}, map[string]string{DefaultOIDCTokenEnv: token}, "oidc_token_env: VERCEL_OIDC_TOKEN: not a JWT"},
		{"runtime", Config{TeamID: "t", ProjectID: "p", Runtime: "node18"}, withToken, `runtime: "node18": want one of node26, node24, node22, python3.13`},
		{"python runtime", Config{TeamID: "t", ProjectID: "p", Runtime: "python3.13"}, withToken, ""},
		{"vcpus odd", Config{TeamID: "t", ProjectID: "p", VCPUs: 3}, withToken, "vcpus: 3: must be 1 or an even number"},
		{"vcpus one", Config{TeamID: "t", ProjectID: "p", VCPUs: 1}, withToken, ""},
		{"network policy", Config{TeamID: "t", ProjectID: "p", NetworkPolicy: "custom"}, withToken, `network_policy: "custom": want allow-all or deny-all`},
		{"sandbox timeout", Config{TeamID: "t", ProjectID: "p", SandboxTimeout: time.Second}, withToken, "sandbox_timeout: 1s: must be at least 1m"},
		{"negative timeout", Config{TeamID: "t", ProjectID: "p", RequestTimeout: -time.Second}, withToken, "request_timeout: -1s: must not be negative"},
		{"api url", Config{TeamID: "t", ProjectID: "p", APIURL: "vercel.com"}, withToken, "api_url"},
		{"token env name", Config{TeamID: "t", ProjectID: "p", TokenEnv: "A-B"}, withToken, `token_env: "A-B" is not an environment variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.cfg.LookupEnv = envOf(tt.env)
			b, err := New(tt.cfg)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_ = b.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v; want an error containing %q", err, tt.want)
			}
			for _, secret := range []string{token, oidc, expired, noProject} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error shows a token: %v", err)
				}
			}
		})
	}
}

// TestNewFillsDefaults: an empty profile gets the documented defaults, in
// a copy; OIDC credentials take the token's team and project.
func TestNewFillsDefaults(t *testing.T) {
	t.Parallel()
	cfg := Config{LookupEnv: envOf(map[string]string{DefaultOIDCTokenEnv: jwtFor(map[string]any{"owner_id": "team_o", "project_id": "prj_o"})})}
	b := newBackend(t, cfg)
	s := b.cfg
	if s.APIURL != DefaultAPIURL || s.Runtime != DefaultRuntime || s.VCPUs != DefaultVCPUs || s.NetworkPolicy != NetworkAllowAll ||
		s.SandboxTimeout != DefaultSandboxTimeout || s.StartTimeout != DefaultStartTimeout || s.RequestTimeout != DefaultRequestTimeout {
		t.Errorf("defaults not filled in: %+v", s)
	}
	if s.creds.team != "team_o" || s.creds.project != "prj_o" || s.creds.env != DefaultOIDCTokenEnv {
		t.Errorf("credentials %+v", s.creds)
	}
	if cfg.Runtime != "" {
		t.Errorf("New changed the caller's Config")
	}
	if b.Kind() != "vercel" || !b.Capabilities().Isolated || !b.Capabilities().ResourceLimits {
		t.Errorf("Kind %q, Capabilities %+v", b.Kind(), b.Capabilities())
	}
}
