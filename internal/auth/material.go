package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/sandrun/sandrun/internal/secrets"
)

// Material is a deployment's trust root, kept in one directory readable
// by its owner only:
//
//	operator.nk, account.nk   seeds: who may mint identities
//	operator.jwt, account.jwt, system.jwt   what servers trust
//	admin.creds, worker.creds, scheduler.creds, submitter.creds
//	                          the built-in identities (NATS .creds files)
//	sys.creds                 a system account user, for server operations
//	secrets.nk                the workers' secrets key
//
// Every server of a cluster loads the same directory (or a copy of its
// JWTs); clients need only their own .creds file.
type Material struct {
	Dir string

	account     nkeys.KeyPair
	operatorJWT string
	accountJWT  string
	systemJWT   string
	operator    *jwt.OperatorClaims
	accountPub  string
	systemPub   string
}

// AccountName is the NATS account every sandrun identity lives in.
const AccountName = "SANDRUN"

// Builtin are the identities Ensure mints on first start.
var Builtin = []Identity{
	{Name: "admin", Role: RoleAdmin, Origin: "manual"},
	{Name: "worker", Role: RoleWorker, Origin: "manual"},
	{Name: "scheduler", Role: RoleScheduler, Origin: "cron"},
	{Name: "submitter", Role: RoleSubmitter, Origin: "manual"},
}

// SecretsKeyPath is the workers' secrets key (a curve seed): submitters
// seal secret_env values to its public half, and only workers given this
// file can open them. Ensure makes it.
func (m *Material) SecretsKeyPath() string { return filepath.Join(m.Dir, "secrets.nk") }

// CredsPath is where Ensure keeps the built-in identity name's creds.
func (m *Material) CredsPath(name string) string { return filepath.Join(m.Dir, name+".creds") }

// Ensure loads the material in dir, or makes it when dir holds none. Two
// processes making it at once agree: one's directory wins, atomically.
func Ensure(dir string) (*Material, error) {
	if _, err := os.Stat(filepath.Join(dir, "account.jwt")); err == nil {
		m, err := Load(dir)
		if err != nil {
			return nil, err
		}
		return m, m.ensureSecretsKey()
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(dir)), 0o700); err != nil {
		return nil, fmt.Errorf("auth dir: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), ".auth-new-")
	if err != nil {
		return nil, fmt.Errorf("auth dir: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	if err := generate(tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Someone else made it first (or dir exists, empty or not):
		// theirs is the deployment's.
		if _, serr := os.Stat(filepath.Join(dir, "account.jwt")); serr != nil {
			return nil, fmt.Errorf("auth dir %s: %w", dir, err)
		}
	}
	m, err := Load(dir)
	if err != nil {
		return nil, err
	}
	return m, m.ensureSecretsKey()
}

// ensureSecretsKey makes the secrets key of material made before it
// existed (O_EXCL: two processes agree on one).
func (m *Material) ensureSecretsKey() error {
	if _, err := os.Stat(m.SecretsKeyPath()); err == nil {
		return nil
	}
	seed, err := secrets.NewKeySeed()
	if err != nil {
		return err
	}
	f, err := os.OpenFile(m.SecretsKeyPath(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("auth: secrets key: %w", err)
	}
	if _, err := f.Write(seed); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func generate(dir string) error {
	if err := os.Chmod(dir, 0o700); err != nil { //nolint:gosec // a directory: the owner must be able to enter it
		return err
	}
	op, err := nkeys.CreateOperator()
	if err != nil {
		return err
	}
	acc, err := nkeys.CreateAccount()
	if err != nil {
		return err
	}
	sys, err := nkeys.CreateAccount()
	if err != nil {
		return err
	}
	opPub, _ := op.PublicKey()
	accPub, _ := acc.PublicKey()
	sysPub, _ := sys.PublicKey()

	oc := jwt.NewOperatorClaims(opPub)
	oc.Name = "sandrun"
	oc.SystemAccount = sysPub
	opJWT, err := oc.Encode(op)
	if err != nil {
		return fmt.Errorf("operator jwt: %w", err)
	}
	ac := jwt.NewAccountClaims(accPub)
	ac.Name = AccountName
	ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1, MaxAckPending: -1}
	accJWT, err := ac.Encode(op)
	if err != nil {
		return fmt.Errorf("account jwt: %w", err)
	}
	sc := jwt.NewAccountClaims(sysPub)
	sc.Name = "SYS"
	sysJWT, err := sc.Encode(op)
	if err != nil {
		return fmt.Errorf("system account jwt: %w", err)
	}
	opSeed, _ := op.Seed()
	accSeed, _ := acc.Seed()
	// A user of the system account, for server operations (`nats server
	// report`, `raft peer-remove`): the operator's, never a daemon's.
	sysUser, err := nkeys.CreateUser()
	if err != nil {
		return err
	}
	sysUserPub, _ := sysUser.PublicKey()
	suc := jwt.NewUserClaims(sysUserPub)
	suc.Name = "sys"
	sysUserJWT, err := suc.Encode(sys)
	if err != nil {
		return fmt.Errorf("system user jwt: %w", err)
	}
	sysUserSeed, _ := sysUser.Seed()
	sysCreds, err := jwt.FormatUserConfig(sysUserJWT, sysUserSeed)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"operator.nk": opSeed, "account.nk": accSeed,
		"operator.jwt": []byte(opJWT), "account.jwt": []byte(accJWT), "system.jwt": []byte(sysJWT),
		"sys.creds": sysCreds,
	}
	for name, data := range files {
		if err := writePrivate(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	m := &Material{Dir: dir, account: acc}
	for _, id := range Builtin {
		creds, err := m.Mint(id)
		if err != nil {
			return err
		}
		if err := writePrivate(m.CredsPath(id.Name), creds); err != nil {
			return err
		}
	}
	return nil
}

// Load reads the material in dir.
func Load(dir string) (*Material, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("auth: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	m := &Material{Dir: dir}
	var err error
	if m.operatorJWT, err = read("operator.jwt"); err != nil {
		return nil, err
	}
	if m.accountJWT, err = read("account.jwt"); err != nil {
		return nil, err
	}
	if m.systemJWT, err = read("system.jwt"); err != nil {
		return nil, err
	}
	if m.operator, err = jwt.DecodeOperatorClaims(m.operatorJWT); err != nil {
		return nil, fmt.Errorf("auth: operator.jwt: %w", err)
	}
	ac, err := jwt.DecodeAccountClaims(m.accountJWT)
	if err != nil {
		return nil, fmt.Errorf("auth: account.jwt: %w", err)
	}
	m.accountPub, m.systemPub = ac.Subject, m.operator.SystemAccount
	// The account seed is only needed to mint: a server given a copy of
	// the JWTs alone still runs.
	if seed, err := os.ReadFile(filepath.Join(dir, "account.nk")); err == nil {
		if m.account, err = nkeys.FromSeed([]byte(strings.TrimSpace(string(seed)))); err != nil {
			return nil, fmt.Errorf("auth: account.nk: %w", err)
		}
	}
	return m, nil
}

// ServerOptions makes opts trust this material: every connection must
// present a user of the sandrun account, whose permissions the server
// enforces.
func (m *Material) ServerOptions(opts *server.Options) error {
	res := &server.MemAccResolver{}
	if err := res.Store(m.accountPub, m.accountJWT); err != nil {
		return err
	}
	if err := res.Store(m.systemPub, m.systemJWT); err != nil {
		return err
	}
	opts.TrustedOperators = []*jwt.OperatorClaims{m.operator}
	opts.AccountResolver = res
	opts.SystemAccount = m.systemPub
	return nil
}

// Exports are what a nats-server outside sandrun needs to trust this
// material, as the Nomad variable of deploy/nomad/nats.nomad.hcl names
// them: the operator JWT, and the system and sandrun accounts' public
// keys and JWTs.
func (m *Material) Exports() [][2]string {
	return [][2]string{
		{"operator_jwt", m.operatorJWT},
		{"system_account", m.systemPub},
		{"system_account_jwt", m.systemJWT},
		{"sandrun_account", m.accountPub},
		{"sandrun_account_jwt", m.accountJWT},
	}
}

// ErrNoAccountKey is returned by Mint on material without account.nk.
var ErrNoAccountKey = errors.New("auth: the account seed (account.nk) is not here: mint identities where it is kept")

// Mint returns a NATS .creds file for a new user of identity id, signed by
// the account key. Minting needs no server restart.
func (m *Material) Mint(id Identity) ([]byte, error) {
	id = id.WithDefaults()
	if err := id.Validate(); err != nil {
		return nil, err
	}
	if m.account == nil {
		return nil, ErrNoAccountKey
	}
	user, err := nkeys.CreateUser()
	if err != nil {
		return nil, err
	}
	pub, _ := user.PublicKey()
	uc := jwt.NewUserClaims(pub)
	uc.Name = id.Name
	uc.Tags.Add(tagRole+string(id.Role), tagOrigin+id.Origin)
	p := PermissionsOf(id)
	uc.Pub.Allow.Add(p.PubAllow...)
	uc.Pub.Deny.Add(p.PubDeny...)
	uc.Sub.Allow.Add(p.SubAllow...)
	token, err := uc.Encode(m.account)
	if err != nil {
		return nil, fmt.Errorf("user jwt: %w", err)
	}
	seed, _ := user.Seed()
	return jwt.FormatUserConfig(token, seed)
}

// MintFile mints id's credentials into a new file at path, readable by
// its owner only; an existing file is never overwritten.
func (m *Material) MintFile(id Identity, path string) error {
	creds, err := m.Mint(id)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	if _, err := f.Write(creds); err != nil {
		_ = f.Close()
		return fmt.Errorf("auth: %w", err)
	}
	return f.Close()
}

const (
	tagRole   = "sandrun-role:"
	tagOrigin = "sandrun-origin:"
)

// IdentityOf reads who a .creds file says its user is (name, role and
// origin from the user JWT). Clients use it to address their own
// submissions; the server, not this, enforces what they may publish.
func IdentityOf(creds []byte) (Identity, error) {
	token, err := jwt.ParseDecoratedJWT(creds)
	if err != nil {
		return Identity{}, fmt.Errorf("creds: %w", err)
	}
	uc, err := jwt.DecodeUserClaims(token)
	if err != nil {
		return Identity{}, fmt.Errorf("creds: %w", err)
	}
	id := Identity{Name: uc.Name}
	for _, t := range uc.Tags {
		if v, ok := strings.CutPrefix(t, tagRole); ok {
			id.Role = Role(v)
		}
		if v, ok := strings.CutPrefix(t, tagOrigin); ok {
			id.Origin = v
		}
	}
	if err := id.Validate(); err != nil {
		return Identity{}, fmt.Errorf("creds: not a sandrun identity: %w", err)
	}
	return id, nil
}

// EncryptionKey returns the JetStream encryption key kept in file, making
// it (owner-only) on first use. Losing it loses the data it encrypted.
func EncryptionKey(file string) (string, error) {
	if b, err := os.ReadFile(file); err == nil {
		k := strings.TrimSpace(string(b))
		if len(k) < 32 {
			return "", fmt.Errorf("encryption key %s: too short", file)
		}
		return k, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("encryption key: %w", err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	k := hex.EncodeToString(buf)
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return EncryptionKey(file)
	}
	if err != nil {
		return "", fmt.Errorf("encryption key: %w", err)
	}
	if _, err := f.WriteString(k + "\n"); err != nil {
		_ = f.Close()
		return "", err
	}
	return k, f.Close()
}

func writePrivate(path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}
