package plugin

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
)

// helloInfo is what a plugin said of itself in its hello.
type helloInfo struct {
	name, version string
	protocol      int
	caps          backends.Capabilities
}

// Describe implements backends.Describer (for `sandrun doctor`): the
// plugin executable, and the name, version, protocol and capabilities it
// announced in its latest hello (Validate's, normally). It starts no
// plugin. It shows neither the plugin's arguments nor its environment,
// which may hold credentials.
func (b *Backend) Describe(context.Context) (string, error) {
	h := b.hello.Load()
	if h == nil {
		return fmt.Sprintf("plugin %s: no hello yet (not validated); host protocol %d, timeout %s", b.path, Protocol, b.timeout), nil
	}
	who := "unnamed"
	if h.name != "" {
		who = strconv.Quote(h.name)
	}
	if h.version != "" {
		who += " " + strconv.Quote(h.version)
	}
	return fmt.Sprintf("plugin %s: %s, protocol %d, capabilities %s; timeout %s",
		b.path, who, h.protocol, capabilityNames(h.caps), b.timeout), nil
}

// capabilityNames lists the capabilities the protocol carries, by their
// protocol names ("none" if none).
func capabilityNames(c backends.Capabilities) string {
	var names []string
	for _, f := range []struct {
		name string
		on   bool
	}{
		{"isolated", c.Isolated}, {"resource_limits", c.ResourceLimits},
		{"persistent_sessions", c.PersistentSessions}, {"resource_usage", c.ResourceUsage},
	} {
		if f.on {
			names = append(names, f.name)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

var _ backends.Describer = (*Backend)(nil)
