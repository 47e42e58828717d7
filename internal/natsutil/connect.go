package natsutil

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultURL is where the CLI and daemons look for NATS when no URL is
// given: the embedded server of `sandrun dev`.
const DefaultURL = "nats://127.0.0.1:4222"

// ConnConfig says how to reach NATS.
type ConnConfig struct {
	URL       string // comma-separated seed URLs
	CredsFile string // NATS credentials (JWT + nkey seed)
	TLSCert   string // client certificate (mutual TLS)
	TLSKey    string
	TLSCA     string // CA to verify the server
	Name      string // connection name, shown in server monitoring
	// Daemon selects settings for long-running processes: reconnect
	// forever and notice dead connections within a minute.
	Daemon bool
	// Context names the saved context to connect with (Resolve).
	Context string
}

// Resolve says where to connect. Fields set in c win, one by one. Then a
// context named by c.Context or $SANDRUN_CONTEXT supplies the rest (the
// environment's SANDRUN_NATS_* are not used with it: a context's
// credentials never meet another server's URL); else SANDRUN_NATS_URL,
// SANDRUN_NATS_CREDS, SANDRUN_NATS_TLS_CERT, SANDRUN_NATS_TLS_KEY and
// SANDRUN_NATS_TLS_CA; else, when no URL is known yet, the current
// context (`sandrun context use`); else DefaultURL. Credentials a local
// server left for the URL (SaveLocalContext) fill in last. It returns the
// name of the context it used, if any.
func (c ConnConfig) Resolve() (ConnConfig, string, error) {
	fill := func(v *string, from string) {
		if *v == "" {
			*v = from
		}
	}
	name, source := c.Context, "context"
	if name == "" {
		name, source = os.Getenv("SANDRUN_CONTEXT"), "SANDRUN_CONTEXT"
	}
	if name == "" {
		fill(&c.URL, os.Getenv("SANDRUN_NATS_URL"))
		fill(&c.CredsFile, os.Getenv("SANDRUN_NATS_CREDS"))
		fill(&c.TLSCert, os.Getenv("SANDRUN_NATS_TLS_CERT"))
		fill(&c.TLSKey, os.Getenv("SANDRUN_NATS_TLS_KEY"))
		fill(&c.TLSCA, os.Getenv("SANDRUN_NATS_TLS_CA"))
		if c.URL == "" {
			if store, err := OpenContexts(); err == nil {
				name, source = store.Current(), "the current context"
			}
		}
	}
	if name != "" {
		store, err := OpenContexts()
		if err != nil {
			return c, "", fmt.Errorf("%s %s: %w", source, name, err)
		}
		cx, err := store.Get(name)
		if err != nil {
			return c, "", fmt.Errorf("%s: %w", source, err)
		}
		fill(&c.URL, cx.URL)
		fill(&c.CredsFile, cx.Creds)
		fill(&c.TLSCert, cx.TLSCert)
		fill(&c.TLSKey, cx.TLSKey)
		fill(&c.TLSCA, cx.TLSCA)
	}
	if c.URL == "" {
		c.URL = DefaultURL
	}
	if c.CredsFile == "" {
		if creds, ok := LocalCreds(c.URL); ok {
			c.CredsFile = creds
		}
	}
	return c, name, nil
}

// Validate checks that referenced files exist, naming the field.
func (c ConnConfig) Validate() error {
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return fmt.Errorf("nats.tls_cert and nats.tls_key must be given together")
	}
	for field, path := range map[string]string{"nats.creds": c.CredsFile, "nats.tls_cert": c.TLSCert, "nats.tls_key": c.TLSKey, "nats.tls_ca": c.TLSCA} {
		if path == "" {
			continue
		}
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	return nil
}

// Connect dials NATS and returns the connection and a JetStream handle.
func Connect(ctx context.Context, c ConnConfig, log *slog.Logger) (*nats.Conn, jetstream.JetStream, error) {
	if err := c.Validate(); err != nil {
		return nil, nil, err
	}
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.Timeout(5 * time.Second),
	}
	if c.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(c.CredsFile))
	}
	if c.TLSCert != "" {
		opts = append(opts, nats.ClientCert(c.TLSCert, c.TLSKey))
	}
	if c.TLSCA != "" {
		opts = append(opts, nats.RootCAs(c.TLSCA))
	}
	if c.Daemon {
		opts = append(opts,
			nats.MaxReconnects(-1),
			nats.RetryOnFailedConnect(true),
			nats.ReconnectWait(time.Second),
			nats.ReconnectJitter(200*time.Millisecond, time.Second),
			nats.PingInterval(15*time.Second),
			nats.MaxPingsOutstanding(3),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				if err != nil { // nil: we closed it
					log.Warn("nats disconnected", "err", err)
				}
			}),
			nats.ReconnectHandler(func(nc *nats.Conn) {
				log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
			}),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				log.Warn("nats async error", "err", err)
			}),
		)
	}
	nc, err := nats.Connect(c.URL, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect %s: %w", redactURL(c.URL), err)
	}
	if c.Daemon && !nc.IsConnected() {
		// RetryOnFailedConnect returns before the first connection; wait
		// for it so layout setup has a server to talk to.
		for !nc.IsConnected() {
			select {
			case <-ctx.Done():
				nc.Close()
				return nil, nil, fmt.Errorf("connect %s: %w", redactURL(c.URL), ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(10*time.Second))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}
