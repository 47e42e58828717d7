package policy

import (
	"slices"
	"strings"
)

// matchHistory judges history -c and set +o history.
func matchHistory(c *command, h *hits) {
	if c.name == "set" {
		for i, a := range c.args {
			if a.val == "+o" && i+1 < len(c.args) && c.args[i+1].val == "history" {
				h.add(ruleHistoryWipe, "set +o history")
			}
		}
		return
	}
	for _, a := range c.args {
		if a.lit && len(a.val) > 1 && a.val[0] == '-' && strings.Contains(a.val, "c") {
			h.add(ruleHistoryWipe, "history -c")
			return
		}
	}
}

// historyVars are the variables whose empty or null value stops history.
var historyVars = []string{"HISTFILE", "HISTSIZE", "HISTFILESIZE", "SAVEHIST"}

// historyVar judges an assignment such as HISTFILE=/dev/null or HISTSIZE=0.
func (w *walker) historyVar(name string, v value, sp span) {
	if !slices.Contains(historyVars, name) {
		return
	}
	for _, s := range v.vals {
		if s == "" || s == "0" || s == "/dev/null" || strings.HasPrefix(s, "-") {
			w.d.add(w.f, ruleHistoryWipe, name+" set to "+quoteDetail(s), "", sp)
			return
		}
	}
}

// historyUnset judges unset HISTFILE.
func (w *walker) historyUnset(a arg, c *command) {
	if a.lit && (a.val == "HISTFILE" || a.val == "HISTSIZE" || a.val == "HISTFILESIZE") {
		w.d.add(w.f, ruleHistoryWipe, "unset "+a.val, c.via, c.sp)
	}
}
