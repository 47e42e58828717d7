package modal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sync"

	modal "github.com/modal-labs/modal-client/go"
	"github.com/pelletier/go-toml/v2"
)

// sdkProfile is the one profile this backend hands the SDK in place of
// its config file. Tokens are not in it: they go in ClientParams.
type sdkProfile struct {
	ServerURL string `toml:"server_url"`
	Active    bool   `toml:"active"`
}

// newClient opens an SDK client on ep.
//
// The SDK takes its server URL only from MODAL_SERVER_URL or a profile of
// its config file, both read from the process, so each backend would share
// one server. Instead the profile is handed over in memory through
// ClientParams.Config: its type is unexported, so a value is made by
// reflection and filled from TOML, the file format the SDK documents. The
// SDK then reads no ~/.modal.toml, and the environment is not touched.
// It still lets MODAL_SERVER_URL win and looks the profile up under
// MODAL_PROFILE, from the real environment: both are honoured here.
func newClient(ep Endpoint, environment string, log *slog.Logger) (*modal.Client, error) {
	if ep.token == nil {
		return nil, errors.New("modal: no token")
	}
	if v := os.Getenv(envServerURL); v != "" && v != ep.ServerURL {
		return nil, fmt.Errorf("modal: %s=%s would override the server URL %s", envServerURL, v, ep.ServerURL)
	}
	params := &modal.ClientParams{TokenID: ep.token.id, TokenSecret: ep.token.secret, Environment: environment, Logger: sdkLogger(log)}
	name := firstNonEmpty(os.Getenv(envProfile), "sandrun")
	if err := setSDKProfile(params, name, sdkProfile{ServerURL: ep.ServerURL, Active: true}); err != nil {
		return nil, err
	}
	c, err := modal.NewClientWithOptions(params)
	if err != nil {
		return nil, fmt.Errorf("modal: client: %w", err)
	}
	return c, nil
}

// setSDKProfile sets params.Config to a config holding prof under name.
func setSDKProfile(params *modal.ClientParams, name string, prof sdkProfile) error {
	field := reflect.ValueOf(params).Elem().FieldByName("Config")
	if !field.IsValid() || field.Kind() != reflect.Pointer || field.Type().Elem().Kind() != reflect.Map {
		return errors.New("modal: this SDK version has no ClientParams.Config map: the server URL cannot be set")
	}
	doc, err := toml.Marshal(map[string]sdkProfile{name: prof})
	if err != nil {
		return fmt.Errorf("modal: SDK profile: %w", err)
	}
	cfg := reflect.New(field.Type().Elem())
	if err := toml.Unmarshal(doc, cfg.Interface()); err != nil {
		return fmt.Errorf("modal: SDK profile: %w", err)
	}
	field.Set(cfg)
	return nil
}

// conn is the backend's open connection to Modal: a client, its
// environment, the app that owns the sandboxes and, once built, the image.
type conn struct {
	sdk *modal.Client
	env string // the Modal environment ("" for the account's default)
	app *modal.App

	imageMu sync.Mutex
	image   *modal.Image
}

// dial opens a client on ep and looks up (or creates) the app: an
// authenticated call, so a bad token fails here.
func dial(ctx context.Context, ep Endpoint, cfg Config, environment string) (*conn, error) {
	c, err := newClient(ep, environment, cfg.Logger)
	if err != nil {
		return nil, err
	}
	app, err := c.Apps.FromName(ctx, cfg.App, &modal.AppFromNameParams{CreateIfMissing: true, Environment: environment})
	if err != nil {
		c.Close()
		return nil, classify("app "+cfg.App, err)
	}
	return &conn{sdk: c, env: environment, app: app}, nil
}

// builtImage returns the profile's image, built on Modal on first use
// (once, however many jobs ask at the same time).
func (c *conn) builtImage(ctx context.Context, ref string) (*modal.Image, error) {
	c.imageMu.Lock()
	defer c.imageMu.Unlock()
	if c.image != nil {
		return c.image, nil
	}
	img, err := c.sdk.Images.FromRegistry(ref, nil).Build(ctx, c.app, nil)
	if err != nil {
		return nil, classify("image "+ref, err)
	}
	c.image = img
	return img, nil
}

// gatewayReady is the managed mode's readiness check: an authenticated
// call to the gateway (the app lookup), bounded by Resolve's timeout.
func gatewayReady(cfg Config) ReadyFunc {
	return func(ctx context.Context, gw Endpoint) (bool, error) {
		c, err := dial(ctx, gw, cfg, cfg.Environment)
		if err != nil {
			return false, err
		}
		c.sdk.Close()
		return true, nil
	}
}
