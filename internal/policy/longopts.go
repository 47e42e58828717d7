package policy

import (
	"slices"
	"strings"
)

// longMeanings returns the long options of a program (all) that --name may
// stand for: name itself when it is one of them, else every option it is a
// prefix of. getopt_long and git's parse-options take any unambiguous
// prefix (--force-w is --force-with-lease); an ambiguous one is an error
// the program reports, and counting it as each of its meanings fails
// closed.
func longMeanings(name string, all []string) []string {
	if name == "" {
		return nil
	}
	if slices.Contains(all, name) {
		return []string{name}
	}
	var out []string
	for _, o := range all {
		if strings.HasPrefix(o, name) {
			out = append(out, o)
		}
	}
	return out
}

// optionIs reports whether the parsed option o is the short option short
// (a letter, "" for none) or may stand for the long option long of a
// program whose long options are all.
func optionIs(o option, short, long string, all []string) bool {
	if !o.long {
		return short != "" && o.name == short
	}
	return slices.Contains(longMeanings(o.name, all), long)
}
