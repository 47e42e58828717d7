package natsutil

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Context is a named way to reach a sandrun deployment, as the nats
// CLI's contexts are: a file NAME.json under the user's configuration
// directory (sandrun/context/), the current one named in
// sandrun/context.txt.
type Context struct {
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

// ErrContextName is the error of a context name that is not one.
var ErrContextName = errors.New("bad context name")

var contextName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// ValidContextName checks that name can name a context (and a file).
func ValidContextName(name string) error {
	if !contextName.MatchString(name) {
		return fmt.Errorf("%w %q: want 1 to 64 of A-Z a-z 0-9 _ . -, starting with a letter or digit", ErrContextName, name)
	}
	return nil
}

// Contexts is the directory of saved contexts.
type Contexts struct{ Dir string }

// OpenContexts finds the user's context directory ($XDG_CONFIG_HOME, or
// the platform's configuration directory).
func OpenContexts() (Contexts, error) {
	base, err := os.UserConfigDir()
	if err != nil {
		return Contexts{}, fmt.Errorf("contexts: %w", err)
	}
	return Contexts{Dir: filepath.Join(base, "sandrun")}, nil
}

func (s Contexts) path(name string) string {
	return filepath.Join(s.Dir, "context", name+".json")
}

// Get reads the context called name.
func (s Contexts) Get(name string) (Context, error) {
	if err := ValidContextName(name); err != nil {
		return Context{}, err
	}
	data, err := os.ReadFile(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return Context{}, fmt.Errorf("no context %q (sandrun context ls lists them)", name)
	}
	if err != nil {
		return Context{}, err
	}
	var cx Context
	if err := json.Unmarshal(data, &cx); err != nil {
		return Context{}, fmt.Errorf("context %s: %s: %w", name, s.path(name), err)
	}
	cx.Name = name
	return cx, nil
}

// List returns every saved context, by name.
func (s Contexts) List() ([]Context, error) {
	entries, err := os.ReadDir(filepath.Join(s.Dir, "context"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Context
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || ValidContextName(name) != nil {
			continue
		}
		cx, err := s.Get(name)
		if err != nil {
			return nil, err
		}
		out = append(out, cx)
	}
	slices.SortFunc(out, func(a, b Context) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Save writes cx atomically, owner-only (it names credential files).
func (s Contexts) Save(cx Context) error {
	if err := ValidContextName(cx.Name); err != nil {
		return err
	}
	if cx.URL == "" {
		return fmt.Errorf("context %s: a URL is required", cx.Name)
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

// Remove deletes the context called name, and clears the current one if
// it was that.
func (s Contexts) Remove(name string) error {
	if _, err := s.Get(name); err != nil {
		return err
	}
	if err := os.Remove(s.path(name)); err != nil {
		return err
	}
	if s.Current() == name {
		return s.Use("")
	}
	return nil
}

// Current is the name of the current context ("" for none).
func (s Contexts) Current() string {
	data, err := os.ReadFile(filepath.Join(s.Dir, "context.txt"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// Use makes name the current context ("" clears it).
func (s Contexts) Use(name string) error {
	if name == "" {
		err := os.Remove(filepath.Join(s.Dir, "context.txt"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if _, err := s.Get(name); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(s.Dir, "context.txt"), []byte(name+"\n"))
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
