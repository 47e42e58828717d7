package jobs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// FieldError is a validation or decoding error about one field of a spec.
type FieldError struct {
	Field string // JSON path, e.g. "retry.initial"
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// ErrTooLarge is wrapped by decoding errors for specs over MaxSpecBytes.
var ErrTooLarge = errors.New("spec too large")

// Duration is a time.Duration that encodes as a Go duration string.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON encodes d as a string such as "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts a duration string. Bare numbers are refused: "is
// 30 seconds or 30 nanoseconds?" is a question nobody should have to ask.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &durationError{raw: string(b)}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &durationError{raw: s}
	}
	*d = Duration(v)
	return nil
}

type durationError struct{ raw string }

func (e *durationError) Error() string {
	return fmt.Sprintf("invalid duration %s (want a string such as \"30s\" or \"1h30m\")", e.raw)
}

// DecodeJSON decodes and validates one spec. Unknown fields, wrong types,
// bad durations, missing commands and oversize input are errors naming the
// field. The result has defaults filled.
func DecodeJSON(data []byte) (Spec, error) {
	if len(data) > MaxSpecBytes {
		return Spec{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxSpecBytes)
	}
	if err := checkText(data); err != nil {
		return Spec{}, err
	}
	var s Spec
	if err := strictJSON(data, &s); err != nil {
		return Spec{}, err
	}
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return Spec{}, err
	}
	return s, nil
}

// DecodeYAML decodes a YAML spec by the same rules as DecodeJSON.
func DecodeYAML(data []byte) (Spec, error) {
	if len(data) > MaxSpecBytes {
		return Spec{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(data), MaxSpecBytes)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		return Spec{}, fmt.Errorf("yaml: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return Spec{}, errors.New("spec must be a mapping")
	}
	j, err := json.Marshal(v)
	if err != nil {
		return Spec{}, fmt.Errorf("yaml: %w", err)
	}
	return DecodeJSON(j)
}

// DecodeFile decodes a spec from r, choosing YAML for names ending in
// .yaml or .yml and JSON otherwise.
func DecodeFile(name string, r io.Reader) (Spec, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSpecBytes+1))
	if err != nil {
		return Spec{}, err
	}
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") {
		return DecodeYAML(data)
	}
	return DecodeJSON(data)
}

// strictJSON decodes exactly one JSON value into v, refusing unknown
// fields, and turns the decoder's errors into FieldErrors.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonFieldError(data, err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

func jsonFieldError(data []byte, err error) error {
	var te *json.UnmarshalTypeError
	var de *durationError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return fmt.Errorf("spec must be a JSON object, got %s", te.Value)
		}
		return fieldErr(field, "wrong type: got %s, want %s", te.Value, te.Type)
	case errors.As(err, &de):
		// encoding/json does not say which field an Unmarshaler failed
		// on; find it by decoding the durations one by one.
		return &FieldError{Field: locateBadDuration(data), Msg: de.Error()}
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fieldErr(strings.Trim(f, `"`), "unknown field")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// locateBadDuration names the first duration field of a spec that does not
// decode.
func locateBadDuration(data []byte) string {
	var top struct {
		Timeout json.RawMessage `json:"timeout"`
		Retry   struct {
			Initial json.RawMessage `json:"initial"`
			Max     json.RawMessage `json:"max"`
		} `json:"retry"`
	}
	_ = json.Unmarshal(data, &top)
	for _, c := range []struct {
		name string
		raw  json.RawMessage
	}{{"timeout", top.Timeout}, {"retry.initial", top.Retry.Initial}, {"retry.max", top.Retry.Max}} {
		var d Duration
		if c.raw != nil && d.UnmarshalJSON(c.raw) != nil {
			return c.name
		}
	}
	return "duration"
}

// checkText refuses a spec whose bytes are not UTF-8, or that escapes a
// lone UTF-16 surrogate: the JSON decoder would turn either into U+FFFD
// without a word, and a different command than the one written would run.
func checkText(data []byte) error {
	if !utf8.Valid(data) {
		return &FieldError{Field: "spec", Msg: "is not valid UTF-8"}
	}
	surrogate := func(i int) (uint64, bool) { // \uXXXX at i, a surrogate?
		if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' && data[i+1] != 'U' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 32)
		return v, err == nil && v >= 0xd800 && v <= 0xdfff
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		hi, ok := surrogate(i)
		switch {
		case !ok:
			i++ // an escape: skip the escaped character (\\ included)
		case hi >= 0xdc00:
			return &FieldError{Field: "spec", Msg: fmt.Sprintf("escapes a lone UTF-16 surrogate (%s)", data[i:i+6])}
		default:
			if lo, ok := surrogate(i + 6); !ok || lo < 0xdc00 {
				return &FieldError{Field: "spec", Msg: fmt.Sprintf("escapes a lone UTF-16 surrogate (%s)", data[i:i+6])}
			}
			i += 11
		}
	}
	return nil
}
