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

// checkProfileKeys refuses, in the profile named name (a YAML mapping),
// every key its kind does not read, naming its path and the kinds that do.
// An unknown kind is left to NewBackend's error.
func checkProfileKeys(name string, profile *yaml.Node) error {
	if profile == nil || profile.Kind != yaml.MappingNode {
		return nil
	}
	kind := ""
	for i := 0; i+1 < len(profile.Content); i += 2 {
		if profile.Content[i].Value == "kind" {
			kind = profile.Content[i+1].Value
		}
	}
	k, known := kindNamed(kind)
	if !known {
		return nil
	}
	allowed := k.keys
	for i := 0; i+1 < len(profile.Content); i += 2 {
		key := profile.Content[i].Value
		if slices.Contains(allowed, key) || slices.Contains(commonProfileKeys, key) {
			continue
		}
		var owners []string
		for _, other := range kinds {
			if other.name != "apptainer" && slices.Contains(other.keys, key) {
				owners = append(owners, other.name)
			}
		}
		if len(owners) == 0 {
			continue // unknown everywhere: the strict decoder names it
		}
		return fmt.Errorf("backends.%s.%s (line %d): not an option of kind %s (it is one of %s); remove it or change the kind",
			name, key, profile.Content[i].Line, kind, strings.Join(owners, ", "))
	}
	return nil
}

// checkFileProfileKeys runs checkProfileKeys on every profile of a config
// file's YAML, returning the errors by profile name.
func checkFileProfileKeys(data []byte) map[string]error {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	root := doc.Content[0]
	bad := map[string]error{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "backends" || root.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		profiles := root.Content[i+1]
		for j := 0; j+1 < len(profiles.Content); j += 2 {
			if err := checkProfileKeys(profiles.Content[j].Value, profiles.Content[j+1]); err != nil {
				bad[profiles.Content[j].Value] = err
			}
		}
	}
	return bad
}
