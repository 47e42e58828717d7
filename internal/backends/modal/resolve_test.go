package modal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Secret values in the resolution tests' inputs; none may be printed.
const (
	envSecret  = "as-env-SECRET-1"
	workSecret = "as-work-SECRET-2"
	persSecret = "as-pers-SECRET-3"
	gwSecret   = "as-gw-SECRET-4"
)

var secrets = []string{envSecret, workSecret, persSecret, gwSecret}

const profiles = `
[work]
token_id = "ak-work"
token_secret = "` + workSecret + `"
environment = "prod"
active = true

[personal]
token_id = "ak-pers"
token_secret = "` + persSecret + `"
server_url = "https://modal.example.com:443"
`

var (
	envToken = env{envTokenID: "ak-env", envTokenSecret: envSecret}
	gwToken  = env{"SANDRUN_MODAL_GATEWAY_TOKEN_ID": "ak-gw", "SANDRUN_MODAL_GATEWAY_TOKEN_SECRET": gwSecret}
	gateway  = Gateway{URL: "https://gw.example.com:443"}
)

func ready(ok bool, err error) ReadyFunc {
	return func(context.Context, Endpoint) (bool, error) { return ok, err }
}

// neverCalled fails the test if the managed path's check runs.
func neverCalled(t *testing.T) ReadyFunc {
	return func(context.Context, Endpoint) (bool, error) {
		t.Error("the readiness check ran")
		return true, nil
	}
}

func join(envs ...env) env {
	all := env{}
	for _, e := range envs {
		for k, v := range e {
			all[k] = v
		}
	}
	return all
}

func TestResolve(t *testing.T) {
	t.Parallel()
	hung := make(chan struct{})
	t.Cleanup(func() { close(hung) })
	tests := []struct {
		name    string
		cfg     Config
		env     env
		file    string // ~/.modal.toml; "" for none
		ready   func(t *testing.T) ReadyFunc
		want    Resolution // Fallback: a substring
		tokenID string
		wantErr []string // substrings; $HOME is the home directory
	}{{
		name: "direct from the environment", cfg: Config{Mode: ModeDirect}, env: envToken,
		want:    Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: DefaultServerURL, Source: "MODAL_TOKEN_ID, MODAL_TOKEN_SECRET"},
		tokenID: "ak-env",
	}, {
		name: "direct from the active profile", cfg: Config{Mode: ModeDirect}, file: profiles,
		want:    Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: DefaultServerURL, Environment: "prod", Source: `profile "work" in $HOME/.modal.toml`},
		tokenID: "ak-work",
	}, {
		name: "direct from the profile config names", cfg: Config{Mode: ModeDirect, Profile: "personal"}, file: profiles,
		want:    Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: "https://modal.example.com:443", Source: `profile "personal" in $HOME/.modal.toml`},
		tokenID: "ak-pers",
	}, {
		name: "direct from the profile MODAL_PROFILE names", cfg: Config{Mode: ModeDirect}, file: profiles, env: env{envProfile: "personal"},
		want:    Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: "https://modal.example.com:443", Source: `profile "personal" in $HOME/.modal.toml`},
		tokenID: "ak-pers",
	}, {
		name: "the environment's token overrides the profile's", cfg: Config{Mode: ModeDirect}, file: profiles, env: envToken,
		want:    Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: DefaultServerURL, Environment: "prod", Source: "MODAL_TOKEN_ID, MODAL_TOKEN_SECRET"},
		tokenID: "ak-env",
	}, {
		name: "half a token from each", cfg: Config{Mode: ModeDirect}, file: profiles, env: env{envTokenID: "ak-env"},
		want:    Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: DefaultServerURL, Environment: "prod", Source: `MODAL_TOKEN_ID and the token_secret of profile "work" in $HOME/.modal.toml`},
		tokenID: "ak-env",
	}, {
		name: "MODAL_SERVER_URL overrides the profile's", cfg: Config{Mode: ModeDirect, Profile: "personal"}, file: profiles,
		env:     env{envServerURL: "http://127.0.0.1:1"},
		want:    Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: "http://127.0.0.1:1", Source: `profile "personal" in $HOME/.modal.toml`},
		tokenID: "ak-pers",
	}, {
		name: "config_path and environment", cfg: Config{Mode: ModeDirect, ConfigPath: "$HOME/other.toml", Environment: "dev", ServerURL: "http://127.0.0.1:2"},
		file: "", env: env{}, want: Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: "http://127.0.0.1:2", Environment: "dev", Source: `profile "x" in $HOME/other.toml`},
		tokenID: "ak-other",
	}, {
		name: "server_url conflicts with MODAL_SERVER_URL", cfg: Config{Mode: ModeDirect, ServerURL: "http://127.0.0.1:2"},
		env:     join(envToken, env{envServerURL: "http://127.0.0.1:3"}),
		wantErr: []string{"server_url http://127.0.0.1:2 conflicts with MODAL_SERVER_URL=http://127.0.0.1:3"},
	}, {
		name: "a named profile that is not there", cfg: Config{Mode: ModeDirect, Profile: "nope"}, file: profiles,
		wantErr: []string{`mode direct`, `profile names profile "nope", which $HOME/.modal.toml does not have (profiles: personal, work)`},
	}, {
		name: "two active profiles", cfg: Config{Mode: ModeDirect}, file: "[a]\nactive = true\n[b]\nactive = true\n",
		wantErr: []string{"$HOME/.modal.toml marks profiles a, b active: set profile"},
	}, {
		name: "half a token", cfg: Config{Mode: ModeDirect}, env: env{envTokenID: "ak-env"},
		wantErr: []string{"MODAL_TOKEN_ID is set but MODAL_TOKEN_SECRET is not", "$HOME/.modal.toml does not exist", "set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET"},
	}, {
		name: "a profile with half a token", cfg: Config{Mode: ModeDirect}, file: "[w]\nactive = true\ntoken_id = \"ak-w\"\n",
		wantErr: []string{`profile "w" in $HOME/.modal.toml has token_id set, token_secret missing`},
	}, {
		name: "invalid TOML", cfg: Config{Mode: ModeDirect}, file: "[w]\ntoken_secret = \"" + workSecret + "\"\ntoken_id = \n",
		wantErr: []string{"$HOME/.modal.toml: not valid TOML at line 3"},
	}, {
		name: "managed, ready", cfg: Config{Mode: ModeManaged, Gateway: gateway}, env: join(envToken, gwToken),
		ready:   func(*testing.T) ReadyFunc { return ready(true, nil) },
		want:    Resolution{Mode: ModeManaged, Using: ModeManaged, ServerURL: gateway.URL, Source: "SANDRUN_MODAL_GATEWAY_TOKEN_ID, SANDRUN_MODAL_GATEWAY_TOKEN_SECRET"},
		tokenID: "ak-gw",
	}, {
		name: "managed, the check fails", cfg: Config{Mode: ModeManaged, Gateway: gateway}, env: join(envToken, gwToken),
		ready:   func(*testing.T) ReadyFunc { return ready(false, errors.New("connection refused")) },
		wantErr: []string{"mode managed", "gateway https://gw.example.com:443 not ready: connection refused", setManaged},
	}, {
		name: "managed, the check says no", cfg: Config{Mode: ModeManaged, Gateway: gateway}, env: gwToken,
		ready:   func(*testing.T) ReadyFunc { return ready(false, nil) },
		wantErr: []string{"not ready: the check says not ready"},
	}, {
		name: "managed, the check says yes with an error", cfg: Config{Mode: ModeManaged, Gateway: gateway}, env: gwToken,
		ready:   func(*testing.T) ReadyFunc { return ready(true, errors.New("half-open")) },
		wantErr: []string{"not ready: half-open"},
	}, {
		name: "managed, the check panics", cfg: Config{Mode: ModeManaged, Gateway: gateway}, env: gwToken,
		ready:   func(*testing.T) ReadyFunc { return func(context.Context, Endpoint) (bool, error) { panic("boom") } },
		wantErr: []string{"not ready: the check panicked: boom"},
	}, {
		name: "managed, the check never answers", cfg: Config{Mode: ModeManaged, Gateway: Gateway{URL: gateway.URL, CheckTimeout: 50 * time.Millisecond}}, env: gwToken,
		ready: func(*testing.T) ReadyFunc {
			return func(context.Context, Endpoint) (bool, error) { <-hung; return true, nil }
		},
		wantErr: []string{"not ready: no answer: context deadline exceeded"},
	}, {
		name: "managed, no check", cfg: Config{Mode: ModeManaged, Gateway: gateway}, env: gwToken,
		wantErr: []string{"not ready: no readiness check"},
	}, {
		name: "managed without its token", cfg: Config{Mode: ModeManaged, Gateway: gateway}, env: envToken, ready: neverCalled,
		wantErr: []string{"gateway token: SANDRUN_MODAL_GATEWAY_TOKEN_ID is not set, SANDRUN_MODAL_GATEWAY_TOKEN_SECRET is not set"},
	}, {
		name: "managed with MODAL_SERVER_URL pointing elsewhere", cfg: Config{Mode: ModeManaged, Gateway: gateway},
		env: join(gwToken, env{envServerURL: "https://api.modal.com:443"}), ready: neverCalled,
		wantErr: []string{"MODAL_SERVER_URL=https://api.modal.com:443 is set, and the SDK would send the gateway token there"},
	}, {
		name: "auto takes managed when ready", cfg: Config{Gateway: gateway}, env: join(envToken, gwToken),
		ready:   func(*testing.T) ReadyFunc { return ready(true, nil) },
		want:    Resolution{Mode: ModeAuto, Using: ModeManaged, ServerURL: gateway.URL, Source: "SANDRUN_MODAL_GATEWAY_TOKEN_ID, SANDRUN_MODAL_GATEWAY_TOKEN_SECRET"},
		tokenID: "ak-gw",
	}, {
		name: "auto falls back to direct when managed is not ready", cfg: Config{Gateway: gateway}, env: join(envToken, gwToken),
		ready: func(*testing.T) ReadyFunc { return ready(false, errors.New("503")) },
		want: Resolution{Mode: ModeAuto, Using: ModeDirect, ServerURL: DefaultServerURL, Source: "MODAL_TOKEN_ID, MODAL_TOKEN_SECRET",
			Fallback: "gateway https://gw.example.com:443 not ready: 503"},
		tokenID: "ak-env",
	}, {
		name: "auto without a gateway is direct", cfg: Config{}, env: envToken, ready: neverCalled,
		want:    Resolution{Mode: ModeAuto, Using: ModeDirect, ServerURL: DefaultServerURL, Source: "MODAL_TOKEN_ID, MODAL_TOKEN_SECRET"},
		tokenID: "ak-env",
	}, {
		name: "direct ignores the gateway", cfg: Config{Mode: ModeDirect, Gateway: gateway}, env: join(envToken, gwToken), ready: neverCalled,
		want:    Resolution{Mode: ModeDirect, Using: ModeDirect, ServerURL: DefaultServerURL, Source: "MODAL_TOKEN_ID, MODAL_TOKEN_SECRET"},
		tokenID: "ak-env",
	}, {
		name: "auto with nothing", cfg: Config{},
		wantErr: []string{"modal: mode auto: no usable credentials: managed: gateway.url is not set; direct: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are not set, $HOME/.modal.toml does not exist; set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or run `modal token set`", "or set gateway.url"},
	}, {
		name: "auto with a broken gateway and no token", cfg: Config{Gateway: gateway}, env: gwToken, file: "[idle]\ntoken_id = \"ak-idle\"\n",
		ready:   func(*testing.T) ReadyFunc { return ready(false, errors.New("unauthenticated")) },
		wantErr: []string{"mode auto", "managed: gateway https://gw.example.com:443 not ready: unauthenticated", "direct: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET are not set, $HOME/.modal.toml has no active profile"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			if tt.file != "" {
				writeFile(t, filepath.Join(home, ".modal.toml"), tt.file)
			}
			writeFile(t, filepath.Join(home, "other.toml"), "[x]\nactive = true\ntoken_id = \"ak-other\"\ntoken_secret = \""+persSecret+"\"\n")
			in := ResolveInput{Config: tt.cfg, LookupEnv: tt.env.lookup, HomeDir: home}
			in.Config.ConfigPath = strings.ReplaceAll(in.Config.ConfigPath, "$HOME", home)
			if tt.ready != nil {
				in.Ready = tt.ready(t)
			}
			res, err := Resolve(t.Context(), in)
			assertNoSecrets(t, res, err)
			if tt.wantErr != nil {
				if !errors.Is(err, ErrNoCredentials) {
					t.Fatalf("Resolve: %v, %v; want a ResolveError", res, err)
				}
				for _, want := range tt.wantErr {
					if want = strings.ReplaceAll(want, "$HOME", home); !strings.Contains(err.Error(), want) {
						t.Errorf("error %q\ndoes not say %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			want := tt.want
			want.Source = strings.ReplaceAll(want.Source, "$HOME", home)
			got := res
			if !strings.Contains(got.Fallback, want.Fallback) || (want.Fallback == "") != (got.Fallback == "") {
				t.Errorf("Fallback %q, want it to say %q", got.Fallback, want.Fallback)
			}
			got.Fallback, want.Fallback, got.token = "", "", nil
			if got != want {
				t.Errorf("Resolve:\n got %#v\nwant %#v", got, want)
			}
			if res.token == nil || res.token.id != tt.tokenID {
				t.Errorf("token %+v, want id %s", res.token, tt.tokenID)
			}
		})
	}
}

// assertNoSecrets checks that no way of printing res or err shows a
// secret.
func assertNoSecrets(t *testing.T, res Resolution, err error) {
	t.Helper()
	var log bytes.Buffer
	slog.New(slog.NewJSONHandler(&log, nil)).Info("x", "res", res, "err", err)
	printed := fmt.Sprintf("%v %+v %#v %s %v %+v", res, res, res, res, err, err) + log.String()
	for _, s := range secrets {
		if strings.Contains(printed, s) {
			t.Errorf("a secret shows in %s", printed)
		}
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}
