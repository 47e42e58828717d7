package natsutil

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// A local server (`sandrun dev`, `sandrun server`) leaves, for each URL it
// listens on, the path of its admin credentials in the owner's config
// directory, so that the CLI on the same machine, run by the same user,
// connects without a flag. The file holds a path, not a secret; the
// credentials themselves stay owner-only in the server's data directory.

// localContextFile is where the credentials path for serverURL is kept.
func localContextFile(serverURL string) (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	u, err := url.Parse(strings.TrimSpace(strings.Split(serverURL, ",")[0]))
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("local context: bad URL %q", serverURL)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "4222"
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	return filepath.Join(dir, "sandrun", "local", host+"_"+port), nil
}

// SaveLocalContext records that credsFile authenticates to serverURL.
func SaveLocalContext(serverURL, credsFile string) error {
	f, err := localContextFile(serverURL)
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(credsFile)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
		return fmt.Errorf("local context: %w", err)
	}
	tmp := f + ".tmp" + fmt.Sprint(os.Getpid())
	if err := os.WriteFile(tmp, []byte(abs+"\n"), 0o600); err != nil {
		return fmt.Errorf("local context: %w", err)
	}
	return os.Rename(tmp, f)
}

// LocalCreds returns the credentials a local server left for serverURL,
// if any (and if they are still there).
func LocalCreds(serverURL string) (string, bool) {
	f, err := localContextFile(serverURL)
	if err != nil {
		return "", false
	}
	b, err := os.ReadFile(f)
	if err != nil {
		return "", false
	}
	path := strings.TrimSpace(string(b))
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || path == "" {
		return "", false
	}
	return path, true
}
