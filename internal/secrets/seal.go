// Package secrets keeps job secrets out of everything sandrun stores or
// shows: values sealed by the submitter to the workers' key (X25519 +
// XSalsa20-Poly1305, nkeys curve keys), opened only in a worker's memory,
// and masked in every byte of output a job produces.
package secrets

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/nats-io/nkeys"
)

// prefix marks a sealed value: sealed:v1:SENDER_PUBLIC_KEY:BASE64.
const prefix = "sealed:v1:"

// IsSealed reports whether v is a sealed value.
func IsSealed(v string) bool { return strings.HasPrefix(v, prefix) }

// ErrNotSealed is returned by Open for a value that is not sealed.
var ErrNotSealed = errors.New("value is not sealed to the workers' key")

// Seal seals value, bound to owner (ORIGIN.NAME, or ORIGIN.* for any
// identity of that origin), to recipient, the workers' public curve key
// (X…), with a fresh sender key: only the holder of the workers' private
// key can read it, and it opens only for a job of that owner, so a sealed
// value copied from someone else's job is worthless.
func Seal(owner, value, recipient string) (string, error) {
	if !nkeys.IsValidPublicCurveKey(recipient) {
		return "", fmt.Errorf("secrets: %q is not a public curve key", recipient)
	}
	sender, err := nkeys.CreateCurveKeys()
	if err != nil {
		return "", err
	}
	pub, err := sender.PublicKey()
	if err != nil {
		return "", err
	}
	box, err := sender.Seal([]byte(owner+"\x00"+value), recipient)
	if err != nil {
		return "", fmt.Errorf("secrets: seal: %w", err)
	}
	return prefix + pub + ":" + base64.RawStdEncoding.EncodeToString(box), nil
}

// Key is the workers' private key: it opens what submitters sealed.
type Key struct {
	kp  nkeys.KeyPair
	pub string

	mu     sync.Mutex
	opened map[string]string // sealed -> value: a batch's jobs share their tokens
}

// maxOpened bounds the opened values a Key keeps (it starts over when
// full).
const maxOpened = 4096

// LoadKey reads a curve seed (SX…) from file.
func LoadKey(file string) (*Key, error) {
	seed, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("secrets key: %w", err)
	}
	kp, err := nkeys.FromCurveSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		return nil, fmt.Errorf("secrets key %s: %w", file, err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return &Key{kp: kp, pub: pub}, nil
}

// NewKeySeed makes a new curve seed, for a key file.
func NewKeySeed() ([]byte, error) {
	kp, err := nkeys.CreateCurveKeys()
	if err != nil {
		return nil, err
	}
	return kp.Seed()
}

// Public is the key submitters seal to.
func (k *Key) Public() string { return k.pub }

// ErrOtherOwner is returned by Open for a value sealed for another owner.
var ErrOtherOwner = errors.New("sealed for another submitter")

// Open returns the value sealed in v for a job of owner (ORIGIN.NAME).
func (k *Key) Open(v, owner string) (string, error) {
	k.mu.Lock()
	plain, ok := k.opened[v]
	k.mu.Unlock()
	if !ok {
		var err error
		if plain, err = k.open(v); err != nil {
			return "", err
		}
		k.mu.Lock()
		if k.opened == nil || len(k.opened) >= maxOpened {
			k.opened = make(map[string]string)
		}
		k.opened[v] = plain
		k.mu.Unlock()
	}
	bound, value, ok := strings.Cut(plain, "\x00")
	if !ok {
		return "", errors.New("secrets: malformed sealed value (no owner)")
	}
	if !boundTo(bound, owner) {
		return "", fmt.Errorf("%w (%s), not %s", ErrOtherOwner, bound, owner)
	}
	return value, nil
}

// boundTo reports whether a value bound to bound opens for owner.
func boundTo(bound, owner string) bool {
	if origin, ok := strings.CutSuffix(bound, ".*"); ok {
		o, _, _ := strings.Cut(owner, ".")
		return o == origin
	}
	return bound == owner
}

func (k *Key) open(v string) (string, error) {
	rest, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return "", ErrNotSealed
	}
	sender, data, ok := strings.Cut(rest, ":")
	if !ok {
		return "", errors.New("secrets: malformed sealed value")
	}
	box, err := base64.RawStdEncoding.DecodeString(data)
	if err != nil {
		return "", fmt.Errorf("secrets: malformed sealed value: %w", err)
	}
	plain, err := k.kp.Open(box, sender)
	if err != nil {
		return "", fmt.Errorf("secrets: cannot open (sealed to another key?): %w", err)
	}
	return string(plain), nil
}

// String keeps the key out of logs and errors.
func (k *Key) String() string { return "secrets.Key(" + k.pub + ")" }
