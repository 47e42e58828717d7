package modal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// modalProfile is one table of the Modal config file (~/.modal.toml), as
// `modal token set` writes it. Other keys are ignored.
type modalProfile struct {
	TokenID           string `toml:"token_id"`
	TokenSecret       string `toml:"token_secret"`
	ServerURL         string `toml:"server_url"`
	Environment       string `toml:"environment"`
	Active            bool   `toml:"active"`
	OAuthRefreshToken string `toml:"oauth_refresh_token"`
}

// modalFile is a parsed Modal config file.
type modalFile struct {
	path     string
	exists   bool
	profiles map[string]modalProfile
}

// modalConfigPath is where the Modal config file is: config_path, else
// MODAL_CONFIG_PATH, else ~/.modal.toml; "" when there is no home.
func modalConfigPath(in ResolveInput) string {
	if in.Config.ConfigPath != "" {
		return in.Config.ConfigPath
	}
	if p, _ := in.LookupEnv("MODAL_CONFIG_PATH"); p != "" {
		return p
	}
	if in.HomeDir == "" {
		return ""
	}
	return filepath.Join(in.HomeDir, ".modal.toml")
}

// readModalFile reads the Modal config file at path. A missing file is
// an empty one. Parse errors give the position, never the content.
func readModalFile(path string) (modalFile, error) {
	f := modalFile{path: path}
	if path == "" {
		return f, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("%s: cannot be read: %w", path, err)
	}
	f.exists = true
	if err := toml.Unmarshal(data, &f.profiles); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return f, fmt.Errorf("%s: not valid TOML at line %d, column %d", path, row, col)
		}
		return f, fmt.Errorf("%s: not a file of profiles", path)
	}
	return f, nil
}

// pick returns the profile named by name (config's profile, else
// MODAL_PROFILE), else the one marked active. ok is false with a reason
// when the choice cannot be made; an empty name with no profile is fine.
func (f modalFile) pick(name, why string) (string, modalProfile, string) {
	if name != "" {
		p, ok := f.profiles[name]
		if !ok {
			return "", modalProfile{}, fmt.Sprintf("%s names profile %q, which %s", why, name, f.lacks())
		}
		return name, p, ""
	}
	var active []string
	for n, p := range f.profiles {
		if p.Active {
			active = append(active, n)
		}
	}
	slices.Sort(active)
	switch len(active) {
	case 0:
		return "", modalProfile{}, ""
	case 1:
		return active[0], f.profiles[active[0]], ""
	default:
		return "", modalProfile{}, fmt.Sprintf("%s marks profiles %s active: set profile", f.path, strings.Join(active, ", "))
	}
}

// lacks describes what f holds, for a profile that is not there.
func (f modalFile) lacks() string {
	if f.path == "" {
		return "cannot be looked up (no home directory)"
	}
	if len(f.profiles) == 0 {
		return f.path + " does not have (no profiles)"
	}
	names := make([]string, 0, len(f.profiles))
	for n := range f.profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	return fmt.Sprintf("%s does not have (profiles: %s)", f.path, strings.Join(names, ", "))
}
