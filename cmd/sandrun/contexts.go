package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sandrun/sandrun/internal/natsutil"
)

func validContextName(name string) error {
	if err := natsutil.ValidContextName(name); err != nil {
		return usageErr("%v", err)
	}
	return nil
}

// saveServerContext records the context of a server this process runs
// (sandrun dev, sandrun server) and makes it current when no other
// context is: the CLI on this machine then needs no flag. It reports what
// it did on w.
func saveServerContext(w io.Writer, name, url, creds string) {
	store, err := natsutil.OpenContexts()
	if err == nil {
		err = store.Save(natsutil.Context{Name: name, Description: "saved by the server at " + url, URL: url, Creds: creds})
	}
	if err != nil {
		fmt.Fprintf(w, "sandrun: could not save context %s (give the CLI --nats-url %s --creds %s): %v\n", name, url, creds, err)
		return
	}
	cur := store.Current()
	if _, err := store.Get(cur); cur == "" || cur == name || err != nil {
		if err := store.Use(name); err != nil {
			fmt.Fprintf(w, "sandrun: context %s saved, but not made current: %v\n", name, err)
			return
		}
		fmt.Fprintf(w, "sandrun: context %s saved and current: the CLI here connects to %s\n", name, url)
		return
	}
	fmt.Fprintf(w, "sandrun: context %s saved (the current one is %s: use --context %s, or sandrun context use %s)\n", name, cur, name, name)
}

// contextCmd is `sandrun context ls|show|add|use|rm`.
func (c cli) contextCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "context",
		Short: "named connection settings: which server, which credentials",
		Long: `A context names a server and how to reach it (URL, credentials, TLS files)
and a default queue. Commands use the one chosen with --context or
$SANDRUN_CONTEXT, else the current one; --nats-url or $SANDRUN_NATS_URL
without a chosen context bypasses them. Contexts are files under the user's
configuration directory (sandrun/context/NAME.json).`,
		Example: `  sandrun context add prod --nats-url tls://nats.example:4222 --creds prod.creds --tls-ca ca.pem
  sandrun context use prod
  sandrun --context dev ls`,
	}
	var out outputFlag
	ls := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "list the saved contexts (* marks the current one)",
		Args:    argsUsage(0, 0, "no arguments"),
		RunE: func(*cobra.Command, []string) error {
			store, err := natsutil.OpenContexts()
			if err != nil {
				return err
			}
			list, err := store.List()
			if err != nil {
				return err
			}
			cur := store.Current()
			type row struct {
				natsutil.Context
				Current bool `json:"current"`
			}
			rows := make([]row, 0, len(list))
			for _, cx := range list {
				rows = append(rows, row{cx, cx.Name == cur})
			}
			return c.emit(out, rows, func(t *table) {
				t.header("", "NAME", "URL", "QUEUE", "DESCRIPTION")
				for _, r := range rows {
					mark := ""
					if r.Current {
						mark = "*"
					}
					t.row(mark, r.Name, r.URL, dash(r.Queue), r.Description)
				}
			})
		},
	}
	out.register(ls)
	var showOut outputFlag
	show := &cobra.Command{
		Use:               "show [NAME]",
		Short:             "print a context (default: the one commands would use now)",
		Args:              argsUsage(0, 1, "at most one context name"),
		ValidArgsFunction: completeContexts,
		RunE: func(_ *cobra.Command, args []string) error {
			store, err := natsutil.OpenContexts()
			if err != nil {
				return err
			}
			name := ""
			if len(args) == 1 {
				name = args[0]
			} else if _, name, err = c.conn.resolve(); err != nil {
				return err
			}
			if name == "" {
				return errors.New("no context is in use (sandrun context use NAME)")
			}
			cx, err := store.Get(name)
			if err != nil {
				return err
			}
			return c.emit(showOut, cx, func(t *table) {
				t.row("name", cx.Name)
				t.row("url", cx.URL)
				t.row("creds", dash(cx.Creds))
				t.row("tls", dash(strings.Trim(strings.Join([]string{cx.TLSCert, cx.TLSKey, cx.TLSCA}, " "), " ")))
				t.row("queue", dash(cx.Queue))
				t.row("description", dash(cx.Description))
			})
		},
	}
	showOut.register(show)
	var add natsutil.Context
	var useIt bool
	addCmd := &cobra.Command{
		Use:   "add NAME --nats-url URL [--creds FILE] [--tls-cert FILE --tls-key FILE] [--tls-ca FILE]",
		Short: "save (or replace) a context from the connection flags",
		Args:  argsUsage(1, 1, "one context name"),
		RunE: func(_ *cobra.Command, args []string) error {
			store, err := natsutil.OpenContexts()
			if err != nil {
				return err
			}
			if err := validContextName(args[0]); err != nil {
				return err
			}
			n := c.conn.n
			cx := natsutil.Context{Name: args[0], Description: add.Description, Queue: add.Queue,
				URL: n.URL, Creds: n.Creds, TLSCert: n.TLSCert, TLSKey: n.TLSKey, TLSCA: n.TLSCA}
			if (cx.TLSCert == "") != (cx.TLSKey == "") {
				return usageErr("--tls-cert and --tls-key go together")
			}
			if err := store.Save(cx); err != nil {
				return err
			}
			if useIt || store.Current() == "" {
				if err := store.Use(cx.Name); err != nil {
					return err
				}
				fmt.Fprintf(c.stdout, "context %s saved and current\n", cx.Name)
				return nil
			}
			fmt.Fprintf(c.stdout, "context %s saved\n", cx.Name)
			return nil
		},
	}
	addCmd.Flags().StringVar(&add.Description, "description", "", "what the context is for")
	addCmd.Flags().StringVar(&add.Queue, "queue", "", "queue of submissions that name none")
	addCmd.Flags().BoolVar(&useIt, "use", false, "make it the current context (it is anyway when none is)")
	use := &cobra.Command{
		Use:               "use NAME",
		Short:             "make a context the current one",
		Args:              argsUsage(1, 1, "one context name"),
		ValidArgsFunction: completeContexts,
		RunE: func(_ *cobra.Command, args []string) error {
			store, err := natsutil.OpenContexts()
			if err != nil {
				return err
			}
			if err := store.Use(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "current context: %s\n", args[0])
			return nil
		},
	}
	rm := &cobra.Command{
		Use:               "rm NAME",
		Aliases:           []string{"remove"},
		Short:             "delete a saved context (not its credential files)",
		Args:              argsUsage(1, 1, "one context name"),
		ValidArgsFunction: completeContexts,
		RunE: func(_ *cobra.Command, args []string) error {
			store, err := natsutil.OpenContexts()
			if err != nil {
				return err
			}
			if err := store.Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "context %s removed\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(ls, show, addCmd, use, rm)
	return cmd
}

func completeContexts(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	store, err := natsutil.OpenContexts()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, _ := store.List()
	names := make([]string, 0, len(list))
	for _, cx := range list {
		names = append(names, cx.Name+"\t"+cx.URL)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
