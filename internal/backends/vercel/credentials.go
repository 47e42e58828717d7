package vercel

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// credentials are what every request carries: the bearer token, and the
// team and project it acts for.
type credentials struct {
	token   string
	team    string
	project string
	// env names the variable the token came from, for error messages.
	env string
	// oidc: the token is an OIDC token, which expires (zero: its payload
	// names no expiry).
	oidc    bool
	expires time.Time
}

// credentials reads the token (else the OIDC token) from the worker's
// environment and checks it together with team_id and project_id.
func (s *settings) credentials() (credentials, error) {
	if token, ok := s.lookup(s.TokenEnv); ok {
		switch {
		case s.TeamID == "" && s.ProjectID == "":
			return credentials{}, fmt.Errorf("team_id, project_id: required with token (token_env %s)", s.TokenEnv)
		case s.TeamID == "":
			return credentials{}, fmt.Errorf("team_id: required with token (token_env %s)", s.TokenEnv)
		case s.ProjectID == "":
			return credentials{}, fmt.Errorf("project_id: required with token (token_env %s)", s.TokenEnv)
		}
		return credentials{token: token, team: s.TeamID, project: s.ProjectID, env: s.TokenEnv}, nil
	}
	token, ok := s.lookup(s.OIDCTokenEnv)
	if !ok {
		return credentials{}, fmt.Errorf("token_env: %s and oidc_token_env: %s are both unset in the worker's environment: "+
			"set a Vercel access token (with team_id and project_id) or an OIDC token", s.TokenEnv, s.OIDCTokenEnv)
	}
	claims, err := oidcClaims(token)
	if err != nil {
		return credentials{}, fmt.Errorf("oidc_token_env: %s: %w", s.OIDCTokenEnv, err)
	}
	c := credentials{token: token, team: claims.OwnerID, project: claims.ProjectID, env: s.OIDCTokenEnv, oidc: true}
	switch {
	case s.TeamID != "" && s.TeamID != c.team:
		return credentials{}, fmt.Errorf("team_id: %s, but the OIDC token in %s is for team %s", s.TeamID, s.OIDCTokenEnv, c.team)
	case c.project == "" && s.ProjectID == "":
		return credentials{}, fmt.Errorf("project_id: required: the OIDC token in %s names no project", s.OIDCTokenEnv)
	case c.project == "":
		c.project = s.ProjectID
	case s.ProjectID != "" && s.ProjectID != c.project:
		return credentials{}, fmt.Errorf("project_id: %s, but the OIDC token in %s is for project %s", s.ProjectID, s.OIDCTokenEnv, c.project)
	}
	if claims.Exp > 0 && time.Unix(claims.Exp, 0).Before(time.Now()) {
		return credentials{}, fmt.Errorf("oidc_token_env: the token in %s expired at %s", s.OIDCTokenEnv,
			time.Unix(claims.Exp, 0).UTC().Format(time.RFC3339))
	}
	if claims.Exp > 0 {
		c.expires = time.Unix(claims.Exp, 0)
	}
	return c, nil
}

// lookup returns the variable's value, if it is set and not blank.
func (s *settings) lookup(name string) (string, bool) {
	v, ok := s.LookupEnv(name)
	v = strings.TrimSpace(v)
	return v, ok && v != ""
}

// claims are the OIDC token's claims this package reads.
type claims struct {
	OwnerID   string `json:"owner_id"`
	ProjectID string `json:"project_id"`
	Exp       int64  `json:"exp"`
}

// oidcClaims decodes a JWT's payload without verifying it (the API does),
// as the SDK does. Errors never show the token.
func oidcClaims(token string) (claims, error) {
	var c claims
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return c, fmt.Errorf("not a JWT (want three dot-separated parts)")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return c, fmt.Errorf("the JWT's payload is not base64url")
	}
	if json.Unmarshal(payload, &c) != nil || c.OwnerID == "" {
		return c, fmt.Errorf("the JWT's payload has no owner_id (the team)")
	}
	return c, nil
}
