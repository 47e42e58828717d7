package policy

import (
	"regexp"
	"slices"
	"strings"
)

// The Windows delete model: PowerShell and cmd lines are read statement by
// statement, the delete commands among them (Remove-Item and its aliases,
// rd, del, [IO.Directory]::Delete, Get-ChildItem piped into a delete) have
// their paths resolved (environment variables, $HOME, ~, Set-Location and
// cd /d), and each path is judged by the Windows path model (winProtected).
// The windows pack's regular expressions see the line as text; this reads
// which path each delete names, so a delete inside a cache of the home
// directory is not a delete of the home directory.

// winResourcePrefix marks a detail of ruleWinResource among winDeletes'.
const winResourcePrefix = "\x00resource "

// ruleWinResource is a PowerShell cmdlet of the destroying verb class.
const ruleWinResource = "windows:resource-delete"

// ruleWinTreeDelete is the windows pack's rule for recursive deletes of a
// user's, the system's or a drive's tree.
const ruleWinTreeDelete = "windows:tree-delete"

// winShells are the programs whose script the model reads.
var winShells = map[string]bool{"cmd": true, "cmd.exe": true, "powershell": true, "powershell.exe": true, "pwsh": true, "pwsh.exe": true}

// winAsWritten is a literal argument as a Windows shell reads it: sh reads
// C:\Users unquoted as C:Users, cmd and PowerShell keep the backslashes.
func winAsWritten(a arg) string {
	w := a.src
	if len(w) >= 2 && w[0] == '\'' && w[len(w)-1] == '\'' {
		w = w[1 : len(w)-1]
	} else if len(w) >= 2 && w[0] == '"' && w[len(w)-1] == '"' {
		w = unescapeDouble(w[1 : len(w)-1]) // \"C:\x\" is "C:\x" once sh has read it
	}
	if w == "" || !a.lit {
		return a.val
	}
	return w
}

// matchWindowsDeletes judges the recursive deletes of a PowerShell or cmd
// line (see winDeletes).
func matchWindowsDeletes(c *command, h *hits) {
	var words []string
	if !winShells[c.name] {
		words = append(words, c.name) // rd /s /q DIR, del /s /q DIR
	}
	var encoded []string
	for i, a := range c.args {
		if i+1 < len(c.args) && winShells[c.name] && slices.ContainsFunc([]string{"-encodedcommand", "-enc", "-ec", "-e", "-en"}, func(o string) bool { return strings.EqualFold(o, a.val) }) {
			if text, ok := decodeUTF16Base64(c.args[i+1].val); ok {
				encoded = append(encoded, text)
			}
		}
		w := winAsWritten(a)
		if strings.ContainsAny(w, " \t") && !winShells[c.name] {
			// a command line in one argument (wmic ... create "cmd /c rd ..."):
			// quoted, it is read as the script it is
			q := `"`
			if strings.Contains(w, q) {
				q = "'"
			}
			w = q + w + q
		}
		words = append(words, strings.ReplaceAll(w, homeMarker, "$HOME"))
	}
	encoded = append(encoded, winShellScripts(c)...)
	for _, script := range append([]string{strings.Join(words, " ")}, encoded...) {
		for _, d := range winScriptDeletes(psDropScratch(psUnfold(script)), 0) {
			if r, ok := strings.CutPrefix(d, winResourcePrefix); ok {
				h.add(ruleWinResource, r)
				continue
			}
			h.add(ruleWinTreeDelete, d)
		}
	}
}

// winShellScripts are the scripts a PowerShell or cmd command line runs
// that are not among its arguments: PowerShell's standard input (echo
// '...' | pwsh -Command -) or a file the job wrote (pwsh -File ./x.ps1,
// pwsh ./x.ps1, cmd /c x.bat), when their text is known.
func winShellScripts(c *command) []string {
	pwsh := c.name == "pwsh" || c.name == "pwsh.exe" || c.name == "powershell" || c.name == "powershell.exe"
	if !pwsh && c.name != "cmd" && c.name != "cmd.exe" {
		return nil
	}
	var out []string
	if pwsh && c.stdin.known && pwshReadsStdin(c.args) {
		out = append(out, c.stdin.text)
	}
	for _, f := range winScriptFiles(c) {
		if file, ok := c.files[fileKey(f)]; ok && file.s.known {
			out = append(out, file.s.text)
		}
	}
	return out
}

// winScriptFiles are the script files a Windows shell's command line runs:
// pwsh -File ./x.ps1 or pwsh ./x.ps1, cmd /c x.bat (the first word of the
// command line).
func winScriptFiles(c *command) []string {
	var out []string
	cmd := strings.TrimSuffix(c.name, ".exe") == "cmd"
	for i, a := range c.args {
		if !a.lit {
			continue
		}
		switch l := strings.ToLower(a.val); {
		case cmd:
			if (l == "/c" || l == "/k" || l == "/r") && i+1 < len(c.args) && c.args[i+1].lit {
				first, _, _ := strings.Cut(strings.TrimLeft(c.args[i+1].val, `"`), " ")
				return append(out, strings.TrimRight(first, `"`))
			}
		case (l == "-file" || l == "-f" || l == "/file") && i+1 < len(c.args) && c.args[i+1].lit:
			out = append(out, c.args[i+1].val)
		case strings.HasSuffix(l, ".ps1") && !strings.HasPrefix(l, "-"):
			out = append(out, a.val) // pwsh ./x.ps1: a script's path first runs it
		}
	}
	return out
}

// winQuoted are the quoted strings of a script.
var winQuoted = regexp.MustCompile(`"([^"]*)"|'([^']*)'`)

// winScriptDeletes is winDeletes of a script and of the scripts quoted in
// it: a command line handed to Start-Process, Invoke-Expression, wmic,
// schtasks or cmd /c in a string is a script too.
func winScriptDeletes(script string, depth int) []string {
	out := winDeletes(script)
	if depth >= 2 {
		return out
	}
	for _, m := range winQuoted.FindAllStringSubmatch(script, 16) {
		inner := m[1] + m[2]
		if len(inner) > 3 && strings.ContainsAny(inner, " ") {
			out = append(out, winScriptDeletes(inner, depth+1)...)
		}
	}
	return out
}

// winStmtSep splits a line into statements and pipeline stages; braces
// open and close script blocks.
var winStmtSep = regexp.MustCompile(`;|&&|\|\||\||&|\n|\{|\}`)

// winDeletes returns a detail for each recursive delete of a protected
// path in a PowerShell or cmd script.
func winDeletes(script string) []string {
	if !strings.Contains(script, "-") && !strings.Contains(script, "/") && !strings.Contains(script, "::") {
		return nil
	}
	script = psFolderPaths(script)
	script = psJoinPath.ReplaceAllString(script, `$1\$2`)
	script = psSplats(script)
	var out []string
	cwd := "" // the location Set-Location or cd /d moved to, when literal
	vars := psAssignedNames(script)
	stmts := winStmtSep.Split(script, -1)
	seps := winStmtSep.FindAllString(script, -1)
	listed := ""        // the path a Get-ChildItem stage lists, for the stages and blocks after it
	listedDeep := false // it lists recursively
	depth, listedAt := 0, 0
	listedSelf := false          // listed names the item itself, not a directory's items
	links := map[string]string{} // directory links the script made (mklink /J, New-Item -ItemType Junction), lower-cased, to their targets
	for i, s := range stmts {
		piped := i > 0 && seps[i-1] == "|"
		if i > 0 {
			switch seps[i-1] {
			case "{":
				depth++
			case "}":
				depth--
			case "|":
			default:
				if depth <= listedAt {
					listed = "" // the pipeline ended
				}
			}
		}
		toks := winTokens(s)
		if len(toks) == 0 {
			continue
		}
		verb := strings.ToLower(toks[0])
		// the shell's own options, before its script; a shell it starts
		// (cmd /c powershell -Command ...) is read through the same way
		for n := 0; n < 4 && (n == 0 && i == 0 || winShells[verb]); n++ {
			if winShells[verb] {
				toks = toks[1:]
			}
			toks = winSkipShellOptions(toks)
			if len(toks) == 0 {
				break
			}
			verb = strings.ToLower(toks[0])
		}
		if len(toks) == 0 {
			continue
		}
		if verb == "do" && len(toks) > 1 { // a loop's body (cmdLoops)
			toks = toks[1:]
			verb = strings.ToLower(toks[0])
		}
		args := toks[1:]
		if m := dirInfoDelete.FindStringSubmatch(s); m != nil {
			for _, p := range winResolve(m[1], vars) {
				if why := winProtected(winJoin(cwd, p), true); why != "" {
					out = append(out, ".Delete($true) "+why)
				}
			}
			continue
		}
		switch verb {
		case "mklink", "mklink.exe", "new-item", "ni":
			if link, target, ok := winLinkMade(verb, args, vars); ok {
				links[strings.ToLower(winJoin(cwd, link))] = winJoin(cwd, target)
			}
			continue
		case "set-location", "sl", "cd", "chdir", "push-location", "pushd":
			if p, ok := winPathArg(args, vars); ok {
				cwd = winJoin(cwd, p)
			} else {
				cwd = "?"
			}
			listed = ""
			continue
		case "get-childitem", "gci", "ls", "dir":
			p, ok := winPathArg(args, vars)
			if !ok {
				p = "."
			}
			listed, listedDeep, listedAt, listedSelf = winJoin(cwd, p), winHasFlag(args, "recurse", "r", "s"), depth, false
			continue
		case "get-item", "gi":
			// Get-Item X | Remove-Item -Recurse: X itself
			if p, ok := winPathArg(args, vars); ok {
				listed, listedDeep, listedAt, listedSelf = winJoin(cwd, p), false, depth, true
			}
			continue
		case "remove-item", "ri", "rm", "del", "erase", "rd", "rmdir", "rni":
			if winDryRun(args) {
				continue
			}
			recursive := winHasFlag(args, "recurse", "r", "s")
			paths := winPathArgs(args, vars)
			if len(paths) == 0 && listed != "" && (piped || winItemVar(args)) {
				// gci X | Remove-Item: the items X holds; Get-Item X | Remove-Item: X
				paths = []string{winJoin(listed, "*")}
				if listedSelf {
					paths = []string{listed}
				}
				recursive = recursive || listedDeep
			} else {
				for j, p := range paths {
					paths[j] = winThroughLink(links, winJoin(cwd, p), recursive && (verb == "remove-item" || verb == "ri"))
				}
			}
			for _, p := range paths {
				if why := winProtected(p, recursive); why != "" {
					out = append(out, toks[0]+" "+why)
				}
			}
		case "robocopy", "robocopy.exe":
			// robocopy SRC DST /MIR|/PURGE deletes what SRC lacks from DST
			if (winHasFlag(args, "mir", "purge") || slices.ContainsFunc(args, func(a string) bool {
				l := strings.ToLower(a)
				return l == "/mir" || l == "/purge"
			})) && !slices.ContainsFunc(args, func(a string) bool { return strings.EqualFold(a, "/l") }) {
				if ps := winPathArgs(args, vars); len(ps) >= 2 {
					dst := winJoin(cwd, ps[1])
					// a mirror onto a deploy directory of the home (~\site) is a deploy;
					// onto the home, its personal folders or a drive's, destruction
					if why := winProtected(dst, true); why != "" && (!strings.Contains(why, "home directory or a child") || winPersonal(dst)) &&
						!strings.Contains(why, "a data drive's") { // mirroring into D:\Backups\app is how a backup is written
						out = append(out, "robocopy /MIR "+why)
					}
				}
			}
		case "forfiles", "forfiles.exe":
			// forfiles /p DIR [/s] /c "cmd /c del @path": the command runs
			// on each file of DIR, @path naming it
			dir, cmd := ".", ""
			for j := 0; j+1 < len(args); j++ {
				switch strings.ToLower(args[j]) {
				case "/p":
					if ps := winResolve(args[j+1], vars); len(ps) > 0 {
						dir = ps[0]
					}
				case "/c":
					cmd = strings.Trim(args[j+1], `"'`)
				}
			}
			if cmd != "" {
				each := winJoin(winJoin(cwd, dir), "*")
				cmd = strings.NewReplacer("@path", each, "@file", each, "@fname", each, "@relpath", each).Replace(cmd)
				out = append(out, winDeletes(cmd)...)
			}
		case "move-item", "move", "mv", "mi":
			// moving a tree away removes it from where it was
			ps := winPathArgs(args, vars)
			for _, p := range ps[:max(0, len(ps)-1)] {
				if why := winProtected(winJoin(cwd, p), true); why != "" && !strings.Contains(why, "outside") {
					out = append(out, toks[0]+" "+why)
				}
			}
		case "foreach-object", "%", "foreach":
			if piped && listed != "" && strings.Contains(strings.ToLower(s+strings.Join(stmts[i+1:min(i+3, len(stmts))], " ")), "delete(") {
				if why := winProtected(winJoin(listed, "*"), listedDeep); why != "" {
					out = append(out, "$_.Delete() "+why)
				}
			}
		default:
			if len(toks) == 1 && i < len(seps) && seps[i] == "|" && (strings.ContainsAny(toks[0], `\$%~`) || strings.HasPrefix(toks[0], `"`) || strings.HasPrefix(toks[0], "'")) {
				// "$HOME" | Remove-Item -Recurse: the path piped on
				if ps := winResolve(toks[0], vars); len(ps) > 0 {
					listed, listedDeep, listedAt, listedSelf = winJoin(cwd, ps[0]), false, depth, true
				}
				continue
			}
			if why := psRemoveVerb(toks[0], args); why != "" {
				out = append(out, why)
			}
			if m := ioDirList.FindStringSubmatch(s); m != nil && i < len(seps) && seps[i] == "|" {
				// [IO.Directory]::EnumerateDirectories($HOME) | % { [IO.Directory]::Delete($_, $true) }
				if ps := winResolve(m[1], vars); len(ps) > 0 {
					listed, listedDeep, listedAt, listedSelf = winJoin(cwd, ps[0]), true, depth, false // each entry's whole tree
				}
				continue
			}
			if m := ioDirDelete.FindStringSubmatch(s); m != nil {
				for _, p := range winResolve(m[1], vars) {
					if why := winProtected(winJoin(cwd, p), true); why != "" {
						out = append(out, "[IO.Directory]::Delete "+why)
					}
				}
			}
		}
	}
	return out
}

// winLinkMade returns the directory link and its target a statement
// makes: mklink /D or /J LINK TARGET, New-Item -ItemType Junction or
// SymbolicLink -Path LINK -Target TARGET.
func winLinkMade(verb string, args []string, vars psVars) (link, target string, ok bool) {
	var ops []string
	if strings.HasPrefix(verb, "mklink") {
		dir := false
		for _, a := range args {
			switch strings.ToLower(a) {
			case "/d", "/j":
				dir = true
			case "/h":
			default:
				ops = append(ops, a)
			}
		}
		if !dir || len(ops) != 2 {
			return "", "", false
		}
	} else {
		kind, path, tgt := "", "", ""
		for j := 0; j+1 < len(args); j++ {
			switch strings.ToLower(args[j]) {
			case "-itemtype", "-type":
				kind = strings.ToLower(strings.Trim(args[j+1], `"'`))
			case "-path", "-name":
				path = args[j+1]
			case "-target", "-value":
				tgt = args[j+1]
			}
		}
		if kind != "junction" && kind != "symboliclink" || path == "" || tgt == "" {
			return "", "", false
		}
		ops = []string{path, tgt}
	}
	l, t := winResolve(ops[0], vars), winResolve(ops[1], vars)
	if len(l) != 1 || len(t) != 1 {
		return "", "", false
	}
	return l[0], t[0], true
}

// winThroughLink returns the path p deletes once the links the script
// made are followed: what is under a link is under its target, and
// Remove-Item -Recurse of the link itself empties the target (as
// Windows PowerShell does).
func winThroughLink(links map[string]string, p string, self bool) string {
	lp, best := strings.ToLower(p), ""
	for link := range links {
		if rest, ok := strings.CutPrefix(lp, link); ok && (strings.HasPrefix(rest, `\`) || rest == "" && self) && len(link) > len(best) {
			best = link // the innermost link, whatever the map's order
		}
	}
	if best == "" {
		return p
	}
	return links[best] + p[len(best):]
}

// psKeepNouns are the nouns of Remove-, Uninstall- and Unregister- cmdlets
// that act on the session, not on data or a service: Remove-Variable,
// Remove-Module, Remove-Job. Remove-Item has its own model.
var psKeepNouns = []string{"item", "itemproperty", "variable", "module", "job", "pssession", "psdrive", "typedata", "event",
	"psbreakpoint", "cimsession", "alias", "psreadlinekeyhandler", "runspace", "smbmapping", "printjob", "psrepository", "dnsclientcache",
	"mppreference"} // Remove-MpPreference -ExclusionPath takes an exclusion back: protection returns

// psRemoveVerb returns a detail when cmd is a cmdlet in the destroying
// verb class (Remove-Website, Uninstall-WindowsFeature, Unregister-
// ScheduledTask, Clear-EventLog): what it names goes, whatever the module.
func psRemoveVerb(cmd string, args []string) string {
	verb, noun, ok := strings.Cut(cmd, "-")
	if !ok || noun == "" || winDryRun(args) {
		return ""
	}
	switch strings.ToLower(verb) {
	case "remove", "uninstall", "unregister", "clear", "reset", "dismount", "disable":
	default:
		return ""
	}
	n := strings.ToLower(noun)
	if strings.EqualFold(verb, "dismount") && (n == "diskimage" || n == "vhd" || n == "windowsimage") ||
		n == "eventlog" && slices.ContainsFunc(args, func(a string) bool { return strings.EqualFold(a, "-Source") }) {
		return "" // an image unmounted, its file kept; an event source's registration, its log kept
	}
	if slices.Contains(psKeepNouns, n) || strings.EqualFold(verb, "clear") && (n == "host" || n == "content" || n == "variable" || strings.HasSuffix(n, "cache") || n == "history") ||
		strings.EqualFold(verb, "disable") && !strings.Contains(n, "firewall") && !strings.Contains(n, "account") && !strings.Contains(n, "user") && !strings.Contains(n, "scheduledtask") && !strings.Contains(n, "bitlocker") {
		return ""
	}
	return winResourcePrefix + cmd + ": a cmdlet that removes, clears or switches off what it names"
}

// winDryRun reports -WhatIf (or -WhatIf:$true): PowerShell only says what
// it would delete. A -WhatIf after the start of a comment (# or <#) is
// the comment's.
func winDryRun(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "#") || strings.HasPrefix(a, "<#") {
			return false
		}
		l := strings.ToLower(a)
		if l == "-whatif" || l == "-whatif:$true" || l == "-whatif:true" || l == "-wi" {
			return true
		}
	}
	return false
}

// winItemVar reports a delete of the pipeline's current item ($_,
// $_.FullName, $PSItem) inside a ForEach-Object block.
func winItemVar(args []string) bool {
	for _, a := range args {
		l := strings.ToLower(strings.Trim(a, `"'`))
		if l == "$_" || l == "$psitem" || strings.HasPrefix(l, "$_.") || strings.HasPrefix(l, "$psitem.") {
			return true
		}
	}
	return false
}

// cmdForSet is cmd's loop over a set of words or paths: for [/d|/r] %d in
// (C:\Users\*) do rd /s /q %d runs its body for each. for /r ROOT walks
// the tree under ROOT (the current directory without one), the set's
// patterns matched in each of its directories.
var cmdForSet = regexp.MustCompile(`(?i)\bfor\s+(?:/d\s+)?(?:/r\s+(?:("[^"]*"|[^\s%"/(][^\s(]*|%\w+%[^\s(]*)\s+)?)?(%%?[A-Za-z])\s+in\s+\(([^()']*)\)\s+do\s+([^&|\n]*)`)

// cmdForRecursive reports a for /r loop.
var cmdForRecursive = regexp.MustCompile(`(?i)^for\s+(/d\s+)?/r\b`)

// psFolderPath is .NET's name of a special folder:
// [Environment]::GetFolderPath("MyDocuments") or
// [Environment]::GetFolderPath([Environment+SpecialFolder]::Desktop).
var psFolderPath = regexp.MustCompile(`(?i)(\(\s*)?\[(?:System\.)?Environment\]::GetFolderPath\(\s*(?:["']([A-Za-z][A-Za-z0-9]*)["']|\[(?:System\.)?Environment\+SpecialFolder\]::([A-Za-z][A-Za-z0-9]*)|'([A-Za-z][A-Za-z0-9]*)')\s*(?:,\s*[^)]*)?\)(?:\s*\+\s*["']([^"'$]*)["'])?(\s*\))?`)

// specialFolders are the paths of .NET's special folders, by name.
var specialFolders = map[string]string{
	"userprofile": `$env:USERPROFILE`, "mydocuments": `$env:USERPROFILE\Documents`, "personal": `$env:USERPROFILE\Documents`,
	"desktop": `$env:USERPROFILE\Desktop`, "desktopdirectory": `$env:USERPROFILE\Desktop`, "mypictures": `$env:USERPROFILE\Pictures`,
	"mymusic": `$env:USERPROFILE\Music`, "myvideos": `$env:USERPROFILE\Videos`, "favorites": `$env:USERPROFILE\Favorites`,
	"applicationdata": `$env:APPDATA`, "localapplicationdata": `$env:LOCALAPPDATA`, "windows": `C:\Windows`, "system": `C:\Windows\System32`,
	"systemx86": `C:\Windows\SysWOW64`, "programfiles": `C:\Program Files`, "programfilesx86": `C:\Program Files (x86)`,
	"commonapplicationdata": `C:\ProgramData`, "startup": `$env:APPDATA\Microsoft\Windows\Start Menu\Programs\Startup`,
}

// psFolderPaths writes the special folders a script names by .NET's
// names as their paths.
func psFolderPaths(s string) string {
	if !strings.Contains(strings.ToLower(s), "getfolderpath") {
		return s
	}
	var b strings.Builder
	last := 0
	for _, ix := range psFolderPath.FindAllStringSubmatchIndex(s, -1) {
		g := func(i int) string {
			if ix[2*i] < 0 {
				return ""
			}
			return s[ix[2*i]:ix[2*i+1]]
		}
		p, ok := specialFolders[strings.ToLower(g(2)+g(3)+g(4))]
		if !ok {
			continue
		}
		p += g(5) // GetFolderPath("Desktop") + "\x": the folder's child
		if strings.Contains(p, " ") || g(5) == "" && psAssignedHere.MatchString(s[:ix[0]]) {
			p = `"` + p + `"` // $p = [Environment]::GetFolderPath(X): a string, as a literal assigned
		}
		if g(1) == "" || g(6) == "" {
			p = g(1) + p + g(6)
		} // else ([Environment]::GetFolderPath(X)): the path itself
		b.WriteString(s[last:ix[0]])
		b.WriteString(p)
		last = ix[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// psAssignedHere matches script text that ends with an assignment's "=".
var psAssignedHere = regexp.MustCompile(`\$\w+\s*=\s*$`)

// psBracedEnv writes ${env:NAME} as $env:NAME, and ${env:ProgramFiles(x86)}
// (a name that needs the braces) as its value.
func psBracedEnv(s string) string {
	if i := strings.Index(strings.ToLower(s), "${env:programfiles(x86)}"); i >= 0 {
		s = s[:i] + `C:\Program Files (x86)` + psBracedEnv(s[i+len("${env:programfiles(x86)}"):])
	}
	return psBracedName.ReplaceAllString(s, "$$env:$1")
}

// psBracedName is ${env:NAME} with a plain name.
var psBracedName = regexp.MustCompile(`(?i)\$\{env:([A-Za-z_]\w*)\}`)

// psJoinPath is (Join-Path A B) with literal or variable parts.
var psJoinPath = regexp.MustCompile(`(?i)\(\s*Join-Path\s+(?:-Path\s+)?["']?([^\s"'()]+)["']?\s+(?:-ChildPath\s+)?["']?([^\s"'()]+)["']?\s*\)`)

// ioDirDelete is [System.IO.Directory]::Delete(PATH, $true);
// dirInfoDelete the same through an object, (New-Object
// IO.DirectoryInfo PATH).Delete($true) or (Get-Item PATH).Delete($true);
// ioDirList lists a directory's entries for a pipeline:
// [IO.Directory]::EnumerateDirectories(PATH).
var (
	ioDirDelete   = regexp.MustCompile(`(?i)\[(?:System\.)?IO\.Directory\]::Delete\(\s*(["']?[^,)]+?["']?)\s*,\s*\$true\s*\)`)
	dirInfoDelete = regexp.MustCompile(`(?i)\(\s*(?:New-Object\s+(?:-TypeName\s+)?(?:System\.)?IO\.DirectoryInfo\s+(?:-ArgumentList\s+)?|(?:Get-Item|gi)\s+(?:-Path\s+|-LiteralPath\s+)?)(["'][^"']+["']|[^\s"'()]+)\s*\)\s*\.Delete\(\s*\$true\s*\)`)
	ioDirList     = regexp.MustCompile(`(?i)\[(?:System\.)?IO\.Directory\]::(?:Enumerate|Get)(?:Directories|FileSystemEntries)\(\s*(["']?[^,)]+?["']?)\s*\)\s*$`)
)

// winTokens splits a statement into words, keeping quoted strings whole
// (their quotes stay, for winResolve to read).
func winTokens(s string) []string {
	var out []string
	var b strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quote != 0:
			b.WriteByte(ch)
			if ch == quote {
				quote = 0
			}
		case ch == '"' || ch == '\'':
			quote = ch
			b.WriteByte(ch)
		case ch == ' ' || ch == '\t' || ch == '(' || ch == ')':
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteByte(ch)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// winSkipShellOptions drops the options of powershell, pwsh and cmd before
// the script (-NoProfile, -ExecutionPolicy Bypass, -Command, /c, /d /s).
func winSkipShellOptions(toks []string) []string {
	for len(toks) > 0 {
		t := strings.ToLower(toks[0])
		switch {
		case t == "-executionpolicy" || t == "-ep" || t == "-ex" || t == "-windowstyle" || t == "-w" || t == "-file" || t == "-f":
			toks = toks[min(2, len(toks)):]
		case strings.HasPrefix(t, "-") || strings.HasPrefix(t, "/"):
			toks = toks[1:]
		default:
			return toks
		}
	}
	return toks
}

// winHasFlag reports a switch given by any prefix PowerShell accepts of
// one of long (-Rec, -Recurse), or as one of the short cmd forms (/s).
func winHasFlag(args []string, names ...string) bool {
	for _, a := range args {
		l := strings.ToLower(a)
		if strings.HasPrefix(l, "/") && !strings.Contains(l, `\`) && !strings.Contains(l, ":") {
			for _, sw := range strings.Split(l[1:], "/") { // /s/q: two switches
				for _, n := range names {
					if sw == n {
						return true
					}
				}
			}
			continue
		}
		if !strings.HasPrefix(l, "-") || len(l) < 2 {
			continue
		}
		l = strings.TrimSuffix(strings.TrimSuffix(l[1:], ":$true"), ":true")
		for _, n := range names {
			if l == n || len(n) > 2 && len(l) >= 3 && strings.HasPrefix(n, l) {
				return true
			}
		}
	}
	return false
}

// winValueParams are the Remove-Item and Get-ChildItem parameters that take
// a value other than the path.
var winValueParams = []string{"-filter", "-include", "-exclude", "-depth", "-erroraction", "-ea", "-stream", "-credential",
	"-attributes", "-warningaction", "-informationaction", "-outvariable", "-errorvariable", "-pipelinevariable"}

// winPathArgs returns the paths a delete or listing names: -Path or
// -LiteralPath values and positional words, resolved (winResolve). A path
// the model cannot resolve is left out.
func winPathArgs(args []string, vars psVars) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		l := strings.ToLower(a)
		if k, v, ok := strings.Cut(a, ":"); ok && strings.HasPrefix(k, "-") && winPathParam(strings.ToLower(k)) {
			for _, p := range strings.Split(v, ",") { // -Path:$HOME
				out = append(out, winResolve(p, vars)...)
			}
			continue
		}
		switch {
		case winPathParam(l):
			if i+1 < len(args) {
				i++
				for _, p := range strings.Split(args[i], ",") {
					out = append(out, winResolve(p, vars)...)
				}
			}
		case strings.HasPrefix(l, "-"):
			for _, v := range winValueParams {
				if l == v {
					i++
				}
			}
		case strings.HasPrefix(l, "/") && len(l) <= 3:
			// cmd switches: /s /q /f
		default:
			for _, p := range strings.Split(a, ",") {
				out = append(out, winResolve(p, vars)...)
			}
		}
	}
	return out
}

// winPathParam reports -Path, -LiteralPath or an abbreviation of either.
func winPathParam(l string) bool {
	if l == "-lp" || l == "-pspath" {
		return true
	}
	for _, full := range []string{"-path", "-literalpath"} {
		if len(l) >= 3 && strings.HasPrefix(full, l) {
			return true
		}
	}
	return false
}

// winPathArg is the first path of args.
func winPathArg(args []string, vars psVars) (string, bool) {
	ps := winPathArgs(args, vars)
	if len(ps) == 0 {
		return "", false
	}
	return ps[0], true
}

// winRoots are the variables a path may start with, as the model names
// their directories ("<HOME>" is the user's home directory).
var winRoots = map[string]string{
	"userprofile": "<HOME>", "home": "<HOME>", "homepath": "<HOME>", "using:home": "<HOME>",
	"appdata": `<HOME>\AppData\Roaming`, "localappdata": `<HOME>\AppData\Local`,
	"temp": "<TEMP>", "tmp": "<TEMP>",
	"systemroot": `C:\Windows`, "windir": `C:\Windows`, "systemdrive": `C:`,
	"programfiles": `C:\Program Files`, "programfiles(x86)": `C:\Program Files (x86)`, "programdata": `C:\ProgramData`,
	"allusersprofile": `C:\ProgramData`, "public": `C:\Users\Public`, "onedrive": `<HOME>\OneDrive`,
	"psscriptroot": "", // empty under -Command: "$PSScriptRoot\*" is the current drive's root
	"pwd":          ".",
	"cd":           ".", // cmd's %CD%, the current directory
}

// winVar matches $env:NAME, $NAME, ${env:NAME}, %NAME% at a path's start.
var winVar = regexp.MustCompile(`(?i)^(?:\$\{?(?:env:)?([A-Za-z_][\w:()]*)\}?|%([A-Za-z_][\w()]*)%)`)

// winResolve returns a path word with its quotes removed and its leading
// variable replaced (winRoots); a variable the script assigns, or one it
// cannot name, makes the path unknown (false). A variable never assigned
// is empty, as PowerShell reads it.
func winResolve(p string, vars psVars) []string {
	return winResolveDepth(p, vars, 0)
}

func winResolveDepth(p string, vars psVars, depth int) []string {
	p = strings.TrimSpace(p)
	p = strings.Trim(p, `"'`)
	if p == "" || strings.HasPrefix(p, "@") {
		return nil
	}
	if m := winVar.FindStringSubmatch(p); m != nil && depth < 2 {
		if vals, ok := vars.lits[strings.ToLower(m[1]+m[2])]; ok {
			var out []string // $p = 'C:\data'; ... $p = 'dist': either
			for _, v := range vals {
				out = append(out, winResolveDepth(v+p[len(m[0]):], vars, depth+1)...)
			}
			return out
		}
	}
	p = strings.TrimPrefix(p, `\\?\`)            // \\?\C:\...: a long path
	p = winSubst.ReplaceAllString(p, winUnknown) // "$(dir /b)": a name computed at run time
	if p == "~" || strings.HasPrefix(p, `~\`) || strings.HasPrefix(p, "~/") {
		p = "<HOME>" + p[1:]
	}
	if m := winVar.FindStringSubmatch(p); m != nil {
		name := strings.ToLower(m[1] + m[2])
		root, known := winRoots[strings.TrimPrefix(name, "env:")]
		switch {
		case known:
		case vars.assigned[name] && len(m[0]) == len(p):
			return []string{winUnknown} // $root: computed, nothing fixed after it
		case vars.assigned[name] || strings.ContainsAny(name, "():") && !strings.HasPrefix(name, "env:"):
			return nil
		case strings.HasPrefix(m[0], "$") && !strings.HasPrefix(strings.ToLower(m[0]), "$env:") && !strings.HasPrefix(strings.ToLower(m[0]), "${env:") && name == "_":
			return nil
		default:
			root = "" // never assigned: empty
		}
		p = root + p[len(m[0]):]
	}
	if strings.ContainsAny(p, "$%") {
		// a component named at run time ("$HOME\$d"): any name there
		p = winVarPart.ReplaceAllString(p, winUnknown)
		if strings.ContainsAny(p, "$%") {
			return nil
		}
	}
	return []string{strings.ReplaceAll(p, "/", `\`)}
}

// winSubst is a command's output in a path: "$(...)", as cmdLoops writes
// a for /f variable.
var winSubst = regexp.MustCompile(`"?\$\([^()]*\)"?`)

// psSplat is a hashtable of parameters: $p = @{ Path = X; Recurse = $true }.
var psSplat = regexp.MustCompile(`(?i)\$([A-Za-z_]\w*)\s*=\s*@\{([^{}]*)\}`)

// psSplats writes each @name splatted into a call as the parameters its
// hashtable gives: Remove-Item @p is Remove-Item -Path X -Recurse.
func psSplats(s string) string {
	for _, m := range psSplat.FindAllStringSubmatch(s, 8) {
		var params []string
		for _, kv := range strings.FieldsFunc(m[2], func(r rune) bool { return r == ';' || r == '\n' }) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			v = strings.TrimSuffix(strings.TrimPrefix(v, "("), ")")
			switch strings.ToLower(v) {
			case "$true":
				params = append(params, "-"+k)
			case "$false":
			default:
				params = append(params, "-"+k, v)
			}
		}
		s = strings.ReplaceAll(s, "@"+m[1], strings.Join(params, " "))
	}
	return s
}

// winUnknown stands for a path, or a component, computed at run time.
const winUnknown = "<?>"

// winVarPart is a whole path component that is a variable.
var winVarPart = regexp.MustCompile(`\$\{?(?:env:)?[A-Za-z_]\w*\}?|%[A-Za-z_]\w*%`)

// psVars are the variables a PowerShell script assigns ($x = ...,
// foreach ($x in ...)), lower-cased, with the literal values they may
// hold when every assignment is a literal: a use may see any of them.
type psVars struct {
	assigned map[string]bool
	lits     map[string][]string
}

func psAssignedNames(s string) psVars {
	v := psVars{assigned: map[string]bool{}, lits: map[string][]string{}}
	computed := map[string]bool{}
	for _, m := range psAssignAny.FindAllStringSubmatch(s, -1) {
		name := strings.ToLower(m[1] + m[4])
		v.assigned[name] = true
		if m[4] != "" || strings.Count(m[0], `"`) < 2 && strings.Count(m[0], "'") < 2 {
			computed[name] = true // foreach, or a value built at run time
			continue
		}
		v.lits[name] = append(v.lits[name], m[2]+m[3])
	}
	// lists of literals: $dirs = "bin", "obj"; foreach ($d in $dirs) or
	// foreach ($d in "dist", "out")
	total := map[string]int{}
	for _, m := range psAssignAny.FindAllStringSubmatch(s, -1) {
		total[strings.ToLower(m[1]+m[4])]++
	}
	lists := map[string][]string{}
	for _, m := range psListAssign.FindAllStringSubmatch(s, -1) {
		name := strings.ToLower(m[1])
		lists[name] = append(lists[name], psListItems(m[2])...)
		if total[name] == 1 {
			delete(computed, name)
			v.lits[name] = lists[name]
		}
	}
	for _, m := range psForeachList.FindAllStringSubmatch(s, -1) {
		name := strings.ToLower(m[1])
		items := psListItems(m[2])
		if m[3] != "" {
			items = v.lits[strings.ToLower(m[3])]
		}
		if total[name] == 1 && len(items) > 0 {
			delete(computed, name)
			v.lits[name] = items
		}
	}
	// $p = Join-Path $PWD "coverage": the two parts joined; a child
	// computed at run time, (... + [guid]::NewGuid()), is any name there
	for _, m := range psJoinAssign.FindAllStringSubmatch(s, -1) {
		name := strings.ToLower(m[1])
		if total[name] != 1 {
			continue
		}
		child := strings.Trim(m[3], `"'`)
		if strings.HasPrefix(m[3], "(") {
			child = winUnknown
		}
		delete(computed, name)
		v.lits[name] = []string{strings.Trim(m[2], `"'`) + `\` + child}
	}
	for name := range computed {
		delete(v.lits, name)
	}
	return v
}

// psJoinAssign is a variable given a Join-Path of a location (a variable
// or a literal) and a child (a literal, or an expression in parentheses).
var psJoinAssign = regexp.MustCompile(`(?i)\$([A-Za-z_]\w*)\s*=\s*Join-Path\s+(?:-Path\s+)?("[^"()]*"|'[^']*'|\$[\w:]+)\s+(?:-ChildPath\s+)?("[^"$]*"|'[^']*'|[\w.-]+|\([^()]*(?:\([^()]*\))?[^()]*\))\s*(?:;|$|\n|\})`)

// psListAssign is a variable given a list of literals; psForeachList a
// foreach over one, or over such a variable.
var (
	psListAssign  = regexp.MustCompile(`\$([A-Za-z_]\w*)\s*=\s*@?\(?\s*((?:"[^"$]*"|'[^']*')(?:\s*,\s*(?:"[^"$]*"|'[^']*'))+)\s*\)?\s*(?:;|$|\n|\})`)
	psForeachList = regexp.MustCompile(`(?i)foreach\s*\(\s*\$([A-Za-z_]\w*)\s+in\s+(?:@?\(?\s*((?:"[^"$]*"|'[^']*')(?:\s*,\s*(?:"[^"$]*"|'[^']*'))*)\s*\)?|\$([A-Za-z_]\w*))\s*\)`)
)

// psListItems are the literals of "a", 'b', "c".
func psListItems(list string) []string {
	var out []string
	for _, m := range winQuoted.FindAllStringSubmatch(list, -1) {
		out = append(out, m[1]+m[2])
	}
	return out
}

var psAssignAny = regexp.MustCompile(`\$([A-Za-z_]\w*)\s*=(?:\s*(?:"([^"` + "`" + `\n]*)"|'([^'\n]*)')\s*(?:;|$|\n|\})|[^=])|(?i)foreach\s*\(\s*\$([A-Za-z_]\w*)\s+in\b`)

// winJoin resolves p against the location cwd ("" not known, "?" unknown).
func winJoin(cwd, p string) string {
	switch {
	case p == "":
		return ""
	case strings.HasPrefix(p, `\`) && !strings.HasPrefix(p, `\\`) && (cwd == "" || cwd == "?"):
		return "C:" + p // \x: the current drive's root (which drive does not matter here)
	case winAbs(p) || cwd == "":
		return p
	case cwd == "?":
		return "?"
	}
	if strings.HasPrefix(p, `\`) && len(cwd) >= 2 && cwd[1] == ':' {
		return cwd[:2] + p // \x: the root of the location's drive
	}
	return strings.TrimSuffix(cwd, `\`) + `\` + p
}

// winAbs reports a path that does not depend on the location: X:\..., a
// home or temporary directory, a registry or UNC path.
func winAbs(p string) bool {
	return len(p) >= 2 && p[1] == ':' || strings.HasPrefix(p, "<") || strings.HasPrefix(p, `\\`)
}

// winProtected says why deleting path p (recursively, or its contents) is
// destruction, or "" when it is not: a drive's root or a first-level
// directory, the system's directories, the users' directories, a home
// directory or a child of it, an application's data in AppData. A cache
// or temporary directory anywhere is not (what is in it is rebuilt).
func winProtected(p string, recursive bool) string {
	if p == "" || p == "?" {
		return ""
	}
	if !recursive && !strings.HasSuffix(p, "*") && !strings.Contains(p, `\**\`) { // for /r ROOT: the tree under ROOT
		return ""
	}
	clean := winHomeClean(p)
	if p == winUnknown {
		return "on " + quoteDetail(p) + ", a path computed at run time that it cannot resolve"
	}
	parts := strings.Split(clean, `\`)
	if last := parts[len(parts)-1]; len(parts) > 1 && strings.ContainsAny(last, "*?") {
		parts = parts[:len(parts)-1] // del /s \\fs01\Finance\Q3\*.xlsx: the tree the pattern searches
	}
	for _, part := range parts {
		l := strings.ToLower(part)
		if strings.Contains(l, "cache") || l == "temp" || l == "tmp" || l == "<temp>" || l == "packages" && strings.Contains(strings.ToLower(clean), `.nuget\packages`) {
			return ""
		}
	}
	show := quoteDetail(strings.ReplaceAll(p, "<HOME>", "$HOME"))
	if strings.EqualFold(parts[len(parts)-1], ".git") && len(parts) > 1 && !slices.ContainsFunc(parts, func(s string) bool {
		return strings.EqualFold(s, "vendor") || strings.EqualFold(s, "third_party") || strings.EqualFold(s, "node_modules")
	}) {
		return "on " + show + ", a repository's history" // a vendored clone's .git is that clone's
	}
	if strings.EqualFold(parts[0], "IIS:") && len(parts) >= 2 {
		return "on " + show + ", IIS's sites, applications or pools"
	}
	for i, part := range parts {
		if strings.EqualFold(part, "User Data") && i > 0 || strings.EqualFold(part, "Profiles") && i > 0 && (strings.EqualFold(parts[i-1], "Firefox") || strings.EqualFold(parts[i-1], "Thunderbird")) {
			return "on " + show + ", a browser's profiles"
		}
	}
	if len(parts) >= 3 && parts[0] == "<HOME>" && strings.EqualFold(parts[1], "source") && strings.EqualFold(parts[2], "repos") && len(parts) <= 4 {
		return "on " + show + ", the user's repositories"
	}
	switch {
	case parts[0] == "<HOME>":
		switch {
		case len(parts) <= 2:
			return "on " + show + ", the home directory or a child of it"
		case strings.EqualFold(parts[1], "AppData") && len(parts) <= 4:
			return "on " + show + ", an application's data"
		case winVirtualDisks(parts):
			return "on " + show + ", the virtual disk of a WSL distribution or of Docker Desktop"
		}
	case len(parts[0]) == 2 && parts[0][1] == ':':
		switch {
		case len(parts) <= 2:
			return "on " + show + ", a drive's root or a directory at its top"
		case strings.EqualFold(parts[1], "Users") && len(parts) <= 4:
			return "on " + show + ", a user's home directory or a child of it"
		case strings.EqualFold(parts[1], "Windows") || strings.HasPrefix(strings.ToLower(parts[1]), "program files") && len(parts) <= 3 ||
			strings.EqualFold(parts[1], "ProgramData") && (len(parts) <= 3 || len(parts) == 4 && strings.EqualFold(parts[2], "Microsoft")):
			return "on " + show + ", a system directory"
		}
	case strings.HasPrefix(clean, `..`):
		return "on " + show + ", outside the working directory"
	case len(parts) >= 4 && parts[0] == "" && parts[1] == "" && parts[2] != "":
		// \\server\share, \\server\share\dir: a file share's data for everyone
		// who maps it
		if len(parts) <= 5 {
			return "on " + show + ", a network share or a directory at its top"
		}
	}
	if len(parts) == 3 && len(parts[0]) == 2 && parts[0][1] == ':' && !strings.EqualFold(parts[0], "C:") && slices.ContainsFunc(dataDirs, func(d string) bool { return strings.EqualFold(d, parts[1]) }) {
		return "on " + show + ", a directory of a data drive's shares, data or backups"
	}
	return ""
}

// dataDirs are the top-level directories of a data drive that hold what
// people and services keep (D:\Shares\Finance, E:\SQLBackups\Billing).
var dataDirs = []string{"Shares", "Share", "Data", "Backups", "Backup", "Databases", "SQLData", "SQLBackups", "Home", "Homes",
	"Profiles", "Departments", "Users", "Archive", "Archives", "Exchange", "VMs", "Hyper-V", "Projects", "Repos", "Repositories",
	"Finance", "HR", "Legal", "inetpub", "wwwroot", "Sites", "Websites", "MSSQL", "SQL", "Exports"}

// winVirtualDisks reports, in a home's parts, a WSL distribution's state
// (AppData\Local\Packages\<distribution>\LocalState, its ext4.vhdx) or
// Docker Desktop's disks (AppData\Local\Docker\wsl): every file, image
// and volume inside them.
func winVirtualDisks(parts []string) bool {
	if len(parts) < 5 || !strings.EqualFold(parts[1], "AppData") || !strings.EqualFold(parts[2], "Local") {
		return false
	}
	switch {
	case strings.EqualFold(parts[3], "Packages") && len(parts) <= 6:
		return len(parts) == 5 || strings.EqualFold(parts[5], "LocalState")
	case strings.EqualFold(parts[3], "Docker") && len(parts) <= 6:
		return strings.EqualFold(parts[4], "wsl")
	}
	return false
}

// winPersonal reports the home directory itself or one of its personal
// folders (Documents, Desktop, AppData, ...).
func winPersonal(p string) bool {
	parts := strings.Split(winHomeClean(p), `\`)
	last := parts[len(parts)-1]
	return parts[0] == "<HOME>" && (len(parts) == 1 || len(parts) == 2 && slices.ContainsFunc([]string{"Documents", "Desktop", "Downloads",
		"Pictures", "Music", "Videos", "AppData", "OneDrive", "Favorites", "Contacts", "source"}, func(n string) bool { return strings.EqualFold(n, last) }))
}

// winHomeClean is winClean with a user's home under C:\Users\NAME written
// <HOME>: C:\Users\dev\AppData is that home's AppData. The shared profiles
// (Public, Default) are not a home.
func winHomeClean(p string) string {
	clean := winClean(p)
	parts := strings.Split(clean, `\`)
	if len(parts) >= 3 && len(parts[0]) == 2 && parts[0][1] == ':' && strings.EqualFold(parts[1], "Users") &&
		!strings.EqualFold(parts[2], "Public") && !strings.EqualFold(parts[2], "Default") && parts[2] != winUnknown {
		return strings.Join(append([]string{"<HOME>"}, parts[3:]...), `\`)
	}
	return clean
}

// winClean collapses . and .. and a trailing \* in a Windows path; the
// result has no trailing separator.
func winClean(p string) string {
	p = strings.ReplaceAll(p, "/", `\`)
	var out []string
	for _, part := range strings.Split(p, `\`) {
		switch part {
		case "", ".", "*", "*.*":
		case "..":
			if len(out) > 1 || len(out) == 1 && (len(out[0]) != 2 || out[0][1] != ':') && out[0] != "<HOME>" && out[0] != ".." {
				out = out[:len(out)-1]
			} else if len(out) == 0 || out[0] == ".." {
				out = append(out, "..")
			}
		default:
			out = append(out, part)
		}
	}
	if len(out) == 0 {
		return "."
	}
	if strings.HasPrefix(p, `\\`) && len(out) >= 2 {
		return `\\` + strings.Join(out, `\`) // \\server\share\...: a network share
	}
	return strings.Join(out, `\`)
}

// matchRegImport: reg import FILE and regedit /s FILE load a registry file
// into the machine's configuration; a file the script downloaded is code
// from the network deciding what the system runs and trusts.
func matchRegImport(c *command, h *hits) {
	importing := c.name == "regedit" || c.name == "regedit.exe"
	for _, a := range c.args {
		if !a.lit {
			continue
		}
		if strings.EqualFold(a.val, "import") {
			importing = true
			continue
		}
		if f, ok := c.files[fileKey(a.val)]; importing && ok && f.s.taint&taintDownload != 0 {
			h.add(rulePipeToShell, c.name+" loads "+quoteDetail(a.val)+", a registry file downloaded from the network")
			return
		}
	}
}
