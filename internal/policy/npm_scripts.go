package policy

import (
	"regexp"
	"strings"
)

// npmScriptSet matches a package.json script set in the command's own text
// before it is run: jq '.scripts.x = "CMD"', node -e "p.scripts.x='CMD'",
// python's p["scripts"]["x"] = "CMD", or a "scripts": {"x": "CMD"} written
// out by a heredoc or echo. Group 1 is the script's name, 3 its command.
var npmScriptSet = regexp.MustCompile(`(?:\.scripts\.|\[\s*["']scripts["']\s*\]\s*\[\s*["'])([\w:.-]+)["']?\s*\]?\s*=\s*(\\?["'])(.*?)(?:\\?["'])|"([\w:.-]+)"\s*:\s*"((?:[^"\\]|\\.)*)"`)

// npmScriptsBlock finds "scripts": { ... } objects, whose "name": "CMD"
// pairs are scripts.
var npmScriptsBlock = regexp.MustCompile(`"scripts"\s*:\s*\{[^{}]*\}`)

// npmScripts judges the command a package manager runs by name (npm run X,
// yarn X, pnpm X, npm test) when the same command set that script earlier
// in its own text, with its pre and post hooks: the destructive content is
// visible even though package.json is not read.
func (w *walker) npmScripts(c *command) {
	name := npmScriptName(c)
	if name == "" {
		return
	}
	src := w.f.src
	for _, m := range npmScriptSet.FindAllStringSubmatch(src, maxInputs) {
		if m[1] != "" && npmHook(m[1], name) {
			w.npmScript(c, m[3])
		}
	}
	for _, block := range npmScriptsBlock.FindAllString(src, maxInputs) {
		for _, m := range npmScriptSet.FindAllStringSubmatch(block, maxInputs) {
			if m[4] != "" && npmHook(m[4], name) {
				w.npmScript(c, m[5])
			}
		}
	}
}

// npmHook reports whether script s runs when script name is run.
func npmHook(s, name string) bool {
	return s == name || s == "pre"+name || s == "post"+name
}

func (w *walker) npmScript(c *command, cmd string) {
	cmd = strings.NewReplacer(`\$`, `$`, `\"`, `"`, `\\`, `\`).Replace(cmd)
	if strings.TrimSpace(cmd) == "" {
		return
	}
	w.runCode(c, langShell, argCode(arg{val: cmd, lit: true, pos: c.sp.start, end: c.sp.end, exact: -1}), c.name+" run", c.sp, nil, false)
}

// npmScriptName returns the package.json script c runs by name, or "".
func npmScriptName(c *command) string {
	switch c.name {
	case "npm", "pnpm", "yarn", "bun":
	default:
		return ""
	}
	var ops []string
	for _, a := range c.args {
		if !a.lit {
			return ""
		}
		if !strings.HasPrefix(a.val, "-") {
			ops = append(ops, a.val)
		}
	}
	if len(ops) == 0 {
		return ""
	}
	switch ops[0] {
	case "run", "run-script", "rum", "urn":
		if len(ops) > 1 {
			return ops[1]
		}
		return ""
	case "test", "start", "stop", "restart", "t", "tst":
		if ops[0] == "t" || ops[0] == "tst" {
			return "test"
		}
		return ops[0]
	}
	if (c.name == "yarn" || c.name == "pnpm") && !npmBuiltin[ops[0]] {
		return ops[0]
	}
	return ""
}

// npmBuiltin are yarn and pnpm commands that are not script names.
var npmBuiltin = map[string]bool{"add": true, "install": true, "i": true, "remove": true, "rm": true, "up": true, "upgrade": true,
	"why": true, "list": true, "ls": true, "info": true, "init": true, "create": true, "dlx": true, "exec": true, "x": true,
	"publish": true, "pack": true, "link": true, "unlink": true, "config": true, "cache": true, "set": true, "workspace": true,
	"workspaces": true, "audit": true, "outdated": true, "import": true, "store": true, "prune": true, "dedupe": true, "env": true,
	"plugin": true, "version": true, "login": true, "logout": true, "patch": true, "node": true, "bin": true, "global": true}
