package main

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// commandLine turns the words after -- into the job's command: one word
// is the command as written (a shell script: 'echo hi; exit 3'); several
// are each quoted for sh and joined, so that every word arrives as given,
// the way docker run IMAGE CMD... passes them (sh -c 'echo hi; exit 3'
// runs sh with two arguments).
func commandLine(words []string) (string, error) {
	if len(words) == 1 {
		return words[0], nil
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		q, err := syntax.Quote(w, syntax.LangPOSIX)
		if err != nil {
			return "", usageErr("command: word %d (%q) cannot be passed to sh: %v; give the whole command as one quoted string", i+1, w, err)
		}
		quoted[i] = q
	}
	return strings.Join(quoted, " "), nil
}
