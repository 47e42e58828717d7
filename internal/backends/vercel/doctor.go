package vercel

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/sandrun/sandrun/internal/backends"
)

// Describe implements backends.Describer (for `sandrun doctor`): the API,
// the team and project the credentials act for, where the token comes
// from (by variable name only; an OIDC token's expiry) and what sandboxes
// are made of. It makes no call: Validate has checked the API and the
// credentials. It never shows the token, nor credentials or a query the
// api_url may carry.
func (b *Backend) Describe(context.Context) (string, error) {
	s, c := b.cfg, b.api.creds
	var d strings.Builder
	fmt.Fprintf(&d, "api %s, team %s, project %s, ", publicURL(s.base), c.team, c.project)
	if c.oidc {
		fmt.Fprintf(&d, "OIDC token from %s", c.env)
		if !c.expires.IsZero() {
			fmt.Fprintf(&d, " (expires %s)", c.expires.UTC().Format(time.RFC3339))
		}
	} else {
		fmt.Fprintf(&d, "access token from %s", c.env)
	}
	fmt.Fprintf(&d, ", runtime %s, %d vCPUs, network %s, sandbox timeout %s", s.Runtime, s.VCPUs, s.NetworkPolicy, s.SandboxTimeout)
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
