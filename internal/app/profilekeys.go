package app

import (
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// commonProfileKeys are read for every kind.
var commonProfileKeys = []string{"kind", "forward_env"}

// A profile is decoded into one struct for every kind, so a key of
// another kind (port: on a docker profile) would be decoded and then
// silently ignored: checkProfileKeys refuses it instead, by the keys the
// kinds table lists.

// blockNames maps the kinds whose settings are a ProfileSettings block to
// the names their block may have.
var blockNames = map[string][]string{
	"local": {"local"}, "docker": {"docker"}, "ssh": {"ssh"},
	"singularity": {"singularity", "apptainer"}, "apptainer": {"apptainer", "singularity"},
}

// isBlockName reports a key that names a kind's settings block.
func isBlockName(key string) bool {
	_, ok := blockNames[key]
	return ok
}

// checkProfileKeys refuses, in the profile named name (a YAML mapping),
// every key its kind does not read, naming its path and the kinds that do;
// a settings block of another kind; and settings given both in the
// kind's block and at the profile's top level. A profile whose settings
// are at the top level (the form before blocks) is read, with the warning
// returned in deprecated. An unknown kind is left to NewBackend's error.
func checkProfileKeys(name string, profile *yaml.Node) (deprecated string, err error) {
	if profile == nil || profile.Kind != yaml.MappingNode {
		return "", nil
	}
	kind := ""
	for i := 0; i+1 < len(profile.Content); i += 2 {
		if profile.Content[i].Value == "kind" {
			kind = profile.Content[i+1].Value
		}
	}
	k, known := kindNamed(kind)
	if !known {
		return "", nil
	}
	own := blockNames[kind]
	var block, blockKey *yaml.Node
	var flat []*yaml.Node
	for i := 0; i+1 < len(profile.Content); i += 2 {
		key := profile.Content[i]
		switch {
		case slices.Contains(commonProfileKeys, key.Value):
		case isBlockName(key.Value):
			if !slices.Contains(own, key.Value) {
				return "", fmt.Errorf("backends.%s.%s (line %d): the settings block of kind %s, on a profile of kind %s; %s",
					name, key.Value, key.Line, key.Value, kind, blockHint(name, kind))
			}
			if block != nil {
				return "", fmt.Errorf("backends.%s.%s (line %d): a second settings block (backends.%s.%s is one already)",
					name, key.Value, key.Line, name, blockKey.Value)
			}
			block, blockKey = profile.Content[i+1], key
		case slices.Contains(k.keys, key.Value):
			if own != nil {
				flat = append(flat, key)
			}
		default:
			if err := foreignKey("backends."+name+"."+key.Value, key, kind); err != nil {
				return "", err
			}
		}
	}
	if block == nil {
		if len(flat) == 0 {
			return "", nil
		}
		keys := make([]string, len(flat))
		for i, f := range flat {
			keys[i] = f.Value
		}
		return fmt.Sprintf("backends.%s: %s at the profile's top level is deprecated; write %s under %s: (backends.%s.%s.%s), as docs/configuration.md shows; the top level is read until the next release",
			name, strings.Join(keys, ", "), pronoun(len(keys)), kind, name, kind, keys[0]), nil
	}
	if len(flat) > 0 {
		return "", fmt.Errorf("backends.%s.%s (line %d): set at the profile's top level beside the %s block; move it into backends.%s.%s",
			name, flat[0].Value, flat[0].Line, blockKey.Value, name, blockKey.Value)
	}
	if block.Kind != yaml.MappingNode {
		if block.Tag == "!!null" {
			return "", nil
		}
		return "", fmt.Errorf("backends.%s.%s (line %d): must be a mapping of the kind's settings", name, blockKey.Value, blockKey.Line)
	}
	for i := 0; i+1 < len(block.Content); i += 2 {
		key := block.Content[i]
		if slices.Contains(k.keys, key.Value) {
			continue
		}
		if err := foreignKey("backends."+name+"."+blockKey.Value+"."+key.Value, key, kind); err != nil {
			return "", err
		}
	}
	return "", nil
}

// foreignKey refuses key, at path, if another kind reads it; a key no kind
// reads is left to the strict decoder, which names it.
func foreignKey(path string, key *yaml.Node, kind string) error {
	var owners []string
	for _, other := range kinds {
		if other.name != "apptainer" && slices.Contains(other.keys, key.Value) {
			owners = append(owners, other.name)
		}
	}
	if len(owners) == 0 {
		return nil
	}
	return fmt.Errorf("%s (line %d): not an option of kind %s (it is one of %s); remove it or change the kind",
		path, key.Line, kind, strings.Join(owners, ", "))
}

// blockHint says where a profile of kind keeps its settings.
func blockHint(name, kind string) string {
	if names, ok := blockNames[kind]; ok {
		return fmt.Sprintf("its settings go under backends.%s.%s", name, names[0])
	}
	return "remove it or change the kind"
}

func pronoun(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// checkFileProfileKeys runs checkProfileKeys on every profile of a config
// file's YAML, returning the errors and the deprecation warnings by
// profile name.
func checkFileProfileKeys(data []byte) (bad map[string]error, deprecated map[string]string) {
	bad, deprecated = map[string]error{}, map[string]string{}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return bad, deprecated
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "backends" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		profiles := root.Content[i+1]
		for j := 0; j+1 < len(profiles.Content); j += 2 {
			name := profiles.Content[j].Value
			dep, err := checkProfileKeys(name, profiles.Content[j+1])
			if err != nil {
				bad[name] = err
			}
			if dep != "" {
				deprecated[name] = dep
			}
		}
	}
	return bad, deprecated
}
