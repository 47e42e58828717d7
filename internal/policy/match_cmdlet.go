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

// psVerbs are PowerShell's approved verbs.
const psVerbs = `Add|Approve|Assert|Backup|Block|Build|Checkpoint|Clear|Close|Compare|Complete|Compress|Confirm|Connect|` +
	`Convert|ConvertFrom|ConvertTo|Copy|Debug|Deny|Deploy|Disable|Disconnect|Dismount|Edit|Enable|Enter|Exit|Expand|Export|Find|Format|Get|` +
	`Grant|Group|Hide|Import|Initialize|Install|Invoke|Join|Limit|Lock|Measure|Merge|Mount|Move|New|Open|Optimize|Out|Ping|Pop|Protect|` +
	`Publish|Push|Read|Receive|Redo|Register|Remove|Rename|Repair|Request|Reset|Resize|Resolve|Restart|Restore|Resume|Revoke|Save|Search|` +
	`Select|Send|Set|Show|Skip|Split|Start|Step|Stop|Submit|Suspend|Switch|Sync|Test|Trace|Unblock|Undo|Uninstall|Unlock|Unprotect|` +
	`Unpublish|Unregister|Update|Use|Wait|Watch|Write`

// psCmdletName is a cmdlet's name: one of PowerShell's approved verbs, a
// dash and a noun. psQualifiedName is one qualified by its module
// (Microsoft.PowerShell.Management\Remove-Item), the backslash gone when
// sh has read the word.
var (
	psCmdletName    = regexp.MustCompile(`(?i)^(?:` + psVerbs + `)-[A-Za-z][A-Za-z0-9]*$`)
	psQualifiedName = regexp.MustCompile(`(?i)^(?:[A-Za-z][A-Za-z0-9]*\.)+[A-Za-z][A-Za-z0-9]*?\\?((?:` + psVerbs + `)-[A-Za-z][A-Za-z0-9]*)$`)
)

// psBareAliases are PowerShell's built-in aliases of cmdlets that change
// things and that name no common program outside PowerShell: ri C:\Users
// -r -fo is Remove-Item.
var psBareAliases = map[string]bool{"ri": true, "rp": true, "spps": true, "spsv": true, "clc": true, "icm": true, "saps": true, "rwmi": true}

// cmdletMatchers is what matchersFor gives a cmdlet no pack knows: the
// PowerShell judge, and the generic tools' rules it had before.
var cmdletMatchers = []matcher{matchCmdletLine, matchPacksAny}

// psCmdlet reports a program named like a cmdlet that the detector does
// not otherwise know.
func psCmdlet(name string) bool {
	if psBareAliases[name] {
		return matcherTable[name] == nil
	}
	// most names hold no dash: the expressions run only on those that do
	if strings.IndexByte(name, '-') <= 0 || matcherTable[canonical(name)] != nil {
		return false
	}
	return psCmdletName.MatchString(name) || strings.IndexByte(name, '.') > 0 && psQualifiedName.MatchString(name)
}

// cmdletOf is the cmdlet a psCmdlet name calls, its module dropped.
func cmdletOf(name string) string {
	if strings.IndexByte(name, '.') > 0 {
		if m := psQualifiedName.FindStringSubmatch(name); m != nil {
			return m[1]
		}
	}
	return name
}

// matchCmdletLine judges a cmdlet statement as pwsh -Command would have
// it judged: the statement as written is the script.
func matchCmdletLine(c *command, h *hits) {
	words := []string{cmdletOf(c.name)}
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
