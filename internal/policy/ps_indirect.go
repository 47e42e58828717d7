package policy

import (
	"path"
	"regexp"
	"strconv"
	"strings"
)

// PowerShell lets a script name the command it runs without writing it:
// by a wildcard Get-Command resolves (& (gcm Rem*-It?m)), by an alias the
// script defines (sal x Remove-Item; x ...), by a string reversed at run
// time (& (-join "metI-evomeR"[-1..-11])) or built by the format operator
// (.("{1}{0}" -f "X","IE")). psIndirect writes each of these as the name
// it stands for, so that the rules read the command that runs.

var (
	// psCallGlob is the call operator given Get-Command's pick of a
	// wildcard pattern.
	psCallGlob = regexp.MustCompile(`(?i)([&.]\s*)\(\s*(?:Get-Command|gcm)\s+(?:-Name\s+)?["']?([\w*?\[\]-]*[*?][\w*?\[\]-]*)["']?\s*\)`)
	// psJoinReversed is a string literal reversed by -join over a
	// descending index range: -join "metI-evomeR"[-1..-11].
	psJoinReversed = regexp.MustCompile(`(?i)-join\s*(\(\s*)?(?:"([^"]+)"|'([^']+)')\s*\[\s*-1\s*\.\.\s*-(\d+)\s*\](\s*\))?`)
	// psFormat is the format operator over literals: ("{1}{0}" -f "X","IE").
	psFormat     = regexp.MustCompile(`(?i)\(\s*(?:"([^"]*\{\d+\}[^"]*)"|'([^']*\{\d+\}[^']*)')\s*-f\s*((?:(?:"[^"]*"|'[^']*')\s*,\s*)*(?:"[^"]*"|'[^']*'))\s*\)`)
	psFormatArg  = regexp.MustCompile(`"([^"]*)"|'([^']*)'`)
	psFormatSlot = regexp.MustCompile(`\{(\d+)\}`)
	// psAliasDef is an alias the script defines for a cmdlet.
	psAliasDef = regexp.MustCompile(`(?i)(?:^|[;{\n]\s*|(?:^|\s)-c(?:ommand)?\s+["']?)(?:sal|Set-Alias|New-Alias|nal)\s+(?:-Name\s+)?["']?(\w+)["']?\s+(?:-Value\s+)?["']?((?:` + psVerbs + `)-[A-Za-z]+)["']?`)
)

// psGlobTargets are the cmdlets a wildcard passed to Get-Command is read
// as, the first that matches: those the rules judge, destructive first.
var psGlobTargets = []string{"Remove-Item", "Remove-ItemProperty", "Clear-Content", "Clear-Item", "Set-Content", "Set-ItemProperty",
	"New-ItemProperty", "Set-MpPreference", "Add-MpPreference", "Remove-MpPreference", "Invoke-Expression", "Invoke-WebRequest",
	"Invoke-RestMethod", "Invoke-Command", "Start-Process", "Stop-Computer", "Restart-Computer", "Clear-Disk", "Format-Volume",
	"Remove-Partition", "Initialize-Disk", "Clear-EventLog", "Remove-EventLog", "Stop-Service", "Set-Service", "Stop-Process",
	"Remove-LocalUser", "Disable-LocalUser", "Set-LocalUser", "Remove-ADUser", "Set-NetFirewallProfile", "Disable-NetFirewallRule",
	"Remove-NetFirewallRule", "Set-ExecutionPolicy", "Clear-RecycleBin", "Remove-WmiObject", "Remove-CimInstance", "Disable-ComputerRestore",
	"Remove-AppxPackage", "Uninstall-Package", "Remove-SmbShare", "Remove-VM", "Remove-Mailbox", "Set-Mailbox", "Disable-BitLocker",
	"Enable-BitLocker", "Remove-BitLockerKeyProtector", "Set-ItemPropertyValue", "Copy-Item", "Move-Item", "Get-Content", "Out-File"}

// psIndirect writes the names a PowerShell line computes as the names
// they resolve to.
func psIndirect(s string) string {
	if strings.Contains(s, "-join") || strings.Contains(s, "-JOIN") || strings.Contains(s, "-Join") {
		s = psJoinReversed.ReplaceAllStringFunc(s, func(m string) string {
			g := psJoinReversed.FindStringSubmatch(m)
			lit := g[2] + g[3]
			n, err := strconv.Atoi(g[4])
			if err != nil || n > len(lit) {
				n = len(lit)
			}
			b := []byte(lit[len(lit)-n:])
			for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
				b[i], b[j] = b[j], b[i]
			}
			out := `"` + string(b) + `"`
			if g[1] == "" && g[5] != "" {
				out += ")" // (-join "..."[-1..-n]): the parenthesis closes the call's group
			}
			return out
		})
	}
	if strings.Contains(s, "{0}") || strings.Contains(s, "{1}") {
		s = psFormat.ReplaceAllStringFunc(s, func(m string) string {
			g := psFormat.FindStringSubmatch(m)
			var args []string
			for _, a := range psFormatArg.FindAllStringSubmatch(g[3], -1) {
				args = append(args, a[1]+a[2])
			}
			out := psFormatSlot.ReplaceAllStringFunc(g[1]+g[2], func(slot string) string {
				if i, err := strconv.Atoi(slot[1 : len(slot)-1]); err == nil && i < len(args) {
					return args[i]
				}
				return slot
			})
			return `("` + out + `")`
		})
	}
	s = psCallGlob.ReplaceAllStringFunc(s, func(m string) string {
		g := psCallGlob.FindStringSubmatch(m)
		pattern := strings.ToLower(g[2])
		for _, name := range psGlobTargets {
			if ok, _ := path.Match(pattern, strings.ToLower(name)); ok {
				return "& " + name // . (gcm X) runs X as & does, in the caller's scope
			}
		}
		return m
	})
	for _, d := range psAliasDef.FindAllStringSubmatch(s, 4) {
		use := regexp.MustCompile(`(?i)((?:^|[;|{(&\n])\s*)` + regexp.QuoteMeta(d[1]) + `(\s|$)`)
		s = use.ReplaceAllString(s, "${1}"+d[2]+"${2}")
	}
	return s
}

// psPreview is a PowerShell statement that only previews or documents:
// -WhatIf outside quotes, or Get-Help.
var psPreview = regexp.MustCompile(`(?i)(^|\s)-WhatIf(:\$?true)?(\s|[);}]|$)|^\s*["']?\s*(Get-Help|help)\s`)

// psDropPreviews blanks, in a PowerShell line, the pipeline elements that
// only preview (Remove-Item X -WhatIf) or document (Get-Help X), so that
// the rules judge what runs. A preview is judged per element: a -WhatIf on
// one says nothing of the others (Set-MpPreference …; Get-Item x -WhatIf
// runs the first, and so does Set-MpPreference … | Remove-Item x -WhatIf).
// The separators stay, so a pipeline is still read as one. Comments go
// first, and a -WhatIf inside quotes does not count.
func psDropPreviews(s string) string {
	s = psDropText(s)
	low := strings.ToLower(s)
	if !strings.Contains(low, "-whatif") && !strings.Contains(low, "help") {
		return s
	}
	var b strings.Builder
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != ';' && s[i] != '\n' && s[i] != '|' && s[i] != '&' {
			continue // cmd's and PowerShell 7's & and && end an element too
		}
		elem := s[start:i]
		if !psPreview.MatchString(psUnquoted(psComment.ReplaceAllString(elem, ""))) {
			b.WriteString(elem)
		}
		if i < len(s) {
			b.WriteByte(s[i])
		}
		start = i + 1
	}
	return b.String()
}

// psColonParam is a PowerShell parameter given a switch's or a number's
// value after a colon (-Enabled:$false, -Enabled: False), which PowerShell
// reads as -Enabled $false. Other values keep the colon: a native
// program's -recoveryTarget:E: is its own form.
var psColonParam = regexp.MustCompile(`(?i)(^|[\s(;{])(-[A-Za-z][\w]*):\s*(\$\w+|\d+\b|true\b|false\b)`)

// psColonParams writes a PowerShell line's -Param:Value as -Param Value,
// the form the rules read. A -WhatIf:$true preview is dropped before.
func psColonParams(s string) string {
	if !strings.Contains(s, ":") {
		return s
	}
	return psColonParam.ReplaceAllString(s, "$1$2 $3")
}

// psComment is a PowerShell comment: a <# ... #> block, or # at a word's
// start to the line's end.
var psComment = regexp.MustCompile(`<#[\s\S]*?#>|(^|\s)#[^\n]*`)

// psUnquoted blanks what a statement quotes ("-WhatIf" as a value is not
// the switch).
func psUnquoted(s string) string {
	b := []byte(s)
	var q byte
	for i, c := range b {
		switch {
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q != 0 && c == q:
			q = 0
		case q != 0:
			b[i] = ' '
		}
	}
	return string(b)
}

// psTextArg is a quoted string PowerShell only searches for or shows:
// Select-String's pattern, what Write-Host prints (to the host, not the
// pipeline: iex gets nothing). Naming a command there runs nothing. Not
// Write-Output (the pipeline) nor a file's content (read back and run).
var psTextArg = regexp.MustCompile(`(?i)(\b(?:Select-String|sls)\b[^|;]*?-Pattern\s+|\b(?:Write-Host|Write-Verbose|Write-Warning)\s+)("[^"$` + "`" + `]*"|'[^']*')`)

// psDropText blanks the strings of psTextArg.
func psDropText(s string) string {
	if !strings.Contains(s, "-Pattern") && !strings.Contains(s, "Write-") {
		return s
	}
	return psTextArg.ReplaceAllString(s, `$1""`)
}
