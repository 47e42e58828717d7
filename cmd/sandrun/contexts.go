package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// savedContext is a named way to reach a sandrun deployment, as the nats
// CLI's contexts are: a file NAME.json under the user's configuration
// directory (sandrun/context/), the current one named in
// sandrun/context.txt.
type savedContext struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url"`
	Creds       string `json:"creds,omitempty"`
	TLSCert     string `json:"tls_cert,omitempty"`
	TLSKey      string `json:"tls_key,omitempty"`
	TLSCA       string `json:"tls_ca,omitempty"`
	// Queue is the queue of submissions that name none.
	Queue string `json:"queue,omitempty"`
}

var contextName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func validContextName(name string) error {
	if !contextName.MatchString(name) {
		return usageErr("context name %q: want 1 to 64 of A-Z a-z 0-9 _ . -, starting with a letter or digit", name)
	}
	return nil
}

// contextStore is the directory of saved contexts.
type contextStore struct{ dir string }

// openContexts finds the user's context directory ($XDG_CONFIG_HOME, or
// the platform's configuration directory).
func openContexts() (contextStore, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return contextStore{}, fmt.Errorf("contexts: %w", err)
	}
	return contextStore{dir: filepath.Join(base, "sandrun")}, nil
}

func (s contextStore) path(name string) string {
	return filepath.Join(s.dir, "context", name+".json")
}

func (s contextStore) get(name string) (savedContext, error) {
	if err := validContextName(name); err != nil {
		return savedContext{}, err
	}
	data, err := os.ReadFile(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return savedContext{}, fmt.Errorf("no context %q (sandrun context ls lists them)", name)
	}
	if err != nil {
		return savedContext{}, err
	}
	var cx savedContext
	if err := json.Unmarshal(data, &cx); err != nil {
		return savedContext{}, fmt.Errorf("context %s: %s: %w", name, s.path(name), err)
	}
	cx.Name = name
	return cx, nil
}

// list returns every saved context, by name.
func (s contextStore) list() ([]savedContext, error) {
	entries, err := os.ReadDir(filepath.Join(s.dir, "context"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []savedContext
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || validContextName(name) != nil {
			continue
		}
		cx, err := s.get(name)
		if err != nil {
			return nil, err
		}
		out = append(out, cx)
	}
	slices.SortFunc(out, func(a, b savedContext) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// save writes cx atomically, owner-only (it names credential files).
func (s contextStore) save(cx savedContext) error {
	if err := validContextName(cx.Name); err != nil {
		return err
	}
	if cx.URL == "" {
		return usageErr("context %s: --nats-url is required", cx.Name)
	}
	for _, p := range []*string{&cx.Creds, &cx.TLSCert, &cx.TLSKey, &cx.TLSCA} {
		if *p != "" {
			abs, err := filepath.Abs(*p)
			if err != nil {
				return err
			}
			*p = abs
		}
	}
	data, err := json.MarshalIndent(cx, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(s.path(cx.Name), append(data, '\n'))
}

func (s contextStore) remove(name string) error {
	if _, err := s.get(name); err != nil {
		return err
	}
	if err := os.Remove(s.path(name)); err != nil {
		return err
	}
	if s.current() == name {
		return s.use("")
	}
	return nil
}

// current is the name of the current context ("" for none).
func (s contextStore) current() string {
	data, err := os.ReadFile(filepath.Join(s.dir, "context.txt"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// use makes name the current context ("" clears it).
func (s contextStore) use(name string) error {
	if name == "" {
		err := os.Remove(filepath.Join(s.dir, "context.txt"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if _, err := s.get(name); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(s.dir, "context.txt"), []byte(name+"\n"))
}

func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// saveServerContext records the context of a server this process runs
// (sandrun dev, sandrun server) and makes it current when no other
// context is: the CLI on this machine then needs no flag. It reports what
// it did on w.
func saveServerContext(w io.Writer, name, url, creds string) {
	store, err := openContexts()
	if err == nil {
		err = store.save(savedContext{Name: name, Description: "saved by the server at " + url, URL: url, Creds: creds})
	}
	if err != nil {
		fmt.Fprintf(w, "sandrun: could not save context %s (give the CLI --nats-url %s --creds %s): %v\n", name, url, creds, err)
		return
	}
	cur := store.current()
	if _, err := store.get(cur); cur == "" || cur == name || err != nil {
		if err := store.use(name); err != nil {
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
		Example: `  sandrun context add prod --nats-url tls://nats.example:4222 --creds ~/prod.creds --tls-ca ca.pem
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
			store, err := openContexts()
			if err != nil {
				return err
			}
			list, err := store.list()
			if err != nil {
				return err
			}
			cur := store.current()
			type row struct {
				savedContext
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
			store, err := openContexts()
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
			cx, err := store.get(name)
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
	var add savedContext
	var useIt bool
	addCmd := &cobra.Command{
		Use:   "add NAME --nats-url URL [--creds FILE] [--tls-cert FILE --tls-key FILE] [--tls-ca FILE]",
		Short: "save (or replace) a context from the connection flags",
		Args:  argsUsage(1, 1, "one context name"),
		RunE: func(_ *cobra.Command, args []string) error {
			store, err := openContexts()
			if err != nil {
				return err
			}
			n := c.conn.n
			cx := savedContext{Name: args[0], Description: add.Description, Queue: add.Queue,
				URL: n.URL, Creds: n.Creds, TLSCert: n.TLSCert, TLSKey: n.TLSKey, TLSCA: n.TLSCA}
			if (cx.TLSCert == "") != (cx.TLSKey == "") {
				return usageErr("--tls-cert and --tls-key go together")
			}
			if err := store.save(cx); err != nil {
				return err
			}
			if useIt || store.current() == "" {
				if err := store.use(cx.Name); err != nil {
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
			store, err := openContexts()
			if err != nil {
				return err
			}
			if err := store.use(args[0]); err != nil {
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
			store, err := openContexts()
			if err != nil {
				return err
			}
			if err := store.remove(args[0]); err != nil {
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
	store, err := openContexts()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, _ := store.list()
	names := make([]string, 0, len(list))
	for _, cx := range list {
		names = append(names, cx.Name+"\t"+cx.URL)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
