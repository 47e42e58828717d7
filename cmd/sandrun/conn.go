package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/sandrun/sandrun/client"
	"github.com/sandrun/sandrun/internal/app"
	"github.com/sandrun/sandrun/internal/natsutil"
)

// connFlags are the connection flags every command accepts anywhere on
// its line.
type connFlags struct {
	context string
	n       app.NATSConfig
}

func (f *connFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.context, "context", "", "the saved context to connect with (env SANDRUN_CONTEXT; default: the current one, see sandrun context)")
	fs.StringVar(&f.n.URL, "nats-url", "", "NATS server URL(s), comma-separated (env SANDRUN_NATS_URL; default: the context's, else "+natsutil.DefaultURL+")")
	fs.StringVar(&f.n.Creds, "creds", "", "NATS credentials file (env SANDRUN_NATS_CREDS)")
	fs.StringVar(&f.n.TLSCert, "tls-cert", "", "client TLS certificate (env SANDRUN_NATS_TLS_CERT)")
	fs.StringVar(&f.n.TLSKey, "tls-key", "", "client TLS key (env SANDRUN_NATS_TLS_KEY)")
	fs.StringVar(&f.n.TLSCA, "tls-ca", "", "CA certificate to verify the server (env SANDRUN_NATS_TLS_CA)")
}

// resolve says where to connect, and the context it used (if any).
// Flags win, field by field. Then a context named by --context or
// $SANDRUN_CONTEXT supplies the rest; else a URL from the flags or
// $SANDRUN_NATS_URL means no context is used (the environment's
// SANDRUN_NATS_* fill the blanks); else the current context ("sandrun
// context use") does; else the default URL. A context is a whole: its
// credentials are never paired with another server's URL from the
// environment.
func (f *connFlags) resolve() (app.NATSConfig, string, error) {
	n := f.n
	name, source := f.context, "--context"
	if name == "" {
		name, source = os.Getenv("SANDRUN_CONTEXT"), "SANDRUN_CONTEXT"
	}
	if name == "" && (n.URL != "" || os.Getenv("SANDRUN_NATS_URL") != "") {
		return n, "", nil
	}
	store, err := openContexts()
	if err != nil {
		if name != "" {
			return n, "", fmt.Errorf("%s %s: %w", source, name, err)
		}
		return n, "", nil
	}
	if name == "" {
		if name, source = store.current(), "the current context"; name == "" {
			return n, "", nil
		}
	}
	cx, err := store.get(name)
	if err != nil {
		return n, "", fmt.Errorf("%s: %w", source, err)
	}
	fill := func(v *string, from string) {
		if *v == "" {
			*v = from
		}
	}
	fill(&n.URL, cx.URL)
	fill(&n.Creds, cx.Creds)
	fill(&n.TLSCert, cx.TLSCert)
	fill(&n.TLSKey, cx.TLSKey)
	fill(&n.TLSCA, cx.TLSCA)
	return n, name, nil
}

// queue is the default queue of the selected context, if any.
func (f *connFlags) queue() string {
	if _, name, err := f.resolve(); err == nil && name != "" {
		if store, err := openContexts(); err == nil {
			if ctx, err := store.get(name); err == nil {
				return ctx.Queue
			}
		}
	}
	return ""
}

// connect returns a client bound to the existing layout.
func (c cli) connect(ctx context.Context) (*client.Client, func(), error) {
	n, _, err := c.conn.resolve()
	if err != nil {
		return nil, nil, err
	}
	return connect(ctx, n)
}

// connect returns a client bound to the existing layout of the server n
// names.
func connect(ctx context.Context, n app.NATSConfig) (*client.Client, func(), error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := client.Connect(cctx, client.Options{URL: n.URL, CredsFile: n.Creds, TLSCert: n.TLSCert, TLSKey: n.TLSKey, TLSCA: n.TLSCA, Name: "sandrun-cli"})
	if err != nil {
		return nil, nil, err
	}
	return c, c.Close, nil
}
