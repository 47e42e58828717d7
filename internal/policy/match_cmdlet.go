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
var psBareAliases = map[string]bool{"ri": true, "rp": true, "spps": true, "spsv": true, "clc": true, "icm": true, "saps": true, "rwmi": true,
	"iwr": true, "irm": true, "iex": true}

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
	if strings.Contains(c.stmt, script) || strings.Contains(c.stmt, "|") && strings.Contains(c.stmt, c.name) {
		script = c.stmt // the whole pipeline: gci $HOME | Remove-Item -Recurse
	}
	if first, _, _ := strings.Cut(strings.TrimSpace(c.frame), " "); first != "" && (psCmdlet(first) || psCmdletName.MatchString(first) || psAssignStart.MatchString(c.frame)) && strings.Contains(c.frame, script) {
		// a script of PowerShell statements (sh split it at ;): judged
		// whole, so that what one statement made another may remove
		script = c.frame
	}
	judgeAsPwsh(*c, script, h)
}

// judgeAsPwsh runs the PowerShell judge on script, in c's place: as
// pwsh -Command SCRIPT would have it judged.
func judgeAsPwsh(c command, script string, h *hits) {
	c.name, c.prog = "pwsh", "pwsh"
	c.args = []arg{{val: "-Command", src: "-Command", lit: true, exact: -1}, {val: script, lit: true, exact: -1}}
	for _, m := range matcherTable["pwsh"] {
		m(&c, h)
	}
}

// psAssignStart is a script that begins as a PowerShell one does, with an
// assignment to a variable ($p = ".\node_modules"; Remove-Item $p -Recurse).
var psAssignStart = regexp.MustCompile(`^\s*\$[a-z_]\w*\s*=[^=]`)

// psAssignment reports a statement sh reads as running the program a
// variable names, that is PowerShell's assignment: $p = "dist" (sh would
// run $p's value with the arguments = and dist). Only a lower-case name
// the script never set counts: sh finds it empty, and runs nothing.
func (w *walker) psAssignment(words []arg) bool {
	if len(words) == 0 || w.f.parent != nil {
		return false
	}
	src := words[0].src
	name, _, _ := strings.Cut(strings.TrimPrefix(src, "$"), "=")
	if !strings.HasPrefix(src, "$") || name == "" || name[0] < 'a' || name[0] > 'z' || strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" {
		return false
	}
	if v := w.env.get(name); !v.unknown || !v.env || len(v.vals) > 0 {
		return false // the script or the job set it: sh's variable
	}
	if !strings.Contains(src, "=") && (len(words) < 2 || !strings.HasPrefix(words[1].src, "=")) {
		return false
	}
	return psAssignStart.MatchString(w.f.src)
}

// psScript judges the whole script as the PowerShell one it is.
func (w *walker) psScript(sp span) {
	var h hits
	judgeAsPwsh(command{cwd: w.env.cwd, home: w.env.get("HOME"), sp: sp, frame: w.f.src, stmt: w.f.src}, w.f.src, &h)
	for _, x := range h {
		w.d.add(w.f, x.rule, x.detail, "", sp)
	}
}

// A PowerShell script that makes an object and removes it again is a test
// of something, not a deletion of what was there:
//
//	$g = New-MgGroup -DisplayName probe-4711 ...; Get-MgGroup -GroupId $g.Id; Remove-MgGroup -GroupId $g.Id
//	New-ADGroup -Name ci-4711 ...; Remove-ADGroup -Identity ci-4711 -Confirm:$false
//
// psDropScratch blanks such removals before the rules read the script.
// PowerShell runs the next statement after a failed one, so a removal by
// name is exempt only for a throwaway name (ci-4711, probe-4711); one
// through the variable the New- statement filled is exempt for any name
// (a failed New- leaves the variable empty and the removal fails).
var (
	psNewStmt = regexp.MustCompile(`(?i)^\s*(?:\$(\w+)\s*=\s*)?(?:New|Register)-(\w+)\b(.*)`)
	// psVarWrites are the ways a script gives a variable a value other
	// than by $v = ...: what they set is not known to be what New- made.
	psVarWrites  = regexp.MustCompile(`(?i)-OutVariable\b|-ov\b|-PipelineVariable\b|-pv\b|Set-Variable\b|New-Variable\b|\bsv\b|\bforeach\s*\(|\$\{|\[ref\]|\$(global|script|local|private):`)
	psRemoveStmt = regexp.MustCompile(`(?i)^\s*(?:Remove|Unregister)-(\w+)\b(.*)`)
	psNameParam  = regexp.MustCompile(`(?i)^-(Name|DisplayName|TaskName|VMName|MailNickname|SamAccountName|Identity|GroupId|UserId|Id|ObjectId|Path|ApplicationId|ServicePrincipalId|DeviceId|TeamId|SiteId|PolicyId|AppId)$`)
)

func psDropScratch(script string) string {
	if !strings.Contains(script, "New-") && !strings.Contains(script, "Register-") && !strings.Contains(script, "new-") {
		return script // the common case: nothing is made
	}
	made := map[string]map[string]bool{} // noun -> names and $variables
	varsOK := !psVarWrites.MatchString(script)
	assigned := map[string]int{}
	for _, m := range psAssignedVar.FindAllStringSubmatch(script, -1) {
		assigned[strings.ToLower(m[1])]++
	}
	var b []byte
	for i, st := range psStatements(script) {
		text := script[st[0]:st[1]]
		if i == 0 {
			// the first statement may start with the program's own name
			// (pwsh -c ...): read from the first cmdlet or assignment
			if j := psStmtStart.FindStringIndex(text); j != nil {
				text = text[j[0]:]
			}
		}
		if newVHDPipeline(text, made["vhd"]) {
			// New-VHD ... | Mount-VHD -Passthru | Initialize-Disk ... |
			// Format-Volume: the disk formatted is the one just made
			if b == nil {
				b = []byte(script)
			}
			for i := st[0]; i < st[1]; i++ {
				b[i] = ' '
			}
			continue
		}
		if m := psRemoveStmt.FindStringSubmatch(text); m != nil && made[strings.ToLower(m[1])] != nil && !strings.Contains(m[2], "*") {
			if target, ok := psTarget(m[2]); ok && made[strings.ToLower(m[1])][target] &&
				(strings.HasPrefix(target, "$") || throwawayName(target)) {
				if b == nil {
					b = []byte(script)
				}
				for i := st[0]; i < st[1]; i++ {
					b[i] = ' '
				}
				continue
			}
		}
		if m := psNewStmt.FindStringSubmatch(text); m != nil {
			noun := strings.ToLower(m[2])
			if made[noun] == nil {
				made[noun] = map[string]bool{}
			}
			if v := strings.ToLower(m[1]); v != "" && varsOK && assigned[v] == 1 {
				v = "$" + v
				made[noun][v], made[noun][v+".id"], made[noun][v+".objectid"], made[noun][v+".name"] = true, true, true, true
			}
			for _, n := range psMadeNames(m[3]) {
				made[noun][n] = true
			}
		}
	}
	if b == nil {
		return script
	}
	return string(b)
}

// newVHDPipeline reports a pipeline that starts by making a virtual disk
// (New-VHD ... | Mount-VHD), or by mounting one the script made
// (Mount-VHD -Path $v.Path), and names no other disk on the way.
func newVHDPipeline(text string, made map[string]bool) bool {
	if !strings.Contains(text, "|") || psOtherDisk.MatchString(text) || strings.ContainsAny(text, "{}()&`") || strings.Contains(text, "||") {
		return false
	}
	for i, stage := range strings.Split(text, "|") {
		f := strings.Fields(stage)
		if len(f) == 0 || !vhdStages[strings.ToLower(f[0])] || i == 0 && !strings.EqualFold(f[0], "New-VHD") && !strings.EqualFold(f[0], "Mount-VHD") {
			return false // a stage that is not the making, mounting or formatting of the new disk
		}
		for j, w := range f[1:] {
			if !strings.HasPrefix(w, "-") && (j == 0 || !strings.HasPrefix(f[j], "-") || strings.Contains(f[j], ":")) && (i != 0 || !strings.HasPrefix(w, "$")) {
				return false // a positional argument (Format-Volume C) names another disk
			}
		}
	}
	if psNewVHDPipe.MatchString(text) {
		return true
	}
	m := psMountMade.FindStringSubmatch(text)
	return m != nil && made["$"+strings.ToLower(m[1])]
}

// vhdStages are the cmdlets of a pipeline that makes, mounts and formats
// a virtual disk.
var vhdStages = map[string]bool{"new-vhd": true, "mount-vhd": true, "get-disk": true, "initialize-disk": true, "new-partition": true,
	"format-volume": true, "get-partition": true, "out-null": true, "add-partitionaccesspath": true}

var (
	psNewVHDPipe = regexp.MustCompile(`(?i)^\s*New-VHD\b[^|;]*\|\s*Mount-VHD\b`)
	psMountMade  = regexp.MustCompile(`(?i)^\s*Mount-VHD\s+(?:-Path\s+)?\$(\w+)(?:\.Path)?\s`)
	psOtherDisk  = regexp.MustCompile(`(?i)\s-(Number|DiskNumber|DriveLetter|UniqueId|FriendlyName|SerialNumber|ObjectId|DiskId|Partition|InputObject)\b`)
)

// psAssignedVar is any assignment to a variable; psStmtStart where a
// statement's PowerShell starts.
var (
	psAssignedVar = regexp.MustCompile(`\$(\w+)\s*[-+*/]?=[^=]`)
	psStmtStart   = regexp.MustCompile(`(?i)\$\w+\s*=|\b(New|Register|Remove|Unregister)-\w+`)
)

// psStatements splits a script at ;, newlines and && outside quotes.
func psStatements(s string) [][2]int {
	var out [][2]int
	start := 0
	var quote byte
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
			}
		case ch == '\'' || ch == '"':
			quote = ch
		case ch == ';' || ch == '\n':
			out = append(out, [2]int{start, i})
			start = i + 1
		case ch == '&' && i+1 < len(s) && s[i+1] == '&':
			out = append(out, [2]int{start, i})
			start = i + 2
			i++
		}
	}
	return append(out, [2]int{start, len(s)})
}

// psMadeNames returns the names a New- statement gives its object: the values
// of its naming parameters and its first positional word.
func psMadeNames(params string) []string {
	var out []string
	words := strings.Fields(params)
	positional := true
	for i := 0; i < len(words); i++ {
		w := words[i]
		if strings.HasPrefix(w, "-") {
			positional = false
			if psNameParam.MatchString(w) && i+1 < len(words) {
				out = append(out, strings.ToLower(strings.Trim(words[i+1], `"'`)))
				i++
			}
			continue
		}
		if positional && w != "|" {
			out = append(out, strings.ToLower(strings.Trim(w, `"'`)))
			positional = false
		}
	}
	return out
}

// psTarget returns what a Remove- statement names: the value of its one
// naming parameter or its one positional word. A statement that names
// two things (a list, or two words), or goes on into a pipeline, a block or a subexpression
// (whose other commands the exemption would hide), names none.
func psTarget(params string) (string, bool) {
	if strings.ContainsAny(params, "|{}()`;&,") {
		return "", false
	}
	var targets []string
	words := strings.Fields(params)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.HasPrefix(w, "-") && psNameParam.MatchString(w) && i+1 < len(words):
			targets = append(targets, strings.ToLower(strings.Trim(words[i+1], `"'`)))
			i++
		case strings.HasPrefix(w, "-"):
			if !strings.Contains(w, ":") && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
				i++ // -Server dc01: the parameter's value
			}
		default:
			targets = append(targets, strings.ToLower(strings.Trim(w, `"'`)))
		}
	}
	if len(targets) != 1 {
		return "", false
	}
	return targets[0], true
}

// powershellProgram reports a program whose arguments PowerShell reads:
// pwsh and powershell, and a cmdlet (Set-NetFirewallProfile) called by
// name. Its -Param:Value is -Param Value (psColonParams).
func powershellProgram(name string) bool {
	switch strings.ToLower(strings.TrimSuffix(strings.ToLower(name), ".exe")) {
	case "pwsh", "powershell", "powershell_ise":
		return true
	}
	return psCmdletName.MatchString(name)
}
