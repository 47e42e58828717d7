//go:build linux

package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// flagKind is the pflag type apptainer registers a flag with.
type flagKind int

const (
	boolFlag   flagKind = iota
	stringFlag          // last one wins
	intFlag             // validated, kept as a string
	arrayFlag           // pflag StringArray: one value per occurrence
	sliceFlag           // pflag StringSlice: each occurrence is a CSV list
	mapFlag             // pflag StringToString: see setStringToString
)

// flagDef is one flag of a command.
type flagDef struct {
	name  string
	short string
	kind  flagKind
	// env are the keys that set the flag as APPTAINER_<key> (or, at lower
	// precedence, SINGULARITY_<key>) before the command line is read.
	env []string
}

// envPrefixes are the flag-variable prefixes in order of precedence.
var envPrefixes = []string{"APPTAINER_", "SINGULARITY_"}

// globalFlags are the root command's flags.
var globalFlags = []flagDef{
	{name: "debug", short: "d", kind: boolFlag},
	{name: "nocolor", kind: boolFlag},
	{name: "silent", short: "s", kind: boolFlag},
	{name: "quiet", short: "q", kind: boolFlag},
	{name: "verbose", short: "v", kind: boolFlag},
	{name: "config", short: "c", kind: stringFlag, env: []string{"CONFIG_FILE"}},
	{name: "version", kind: boolFlag},
}

// flagValues holds parsed flags.
type flagValues struct {
	bools map[string]bool
	strs  map[string]string
	lists map[string][]string
	maps  map[string]map[string]string
}

func (v *flagValues) bool(name string) bool                   { return v.bools[name] }
func (v *flagValues) str(name string) string                  { return v.strs[name] }
func (v *flagValues) list(name string) []string               { return v.lists[name] }
func (v *flagValues) stringMap(name string) map[string]string { return v.maps[name] }

// parseFlags parses args like cobra/pflag with interspersed flags off:
// the first argument that is not a flag (or "--") ends the flags. Flags
// are first set from their APPTAINER_/SINGULARITY_ variables. It returns
// the remaining arguments. cmd names the command in error messages.
func parseFlags(cmd string, defs []flagDef, args []string) (*flagValues, []string, error) {
	v := &flagValues{
		bools: map[string]bool{}, strs: map[string]string{}, lists: map[string][]string{},
		maps: map[string]map[string]string{},
	}
	if err := v.fromEnv(cmd, defs); err != nil {
		return nil, nil, err
	}
	byName, byShort := map[string]*flagDef{}, map[string]*flagDef{}
	for i := range defs {
		byName[defs[i].name] = &defs[i]
		if defs[i].short != "" {
			byShort[defs[i].short] = &defs[i]
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return v, args[i+1:], nil
		case strings.HasPrefix(a, "--"):
			name, val, hasVal := strings.Cut(a[2:], "=")
			d := byName[name]
			if d == nil {
				return nil, nil, &usageError{cmd: cmd, msg: "unknown flag: --" + name}
			}
			if !hasVal {
				if d.kind == boolFlag {
					val = "true"
				} else if i+1 < len(args) {
					i++
					val = args[i]
				} else {
					return nil, nil, &usageError{cmd: cmd, msg: "flag needs an argument: --" + name}
				}
			}
			if err := v.set(cmd, d, val); err != nil {
				return nil, nil, err
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			shorts := a[1:]
			for j := 0; j < len(shorts); j++ {
				c := shorts[j : j+1]
				d := byShort[c]
				if d == nil {
					return nil, nil, &usageError{cmd: cmd, msg: fmt.Sprintf("unknown shorthand flag: %q in -%s", c, shorts)}
				}
				rest := shorts[j+1:]
				if d.kind == boolFlag {
					val := "true"
					if strings.HasPrefix(rest, "=") {
						val, j = rest[1:], len(shorts)
					}
					if err := v.set(cmd, d, val); err != nil {
						return nil, nil, err
					}
					continue
				}
				var val string
				switch {
				case rest != "":
					val = strings.TrimPrefix(rest, "=")
				case i+1 < len(args):
					i++
					val = args[i]
				default:
					return nil, nil, &usageError{cmd: cmd, msg: fmt.Sprintf("flag needs an argument: %q in -%s", c, shorts)}
				}
				if err := v.set(cmd, d, val); err != nil {
					return nil, nil, err
				}
				break
			}
		default:
			return v, args[i:], nil
		}
	}
	return v, nil, nil
}

// fromEnv sets flags from APPTAINER_<key>, else SINGULARITY_<key>.
func (v *flagValues) fromEnv(cmd string, defs []flagDef) error {
	for i := range defs {
		d := &defs[i]
		found := map[string]bool{}
		for _, prefix := range envPrefixes {
			for _, key := range d.env {
				val, ok := os.LookupEnv(prefix + key)
				if !ok || found[key] {
					continue
				}
				found[key] = true
				vals := []string{val}
				if d.kind == arrayFlag {
					vals = strings.Split(val, ",") // cmdline.EnvAppendValue
				}
				for _, one := range vals {
					if err := v.set(cmd, d, one); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// set gives flag d the value val, as pflag's Value.Set does.
func (v *flagValues) set(cmd string, d *flagDef, val string) error {
	invalid := func(err error) error {
		return &usageError{cmd: cmd, msg: fmt.Sprintf("invalid argument %q for %q flag: %v", val, "--"+d.name, err)}
	}
	switch d.kind {
	case boolFlag:
		b, err := strconv.ParseBool(val)
		if err != nil {
			return invalid(err)
		}
		v.bools[d.name] = b
	case stringFlag:
		v.strs[d.name] = val
	case intFlag:
		if _, err := strconv.Atoi(val); err != nil {
			return invalid(err)
		}
		v.strs[d.name] = val
	case arrayFlag:
		v.lists[d.name] = append(v.lists[d.name], val)
	case sliceFlag:
		if val == "" {
			break
		}
		vals, err := csv.NewReader(strings.NewReader(val)).Read()
		if err != nil {
			return invalid(err)
		}
		v.lists[d.name] = append(v.lists[d.name], vals...)
	case mapFlag:
		kv, err := stringToString(val)
		if err != nil {
			return invalid(err)
		}
		if v.maps[d.name] == nil {
			v.maps[d.name] = map[string]string{}
		}
		for k, x := range kv {
			v.maps[d.name][k] = x
		}
	}
	return nil
}

// stringToString parses one occurrence of a pflag StringToString flag
// (apptainer's --env) exactly as pflag does: with a single "=" the whole
// argument is one pair (trimmed of double quotes at both ends, so a value
// may hold commas); with more than one "=" it is a CSV list of pairs, so
// "A=x,y=z" sets A=x and y=z.
func stringToString(val string) (map[string]string, error) {
	var pairs []string
	switch strings.Count(val, "=") {
	case 0:
		if val == "" {
			return map[string]string{}, nil
		}
		return nil, fmt.Errorf("%s must be formatted as key=value", val)
	case 1:
		pairs = []string{strings.Trim(val, `"`)}
	default:
		var err error
		if pairs, err = csv.NewReader(strings.NewReader(val)).Read(); err != nil {
			return nil, err
		}
	}
	out := make(map[string]string, len(pairs))
	for _, p := range pairs {
		k, x, ok := strings.Cut(p, "=")
		if !ok {
			return nil, fmt.Errorf("%s must be formatted as key=value", p)
		}
		out[k] = x
	}
	return out, nil
}
