package main

import (
	"context"
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

// resolve says where to connect, and the context it used (if any):
// the flags, then natsutil.ConnConfig.Resolve (a context named by
// --context or $SANDRUN_CONTEXT; else the environment; else the current
// context; else the default URL).
func (f *connFlags) resolve() (app.NATSConfig, string, error) {
	cc, name, err := natsutil.ConnConfig{URL: f.n.URL, CredsFile: f.n.Creds, TLSCert: f.n.TLSCert,
		TLSKey: f.n.TLSKey, TLSCA: f.n.TLSCA, Context: f.context}.Resolve()
	if err != nil {
		return app.NATSConfig{}, "", err
	}
	return app.NATSConfig{URL: cc.URL, Creds: cc.CredsFile, TLSCert: cc.TLSCert, TLSKey: cc.TLSKey, TLSCA: cc.TLSCA}, name, nil
}

// queue is the default queue of the context in use, if any.
func (f *connFlags) queue() string {
	_, name, err := f.resolve()
	if err != nil || name == "" {
		return ""
	}
	store, err := natsutil.OpenContexts()
	if err != nil {
		return ""
	}
	cx, err := store.Get(name)
	if err != nil {
		return ""
	}
	return cx.Queue
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
