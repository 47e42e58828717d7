package policy

import (
	"regexp"
	"strings"
)

// A PowerShell line given as the job's command: an agent on a Windows
// host writes `Stop-Computer -Force` or `Get-ADUser ... | Remove-ADUser`
// without a powershell -Command around it. sh cannot run a cmdlet, but a
// PowerShell backend (or a PATH shim of that name) runs it as written, so
// a command named like a cmdlet (an approved verb, a dash, a noun) that no
// pack or matcher knows is judged as the PowerShell statement it is:
// exactly as pwsh -Command would have it judged.

// psCmdletName is a cmdlet's name: one of PowerShell's approved verbs, a
// dash and a noun.
var psCmdletName = regexp.MustCompile(`(?i)^(Add|Approve|Assert|Backup|Block|Build|Checkpoint|Clear|Close|Compare|Complete|Compress|Confirm|Connect|` +
	`Convert|ConvertFrom|ConvertTo|Copy|Debug|Deny|Deploy|Disable|Disconnect|Dismount|Edit|Enable|Enter|Exit|Expand|Export|Find|Format|Get|` +
	`Grant|Group|Hide|Import|Initialize|Install|Invoke|Join|Limit|Lock|Measure|Merge|Mount|Move|New|Open|Optimize|Out|Ping|Pop|Protect|` +
	`Publish|Push|Read|Receive|Redo|Register|Remove|Rename|Repair|Request|Reset|Resize|Resolve|Restart|Restore|Resume|Revoke|Save|Search|` +
	`Select|Send|Set|Show|Skip|Split|Start|Step|Stop|Submit|Suspend|Switch|Sync|Test|Trace|Unblock|Undo|Uninstall|Unlock|Unprotect|` +
	`Unpublish|Unregister|Update|Use|Wait|Watch|Write)-[A-Za-z][A-Za-z0-9]*$`)

// cmdletMatchers is what matchersFor gives a cmdlet no pack knows: the
// PowerShell judge, and the generic tools' rules it had before.
var cmdletMatchers = []matcher{matchCmdletLine, matchPacksAny}

// psCmdlet reports a program named like a cmdlet that the detector does
// not otherwise know.
func psCmdlet(name string) bool {
	// most names hold no dash: the expression runs only on those that do
	return strings.IndexByte(name, '-') > 0 && psCmdletName.MatchString(name) && matcherTable[canonical(name)] == nil
}

// matchCmdletLine judges a cmdlet statement as pwsh -Command would have
// it judged: the statement as written is the script.
func matchCmdletLine(c *command, h *hits) {
	words := []string{c.name}
	for _, a := range c.args {
		w := a.src // as written: $false, $env:X and 'C:\Users' are PowerShell's to read
		if w == "" {
			w = strings.ReplaceAll(a.val, homeMarker, "$HOME")
		}
		words = append(words, w)
	}
	script := strings.Join(words, " ")
	ps := *c
	ps.name, ps.prog = "pwsh", "pwsh"
	ps.args = []arg{{val: "-Command", src: "-Command", lit: true, exact: -1}, {val: script, lit: true, exact: -1}}
	for _, m := range matcherTable["pwsh"] {
		m(&ps, h)
	}
}
