package daytona

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/sandrun/sandrun/internal/backends"
)

// Describe implements backends.Describer (for `sandrun doctor`): the API
// and where its key comes from (by variable name only), the organization,
// the target region, what sandboxes start from and how jobs run. It makes
// no call: Validate has checked the API and the key. It never shows the
// key, nor credentials or a query the api_url may carry.
func (b *Backend) Describe(context.Context) (string, error) {
	s := b.cfg
	var d strings.Builder
	fmt.Fprintf(&d, "api %s, key from %s", publicURL(s.base), s.APIKeyEnv)
	if s.OrganizationID != "" {
		fmt.Fprintf(&d, ", organization %s", s.OrganizationID)
	}
	if s.Target != "" {
		fmt.Fprintf(&d, ", target %s", s.Target)
	} else {
		d.WriteString(", the organization's default target")
	}
	switch {
	case s.Image != "":
		fmt.Fprintf(&d, ", image %s", s.Image)
	case s.Snapshot != "":
		fmt.Fprintf(&d, ", snapshot %s", s.Snapshot)
	default:
		d.WriteString(", the organization's default snapshot")
	}
	fmt.Fprintf(&d, ", mode %s, auto-stop %dm", s.Mode, s.autoStop)
	if s.NetworkBlockAll {
		d.WriteString(", network blocked")
	}
	return d.String(), nil
}

// publicURL is u without what may be a credential: its user info, query
// and fragment.
func publicURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	p := *u
	p.User, p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = nil, "", false, "", ""
	return p.String()
}

var _ backends.Describer = (*Backend)(nil)
