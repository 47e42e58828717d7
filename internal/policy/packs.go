package policy

import (
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"gopkg.in/yaml.v3"
)

// Rule packs are the detector's knowledge of tools whose harm reaches
// beyond the host: cloud CLIs, clusters, infrastructure as code, data
// stores, forges, secrets managers, backups, DNS, messaging. Each pack is
// a YAML table in packs/ (see packs/README.md): per tool, how to find its
// command path (the subcommand words), which words and options are
// read-only, and rules that name a destructive command path, verb class or
// option. The tables are data: a tool is added without code.
//
// A pack rule's ID is "pack:rule". Its findings apply on every backend
// (the harm is not to the host the command runs on), and a critical rule
// cannot be allowlisted: only turning its pack off admits it.

//go:embed packs/*.yaml
var packFiles embed.FS

// PackInfo describes one rule pack, for docs and `sandrun policy rules`.
type PackInfo struct {
	Name        string
	Description string
	Tools       []string
	Rules       []RuleInfo
}

// pack is one parsed packs/*.yaml file.
type pack struct {
	Name        string     `yaml:"pack"`
	Description string     `yaml:"description"`
	Tools       []packTool `yaml:"tools"`
}

// packTool is what a pack knows of one program (or several spellings of it).
type packTool struct {
	Names []string `yaml:"names"`
	// Values are the options that take a value as the next word (skipped
	// with it when the command path is read).
	Values []string `yaml:"values"`
	// Depth is how many leading operands form the command path (aws: 2,
	// service and operation; kubectl: 1); 0 means 3.
	Depth int `yaml:"depth"`
	// Safe are options or path words after which the invocation only
	// prints or previews (--help, --dry-run, help, plan): no rule of the
	// tool applies. An option given as "--dry-run=none" or "=false" is not
	// safe.
	Safe []string `yaml:"safe"`
	// ScriptLenient: a script_re match that does not parse as shell is
	// skipped, for recipes read out of another language (Go, CMake, HCL).
	ScriptLenient bool `yaml:"script_lenient"`
	// CheckMode says a Safe option also keeps the tool from running its
	// scripts (ansible --check skips the shell and command modules).
	CheckMode bool `yaml:"check_mode"`
	// Fold compares path words case-insensitively (redis-cli FLUSHALL).
	Fold bool `yaml:"fold"`
	// Joined also matches rules' regular expressions against the whole
	// command line (program name and arguments joined by spaces), for
	// tools whose commands arrive as one string or as words alike
	// (cmd /c "rd /s /q X" and cmd /c rd /s /q X). Encoded are options
	// whose value is a base64 UTF-16LE script (powershell -EncodedCommand),
	// decoded and matched too.
	Joined  bool     `yaml:"joined"`
	Encoded []string `yaml:"encoded"`
	// Files are options whose value names a file the tool reads its
	// commands or changes from (diskpart /s FILE, aws --change-batch
	// file://FILE): when the script wrote that file with known content,
	// rules' regular expressions match the content too.
	Files []string `yaml:"files"`
	// Read and Destroy add verbs to the shared classes for this tool.
	// Verbs, when given, replaces the shared destroy class (Destroy is
	// still added): the generic tool uses a narrower class.
	Read    []string `yaml:"read"`
	Destroy []string `yaml:"destroy"`
	Verbs   []string `yaml:"verbs"`
	// After are destroy verbs only after a resource word (tctl users rm
	// alice), not as the first word (ollama rm llama3: a local model).
	After []string `yaml:"after_verbs"`
	// Except, for the generic tool (names: ["*"]), are the programs it
	// leaves alone: their operands are text or files, not subcommands
	// (grep delete notes.txt).
	Except []string `yaml:"except"`
	// Triggers (names: ["**"] only) are words one of the command's
	// arguments must contain for its rules to be tried: they run on
	// every program, so most commands are passed over at that cost.
	Triggers []string `yaml:"triggers"`
	// Script are options whose value is a shell command the tool runs
	// (on this host or others): it is judged as a script, when one of
	// ScriptWhen is given as an option or as the first word of the command
	// path (go run), or always if none is named. Exec says the
	// words after "--" are a command the tool runs.
	Script     []string `yaml:"script"`
	ScriptWhen []string `yaml:"script_when"`
	// ScriptRe, when set, is what a script value must match; its first
	// non-empty group is the script (alias.x=!CMD gives CMD). With
	// ScriptAll every literal argument is tried against it (vim '+!CMD',
	// sed '1e CMD'), and with ScriptPairs every two consecutive operands
	// as KEY=VALUE (git config alias.x '!CMD').
	ScriptRe  string `yaml:"script_re"`
	ScriptAll bool   `yaml:"script_all"`
	// ScriptDynamic matches the forms of a script value that run a
	// command ScriptRe cannot read, built at run time (osascript's do
	// shell script given an expression, not a string): unresolved-command.
	ScriptDynamic string `yaml:"script_dynamic"`
	scriptDyn     *textRe
	// ScriptRaw are Script options whose value is the script as it is,
	// ScriptRe aside (git grep --open-files-in-pager=CMD).
	ScriptRaw   []string `yaml:"script_raw"`
	ScriptPairs bool     `yaml:"script_pairs"`
	// ScriptStdin tries the known text the tool reads on stdin against
	// ScriptRe (ed's and ftp's "!CMD" lines).
	ScriptStdin bool `yaml:"script_stdin"`
	// ScriptFile are options naming a file the tool reads its recipes
	// from (make -f FILE, just --justfile FILE) and ScriptDefault the
	// names it reads without one (Makefile, justfile): when the command
	// wrote that file earlier with known content, the content is tried
	// against ScriptRe (printf 'x:\n\tCMD' > Makefile && make x).
	ScriptFile    []string `yaml:"script_file"`
	ScriptDefault []string `yaml:"script_default"`
	// ScriptOperand says the literal operands may name such a file too
	// (systemd-tmpfiles --remove FILE, logrotate FILE).
	ScriptOperand bool `yaml:"script_operand"`
	// ScriptSubst are [regexp, replacement] pairs applied, in order, to
	// each script ScriptRe finds before it is judged: the tool's own
	// expansions written as the shell's (make's $$ is $; tox's
	// {env:HOME} is $HOME).
	ScriptSubst [][]string `yaml:"script_subst"`
	scriptSubst []scriptSubst
	// Lang is the language of the Script options' values when it is not
	// the shell's: ruby (rake -e), python, perl, node, php, lua or awk.
	Lang     string `yaml:"lang"`
	scriptRe *textRe
	lang     lang
	generic  bool // names: ["*"] or ["**"]
	Exec     bool `yaml:"exec"`
	// AlsoGeneric keeps the generic tools judging the program the entry
	// names (verbs such as purge, clear or self-destruct the entry does not
	// list), as they judge a program no table knows.
	AlsoGeneric bool `yaml:"also_generic"`
	// Runs are command paths after which the remaining words are a
	// command the tool runs ("" for the first operand: npx TOOL ...,
	// "exec *" for docker exec CONTAINER TOOL ...): it is judged too.
	Runs wordList `yaml:"runs"`
	// RunsShell says the words after a Runs path are a shell script
	// (git submodule foreach 'git clean -fdx'), not a program and its
	// arguments.
	RunsShell bool `yaml:"runs_shell"`
	// Image are command paths after which the next word names a container
	// image and the words after it are its arguments (docker run IMAGE
	// ARGS): when the first argument is not a program the detector knows
	// but the image's name is (bitnami/kubectl delete ns x), the image's
	// program is judged with those arguments.
	Image  wordList `yaml:"image"`
	images [][][]string
	Rules  []packRule `yaml:"rules"`
	// Allow are commands of the tool the packs must approve: its
	// read-only and look-alike forms (run by TestPackExamples).
	Allow []string `yaml:"allow"`
	runs  [][][]string
	// progRuns are packRuns for the entry's programs that have any
	progRuns map[string][][][]string
	// printing says a rule of the entry judges what the command prints
	// (printed: a secret printed)
	printing bool

	pack   string
	depth  int
	values map[string]bool
	except map[string]bool
	// trig indexes Triggers by their first byte
	trig    [256][]string
	read    []string
	destroy []string
}

// packRule is one rule of a tool. Every condition given must hold; the
// first rule of the tool that matches is the finding.
type packRule struct {
	ID       string `yaml:"id"`
	Severity string `yaml:"severity"` // critical (never allowlisted) or high
	Reason   string `yaml:"reason"`
	// Path is a prefix of the command path, or a list of them: words
	// separated by spaces, each a set of alternatives separated by "|",
	// "*" for any word; a word may end in "*" (delete*).
	Path wordList `yaml:"path"`
	// Verb "destroy" requires the operation (the first word of the command
	// path after Path that is in a verb class) to be a destroy verb.
	Verb string `yaml:"verb"`
	// Any needs one of these options; All needs every one; Unless refuses
	// the rule when one is given. An option is "-x" (short, also inside
	// a cluster such as -xv), "--long" (also --long=value), "-word"
	// (single-dash long: exactly -word or -word=value), or any of these
	// with "=value" to require that value (--replicas=0 matches
	// "--replicas 0" too).
	Any    []string `yaml:"any"`
	All    []string `yaml:"all"`
	Unless []string `yaml:"unless"`
	// Match is a regular expression (case-insensitive) some argument,
	// or the text the command reads on stdin, must contain.
	Match string `yaml:"match"`
	// MatchAll are regular expressions that must each match (an argument
	// or stdin, not necessarily the same one).
	MatchAll []string `yaml:"match_all"`
	// Piped requires the command's standard input to come from a pipe or
	// a redirection.
	Piped bool `yaml:"piped"`
	// Input matches Match against what the command reads instead of its
	// arguments: the known text of its standard input, or of a file
	// operand the script wrote earlier (a database shell's script).
	Input bool `yaml:"input"`
	// PipedEnv requires the standard input to hold the environment's
	// values (env, printenv, set piped in).
	PipedEnv bool `yaml:"piped_env"`
	// Printed requires the command's output to reach the job's output:
	// not captured by $(...) in another command's words or an
	// assignment, nor piped into a command that reads a credential on
	// stdin (docker login --password-stdin).
	Printed bool `yaml:"printed"`
	// UnlessMatch refuses the rule when an argument matches it.
	UnlessMatch string `yaml:"unless_match"`
	// UnlessEvery makes UnlessMatch a test of every operand after the
	// command path (or verb), not of some argument: all of the paths are
	// under /tmp, the one device is "unavailable". With no operand it
	// does not let the command off.
	UnlessEvery bool `yaml:"unless_every"`
	// ExceptMatch narrows Match: the argument Match finds must not also
	// match it (a service's own key in its own URL), judged argument by
	// argument, so another argument cannot lend its exception to the one
	// that sends a secret elsewhere.
	ExceptMatch string `yaml:"except_match"`
	// UnlessEnv refuses the rule when the command runs with one of these
	// variables set, by the script, to a value the expression (anchored,
	// case-insensitive) matches: RAILS_ENV: test resets a test database.
	UnlessEnv map[string]string `yaml:"unless_env"`
	// WhenEnv applies the rule only when the command runs with one of
	// these variables set to a value the expression (anchored,
	// case-insensitive) matches, or to a value not known:
	// GOOSE_MODE=auto goose run.
	WhenEnv map[string]string `yaml:"when_env"`
	// Deny are commands the rule must refuse (run by TestPackExamples).
	Deny []string `yaml:"deny"`
	// Via requires the command to be run by this (xargs, find -exec):
	// its operands come from a list.
	Via string `yaml:"via"`
	// UnlessVia leaves out a command run by this (op: `op run -- printenv
	// X` prints the value masked).
	UnlessVia string `yaml:"unless_via"`
	// Dynamic requires an operand built at run time ($(docker ps -q), or
	// appended by xargs): the command acts on a list it cannot see.
	Dynamic bool `yaml:"dynamic"`
	// Always applies the rule to every call of the tool that is not safe
	// (a program that only destroys: k3s-uninstall.sh).
	Always bool `yaml:"always"`

	id       string       // pack:rule
	paths    [][][]string // each alternative path: words, each a set of alternatives
	match    *textRe
	unlessM  *textRe
	exceptM  *textRe
	unlessE  map[string]*textRe
	whenE    map[string]*textRe
	matchAll []*textRe
}

// wordList is a YAML scalar or a list of scalars.
type wordList []string

func (l *wordList) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*l = wordList{n.Value}
		return nil
	}
	var s []string
	if err := n.Decode(&s); err != nil {
		return err
	}
	*l = s
	return nil
}

// Shared verb classes. A word matches a pattern exactly, or by prefix when
// the pattern ends in "*", or by suffix when it starts with "*".
var (
	destroyVerbs = []string{
		"delete", "delete*", "*-delete", "*-delete-*", "batch-delete*", "del", "remove", "remove*", "*-remove", "rm", "rmi", "rb",
		"destroy", "destroy*", "terminate", "terminate*", "purge", "purge*", "drop", "drop-*", "dropall", "flush*", "prune",
		"wipe*", "erase*", "deregister*", "uninstall", "deletefile", "rmdir", "rmdirs",
		"truncate", "zap", "nuke", "evict", "schedule-*deletion",
		// API operation names (aliyun ecs DeleteInstance, ReleaseEipAddress)
		"Delete*", "Destroy*", "Terminate*", "Purge*", "Drop*", "Release*", "Deregister*",
	}
	// Read verbs are verbs only: nouns that also name a read (logs,
	// history, plan) would stop the search for the operation early.
	readVerbs = []string{
		"get", "get-*", "list", "list-*", "ls", "describe", "describe-*", "show", "show-*", "status", "view", "inspect",
		"explain", "diff", "validate", "preview", "search", "cat", "help", "version", "check", "stat", "whoami",
		"can-i", "wait", "watch", "download", "lookup", "test-*", "read", "head", "tail", "find", "lint", "fmt",
		"template", "ping", "exists", "estimate-*", "preview-*",
		"Describe*", "List*", "Get*", "Query*", "Check*",
	}
)

// matchWord reports whether word matches pattern (see the classes above).
func matchWord(pattern, word string) bool {
	switch {
	case pattern == "*":
		return true
	case strings.Count(pattern, "*") > 1 && strings.Contains(pattern, ":"):
		// d*:d*:d*: each colon-separated part on its own (Symfony's
		// doc:dat:drop is doctrine:database:drop)
		ps, ws := strings.Split(pattern, ":"), strings.Split(word, ":")
		if len(ps) != len(ws) {
			return false
		}
		for i := range ps {
			if !matchWord(ps[i], ws[i]) {
				return false
			}
		}
		return true
	case strings.HasSuffix(pattern, "*") && strings.HasPrefix(pattern, "*"):
		return strings.Contains(word, strings.Trim(pattern, "*"))
	case strings.HasSuffix(pattern, "*"):
		return strings.HasPrefix(word, pattern[:len(pattern)-1])
	case strings.HasPrefix(pattern, "*"):
		return strings.HasSuffix(word, pattern[1:])
	}
	if pre, suf, ok := strings.Cut(pattern, "*"); ok { // schedule-*deletion
		return len(word) >= len(pre)+len(suf) && strings.HasPrefix(word, pre) && strings.HasSuffix(word, suf)
	}
	return word == pattern
}

func matchAnyWord(patterns []string, word string) bool {
	for _, p := range patterns {
		if matchWord(p, word) {
			return true
		}
	}
	return false
}

// packs and packTools are the embedded packs, loaded once.
var (
	packs     []pack
	packTools map[string][]*packTool // program name -> the packs' tools
	// packAny are the generic tools (names: ["*"]): they judge a program
	// no pack and no matcher knows, by the shape of its command line.
	packAny []*packTool
	// packEvery are the tools whose rules judge every program, known or
	// not (names: ["**"]): shapes that mean the same whatever the tool
	// (a token created and printed, SQL that drops a table in an option).
	packEvery []*packTool
	// alsoGeneric are the programs the generic tools judge though a pack
	// names them (also_generic).
	alsoGeneric = map[string]bool{}
	// packRuns are, by program, the command paths of every pack after
	// which the words are a command the program runs (runs): what follows
	// is that command's, options too (gemini mcp add NAME npx -y PKG).
	packRuns = map[string][][][]string{}
)

func init() {
	rules = append(rules, sensitivePathRules...)
	var err error
	packs, err = loadPacks(packFiles)
	if err != nil {
		panic(err) // the embedded tables are tested; a broken one is a build defect
	}
	packTools = map[string][]*packTool{}
	for i := range packs {
		p := &packs[i]
		for j := range p.Tools {
			t := &p.Tools[j]
			for _, n := range t.Names {
				if n == "*" {
					packAny = append(packAny, t)
					continue
				}
				if n == "**" {
					for _, w := range t.Triggers {
						t.trig[w[0]] = append(t.trig[w[0]], w)
					}
					packEvery = append(packEvery, t)
					continue
				}
				packTools[n] = append(packTools[n], t)
				for _, r := range t.runs {
					if len(r) > 0 {
						packRuns[n] = append(packRuns[n], r)
					}
				}
				if t.AlsoGeneric {
					alsoGeneric[n] = true
				}
			}
			for k := range t.Rules {
				r := &t.Rules[k]
				if _, ok := lookupRule(r.id); !ok {
					rules = append(rules, rule{id: r.id, critical: r.Severity == "critical", pack: p.Name, desc: r.Reason})
				}
			}
		}
	}
	for i := range packs {
		for j := range packs[i].Tools {
			t := &packs[i].Tools[j]
			t.printing = slices.ContainsFunc(t.Rules, func(r packRule) bool { return r.Printed })
			for _, n := range t.Names {
				if r := packRuns[n]; len(r) > 0 {
					if t.progRuns == nil {
						t.progRuns = map[string][][][]string{}
					}
					t.progRuns[n] = r
				}
			}
		}
	}
	indexRules()
	addPackMatchers()
}

// loadPacks parses and checks every packs/*.yaml of fsys.
func loadPacks(fsys fs.FS) ([]pack, error) {
	names, err := fs.Glob(fsys, "packs/*.yaml")
	if err != nil {
		return nil, err
	}
	var out []pack
	seen := map[string]bool{}
	for _, name := range names {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		var p pack
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if err := p.compile(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("%s: pack %q defined twice", name, p.Name)
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b pack) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

var packNameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

func (p *pack) compile() error {
	if !packNameRE.MatchString(p.Name) {
		return fmt.Errorf("pack: %q is not a pack name", p.Name)
	}
	ids := map[string]packRule{} // one rule may be raised by several tools
	for i := range p.Tools {
		t := &p.Tools[i]
		field := fmt.Sprintf("tools[%d]", i)
		if len(t.Names) == 0 {
			return fmt.Errorf("%s.names: empty", field)
		}
		t.pack, t.depth = p.Name, t.Depth
		if t.depth == 0 {
			t.depth = 3
		}
		t.values = map[string]bool{}
		for _, v := range t.Values {
			t.values[v] = true
		}
		t.except = map[string]bool{}
		for _, n := range t.Except {
			t.except[n] = true
		}
		generic := slices.Contains(t.Names, "*") || slices.Contains(t.Names, "**")
		t.generic = generic
		if len(t.Except) > 0 && !generic {
			return fmt.Errorf("%s.except: only for the generic tools (names: [\"*\"] or [\"**\"])", field)
		}
		if slices.Contains(t.Triggers, "") {
			return fmt.Errorf("%s.triggers: an empty word", field)
		}
		if len(t.Triggers) > 0 != slices.Contains(t.Names, "**") {
			return fmt.Errorf("%s.triggers: the tools of every program (names: [\"**\"]) need them, and only they", field)
		}
		switch t.Lang {
		case "", "sh":
			t.lang = langShell
		case "ruby":
			t.lang = langRuby
		case "python":
			t.lang = langPython
		case "perl":
			t.lang = langPerl
		case "node":
			t.lang = langNode
		case "php":
			t.lang = langPHP
		case "lua":
			t.lang = langLua
		case "awk":
			t.lang = langAwk
		default:
			return fmt.Errorf("%s.lang: %q (want sh, ruby, python, perl, node, php, lua or awk)", field, t.Lang)
		}
		if t.ScriptRe != "" {
			re, err := compileText("(?is)" + t.ScriptRe)
			if err != nil {
				return fmt.Errorf("%s.script_re: %w", field, err)
			}
			t.scriptRe = re
		}
		for j, p := range t.ScriptSubst {
			if len(p) != 2 || t.scriptRe == nil {
				return fmt.Errorf("%s.script_subst[%d]: want [regexp, replacement], with script_re", field, j)
			}
			re, err := regexp.Compile(p[0])
			if err != nil {
				return fmt.Errorf("%s.script_subst[%d]: %w", field, j, err)
			}
			t.scriptSubst = append(t.scriptSubst, scriptSubst{re, p[1]})
		}
		if t.ScriptDynamic != "" {
			if t.scriptRe == nil {
				return fmt.Errorf("%s.script_dynamic: needs script_re", field)
			}
			re, err := compileText("(?is)" + t.ScriptDynamic)
			if err != nil {
				return fmt.Errorf("%s.script_dynamic: %w", field, err)
			}
			t.scriptDyn = re
		}
		for _, p := range t.Runs {
			var path [][]string
			for _, w := range strings.Fields(p) {
				path = append(path, strings.Split(w, "|"))
			}
			t.runs = append(t.runs, path)
		}
		for _, p := range t.Image {
			var path [][]string
			for _, w := range strings.Fields(p) {
				path = append(path, strings.Split(w, "|"))
			}
			t.images = append(t.images, path)
		}
		t.read = append(slices.Clone(readVerbs), t.Read...)
		t.destroy = append(slices.Clone(destroyVerbs), t.Destroy...)
		if len(t.Verbs) > 0 {
			t.destroy = append(slices.Clone(t.Verbs), t.Destroy...)
		}
		for j := range t.Rules {
			r := &t.Rules[j]
			rf := fmt.Sprintf("%s.rules[%d]", field, j)
			if !packNameRE.MatchString(r.ID) {
				return fmt.Errorf("%s.id: %q is not a rule name", rf, r.ID)
			}
			if r.Severity != "critical" && r.Severity != "high" {
				return fmt.Errorf("%s.severity: %q (want critical or high)", rf, r.Severity)
			}
			if o, ok := ids[r.ID]; ok && r.Reason == "" {
				r.Reason = o.Reason // said once for a rule several tools raise
			}
			if r.Reason == "" {
				return fmt.Errorf("%s.reason: empty", rf)
			}
			if r.Verb != "" && r.Verb != "destroy" {
				return fmt.Errorf("%s.verb: %q (want destroy)", rf, r.Verb)
			}
			if len(r.Path) == 0 && r.Verb == "" && len(r.Any) == 0 && len(r.All) == 0 && r.Match == "" && len(r.MatchAll) == 0 && !r.Always {
				return fmt.Errorf("%s: no condition (path, verb, any, all, match or always)", rf)
			}
			r.id = p.Name + ":" + r.ID
			if o, ok := ids[r.ID]; ok && o.Severity != r.Severity {
				return fmt.Errorf("%s.severity: %q is %s for tools %s", rf, r.ID, o.Severity, o.id)
			}
			if _, ok := ids[r.ID]; !ok {
				ids[r.ID] = packRule{Severity: r.Severity, Reason: r.Reason, id: strings.Join(t.Names, ",")}
			}
			for _, p := range r.Path {
				var path [][]string
				for _, w := range strings.Fields(p) {
					path = append(path, strings.Split(w, "|"))
				}
				r.paths = append(r.paths, path)
			}
			if r.Match != "" {
				re, err := compileText("(?i)" + r.Match)
				if err != nil {
					return fmt.Errorf("%s.match: %w", rf, err)
				}
				r.match = re
			}
			for k, m := range r.MatchAll {
				re, err := compileText("(?i)" + m)
				if err != nil {
					return fmt.Errorf("%s.match_all[%d]: %w", rf, k, err)
				}
				r.matchAll = append(r.matchAll, re)
			}
			if r.UnlessMatch != "" {
				re, err := compileText("(?i)" + r.UnlessMatch)
				if err != nil {
					return fmt.Errorf("%s.unless_match: %w", rf, err)
				}
				r.unlessM = re
			}
			if r.ExceptMatch != "" {
				if r.Match == "" || r.Input {
					return fmt.Errorf("%s.except_match: needs match (on arguments)", rf)
				}
				re, err := compileText("(?i)" + r.ExceptMatch)
				if err != nil {
					return fmt.Errorf("%s.except_match: %w", rf, err)
				}
				r.exceptM = re
			}
			var err error
			if r.unlessE, err = compileEnv(r.UnlessEnv, rf+".unless_env"); err != nil {
				return err
			}
			if r.whenE, err = compileEnv(r.WhenEnv, rf+".when_env"); err != nil {
				return err
			}
		}
	}
	return nil
}

// Packs lists the rule packs, by name, with their rules (those written as
// code, the sensitive-path model's, included).
func Packs() []PackInfo {
	out := make([]PackInfo, 0, len(packs))
	for _, p := range packs {
		info := PackInfo{Name: p.Name, Description: p.Description}
		seen := map[string]bool{}
		for _, r := range sensitivePathRules {
			if r.pack == p.Name {
				seen[r.id] = true
				info.Rules = append(info.Rules, RuleInfo{ID: r.id, Description: r.desc, Critical: r.critical, Pack: r.pack})
			}
		}
		for _, t := range p.Tools {
			info.Tools = append(info.Tools, t.Names...)
			for _, r := range t.Rules {
				if !seen[r.id] {
					seen[r.id] = true
					info.Rules = append(info.Rules, RuleInfo{ID: r.id, Description: r.Reason, Critical: r.Severity == "critical", Pack: p.Name})
				}
			}
		}
		out = append(out, info)
	}
	return out
}

func packNames() []string {
	names := make([]string, len(packs))
	for i, p := range packs {
		names[i] = p.Name
	}
	return names
}

// matchPacks runs the packs' rules for the program c runs.
func matchPacks(c *command, h *hits) {
	for _, t := range packTools[canonical(c.name)] {
		t.judge(c, h)
	}
}

// matchPacksEvery runs the rules that judge every program (names:
// ["**"]) on a command one of whose arguments holds a trigger word.
func matchPacksEvery(c *command, h *hits) {
	if !plainName(c.name) {
		return
	}
	for _, t := range packEvery {
		if !t.except[c.name] && t.triggered(c) {
			t.judge(c, h)
		}
	}
}

// triggered reports an argument holding one of t's trigger words.
func (t *packTool) triggered(c *command) bool {
	for _, a := range c.args {
		v := a.val
		for i := 0; i < len(v); i++ {
			for _, w := range t.trig[v[i]] {
				if strings.HasPrefix(v[i:], w) {
					return true
				}
			}
		}
	}
	return false
}

// genericMatchers is what matchersFor gives a program the detector does
// not know: the generic tools' rules.
var genericMatchers = []matcher{matchPacksAny}

// matchPacksAny runs the generic tools' rules for a program no pack or
// matcher knows.
func matchPacksAny(c *command, h *hits) {
	for _, t := range packAny {
		if !t.except[c.name] {
			t.judge(c, h)
		}
	}
}

// projectProgram reports a program named by a relative path (bin/ops,
// ./tool): the project's own, whose verbs mean what the project says.
func projectProgram(prog string) bool {
	return strings.Contains(prog, "/") && !strings.HasPrefix(prog, "/")
}

// genericProgram reports whether the generic tools judge the program: a
// bare command name (not a script or a path: ./deploy.sh destroy is the
// project's own), that the detector does not otherwise know.
func genericProgram(name string) bool {
	return len(packAny) > 0 && plainName(name) && (!knownProgram(name) || alsoGeneric[name])
}

// plainName reports a program named by a word the generic rules read: not
// a path, a variable or an assignment.
func plainName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "/\\$=")
}

// packCall is a tool's command line as the rules read it.
type packCall struct {
	dynPath bool     // a word of the command path is a command's output the detector cannot know
	path    []string // the command path: leading operands, lower-cased when the tool folds
	opts    []int    // the indexes in args of the option words
	pathIdx []int    // the indexes in args of the path words
	args    []arg
}

// parse reads c's command path and options.
func (t *packTool) parse(c *command) packCall {
	pc := packCall{args: c.args}
	pathOpen := true
	var runs [][][]string
	if t.progRuns != nil {
		runs = t.progRuns[canonical(c.name)]
	}
	var words []string // the command path beyond the depth, for runs
	ran := false       // the words are a command the tool runs
	optSeen := false   // an option came before: its value may be what looks like the path (gemini --telemetry-otlp-endpoint mcp add ...)
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if !a.lit {
			// an option whose value is built at run time (--password=$PW)
			// is still an option; another word may be the subcommand
			if w := strings.Trim(a.src, `"`); pathOpen && len(pc.path) == 0 &&
				(strings.HasPrefix(w, "$(") && strings.HasSuffix(w, ")") || len(w) > 1 && w[0] == '`' && w[len(w)-1] == '`') {
				pc.dynPath = true // kubectl $(echo delete | sort) ns prod
			}
			pathOpen = pathOpen && strings.HasPrefix(strings.TrimLeft(a.src, `"'`), "-")
			continue
		}
		if a.val == "--" {
			break
		}
		if len(a.val) > 1 && a.val[0] == '-' {
			if ran {
				continue
			}
			optSeen = optSeen || len(words) == 0 // before the path: its value may be the path's first word
			pc.opts = append(pc.opts, i)
			if t.values[a.val] && i+1 < len(c.args) && (!c.args[i+1].lit || !strings.HasPrefix(c.args[i+1].val, "-")) {
				i++ // its value; an option after it means it took none here (docker system prune -f --volumes)
			}
			continue
		}
		if pathOpen && len(pc.path) < t.depth {
			w := a.val
			if t.Fold {
				w = strings.ToLower(w)
			}
			if len(pc.path) == 0 && strings.Contains(w, "/") && interpreterLang(c.name) != langShell && plainName(path.Base(w)) {
				w = path.Base(w) // php /var/www/nextcloud/occ user:delete: the script is the tool
			}
			if !pathWord(w) && !t.packageRun(pc.path, w) {
				// a URL or file right after an option is taken as its value
				// (jenkins-cli -s https://ci.example.com/ delete-job x)
				pathOpen = i > 0 && c.args[i-1].lit && len(c.args[i-1].val) > 1 && c.args[i-1].val[0] == '-' && !strings.Contains(c.args[i-1].val, "=")
				continue
			}
			pc.path = append(pc.path, w)
			pc.pathIdx = append(pc.pathIdx, i)
		}
		if len(runs) > 0 && !ran {
			// gemini mcp add NAME npx -y PKG: from the command it runs on,
			// the options are that command's
			n, ok := matchPath(runs, words)
			ran = ok && n > 0 && n == len(words) && !optSeen
			words = append(words, strings.ToLower(a.val))
		}
	}
	return pc
}

// packageRun reports a word of a runs path that is not a subcommand's
// shape: the "*" operand before the command (apptainer exec
// docker://alpine:3.19 CMD), or a versioned package right after the path
// (npx vercel@39, pnpm dlx @openai/codex@0.46.0), the program it runs.
func (t *packTool) packageRun(path []string, w string) bool {
	if len(t.runs) == 0 || w == "" {
		return false
	}
	for _, p := range t.runs {
		if len(p) == len(path)+1 && slices.Equal(p[len(path)], []string{"*"}) {
			if n, ok := matchPath([][][]string{p[:len(path)]}, path); ok && n == len(path) {
				return true
			}
		}
	}
	if len(w) < 2 || !strings.Contains(w[1:], "@") || strings.Contains(w, "://") {
		return false
	}
	n, ok := matchPath(t.runs, path)
	return ok && n == len(path)
}

// dottedVerbs are the verbs read after a dot (files.delete, models.delete).
var dottedVerbs = map[string]bool{"delete": true, "destroy": true, "purge": true, "terminate": true, "wipe": true, "drop": true,
	"remove": true, "truncate": true, "erase": true}

// pathWord reports whether w can be a subcommand: a word, not a path, URL
// or file name. A site alias (drush @prod) and a task's arguments (rake
// "gitlab:password:reset[root]") count.
func pathWord(w string) bool {
	if w == "" || strings.Contains(w, "://") {
		return false
	}
	brackets := false
	for i, r := range w {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i == 0 && r == '@' && len(w) > 1:
		case i > 0 && (r >= '0' && r <= '9' || r == '-' || r == '_' || r == ':' || r == '.' || r == '/' || r == '~' || r == '^'):
		case i > 0 && r == '[' && !brackets:
			brackets = true
		case brackets && (r == ']' || r == ',' || r == '@' || r == ' '), w[0] == '@' && r == '%': // @prod:%files
		default:
			return false
		}
	}
	return true
}

// hasOption reports whether the call gives option spec (see packRule.Any).
// toStdout reports an output option whose value is the job's own output
// (-o /dev/stdout, --output -): it writes to no file.
func (pc packCall) toStdout(spec string) bool {
	name, _, _ := strings.Cut(spec, "=")
	for _, i := range pc.opts {
		a := pc.args[i]
		n, v, inline := strings.Cut(a.val, "=")
		if n != name {
			continue
		}
		if !inline && i+1 < len(pc.args) && pc.args[i+1].lit {
			v = pc.args[i+1].val
		}
		if v == "-" || stdoutPath.MatchString(v) {
			return true
		}
	}
	return false
}

// hasOptionAbbrev is hasOption where a long option may also be written
// as an abbreviation of three letters or more (git push --forc, argparse
// and getopt_long take any unambiguous prefix): for the options that
// make a call dangerous, not for those that excuse it.
func (pc packCall) hasOptionAbbrev(spec string) bool {
	if pc.hasOption(spec) {
		return true
	}
	name, want, hasWant := strings.Cut(spec, "=")
	if !strings.HasPrefix(name, "--") || strings.HasSuffix(name, "*") {
		return false
	}
	for _, i := range pc.opts {
		a := pc.args[i]
		n, val, inline := strings.Cut(a.val, "=")
		if !a.lit || !strings.HasPrefix(n, "--") || len(n) < 5 || n == name || !strings.HasPrefix(name, n) || name[len(n)] == '-' {
			continue // --export is an option of its own, not --export-secret-keys cut short
		}
		if !hasWant {
			if inline && (strings.EqualFold(val, "false") || strings.EqualFold(val, "no")) {
				continue
			}
			return true
		}
		if !inline && i+1 < len(pc.args) && pc.args[i+1].lit {
			val = pc.args[i+1].val
		}
		if optionValueIs(val, want) {
			return true
		}
	}
	return false
}

// negated reports a long option spec (see hasOption) that is also given
// with another value on the line (--dry-run=client --dry-run=none,
// --cascade=false --cascade=true): which occurrence wins is the tool's to
// say. Without a wanted value, another value is one that turns it off.
func (pc packCall) negated(spec string) bool {
	name, want, hasWant := strings.Cut(spec, "=")
	if !strings.HasPrefix(name, "--") {
		return false
	}
	for _, i := range pc.opts {
		n, v, ok := strings.Cut(pc.args[i].val, "=")
		if n != name {
			continue
		}
		if !ok && i+1 < len(pc.args) && pc.args[i+1].lit && !strings.HasPrefix(pc.args[i+1].val, "-") {
			v, ok = pc.args[i+1].val, hasWant
		}
		switch {
		case hasWant && ok && !optionValueIs(v, want), hasWant && !ok:
			return true
		case !hasWant && ok && (strings.EqualFold(v, "none") || strings.EqualFold(v, "false") || strings.EqualFold(v, "no")):
			return true
		}
	}
	return false
}

func (pc packCall) hasOption(spec string) bool {
	name, want, hasWant := strings.Cut(spec, "=")
	for _, i := range pc.opts {
		a := pc.args[i]
		if !a.lit {
			continue
		}
		next := ""
		if i+1 < len(pc.args) && pc.args[i+1].lit {
			next = pc.args[i+1].val
		}
		v := a.val
		switch {
		case strings.HasPrefix(name, "--") || len(name) > 2:
			n, val, inline := strings.Cut(v, "=")
			if n != name && (!strings.HasSuffix(name, "*") || !strings.HasPrefix(n, name[:len(name)-1])) {
				continue // --delete-* names a class of options
			}
			if !hasWant && inline && (strings.EqualFold(val, "false") || strings.EqualFold(val, "no")) {
				continue // --delete-storages=false
			}
			if !hasWant {
				return true
			}
			if !inline && (!strings.HasPrefix(next, "-") || strings.HasPrefix(want, "-")) {
				val = next // --size -5G when a negative value is wanted
			}
			if optionValueIs(val, want) {
				return true
			}
		default: // -x, alone or in a cluster of short options
			switch {
			case v == name && !hasWant:
				return true
			case v == name:
				if optionValueIs(next, want) {
					return true
				}
			case hasWant && strings.EqualFold(v, name+want):
				return true // -XDELETE
			case !hasWant && !strings.HasPrefix(v, "--") && shortCluster(v) && strings.ContainsRune(v[1:], rune(name[1])):
				return true
			}
		}
	}
	return false
}

// optionValueIs reports whether an option's value is want, case
// insensitively; a "*" in want stands for any text (-m=*_db), and a want
// starting with a backslash is literal text (--source=\* is the value *).
func optionValueIs(val, want string) bool {
	if lit, ok := strings.CutPrefix(want, "\\"); ok {
		return strings.EqualFold(val, lit)
	}
	if !strings.Contains(want, "*") {
		return strings.EqualFold(val, want)
	}
	return matchWord(strings.ToLower(want), strings.ToLower(val))
}

// shortCluster reports whether v reads as bundled short flags (-rf), not a
// single-dash long option (-auto-approve) or a negative number.
func shortCluster(v string) bool {
	if len(v) > 6 {
		return false
	}
	for _, r := range v[1:] {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') {
			return false
		}
	}
	return true
}

// safe reports an invocation that only prints or previews.
func (t *packTool) safe(pc packCall, program string) bool {
	for _, s := range t.Safe {
		if strings.HasPrefix(s, "-") {
			// --dry-run=client --dry-run=none: the last one wins, and
			// whichever does, the call is not known to be a dry run
			on, off := false, false
			for _, i := range pc.opts {
				n, v, inline := strings.Cut(pc.args[i].val, "=")
				if !inline && i+1 < len(pc.args) && pc.args[i+1].lit && (pc.args[i+1].val == "false" || pc.args[i+1].val == "none") {
					v = pc.args[i+1].val // --DryRun false
				}
				if n == s {
					off = off || v == "none" || v == "false"
					on = on || v != "none" && v != "false"
				}
			}
			if on && !off {
				return true
			}
			continue
		}
		// help, explain, completion: the subcommand itself, not a word
		// anywhere (kubectl delete ns prod help deletes prod)
		if len(pc.path) > 0 && pc.path[0] == s || program == "aws" && helpLast(pc, s) {
			return true
		}
	}
	return false
}

// helpLast reports a call whose last argument is word and whose other
// operands are only its command path: the AWS CLI's way to ask for a
// command's help (aws ec2 terminate-instances help). To kubectl it is one
// more name (kubectl delete ns prod help deletes prod).
func helpLast(pc packCall, word string) bool {
	n := len(pc.args)
	if n == 0 || !pc.args[n-1].lit || pc.args[n-1].val != word {
		return false
	}
	path := len(pc.path)
	if len(pc.pathIdx) > 0 && pc.pathIdx[len(pc.pathIdx)-1] == n-1 {
		path-- // the word was read as the path's last
	}
	operands := 0
	for _, a := range pc.args[:n-1] {
		if !a.lit || !strings.HasPrefix(a.val, "-") {
			operands++
		}
	}
	return operands == path
}

// judge applies the tool's rules to c.
func (t *packTool) judge(c *command, h *hits) {
	if t.Joined || len(t.Encoded) > 0 || len(t.Files) > 0 {
		c = t.withText(c)
	}
	if t.pack == "paths" {
		c = withHomePaths(c)
	}
	pc := t.parse(c)
	if t.safe(pc, canonical(c.name)) {
		return
	}
	if pc.dynPath && slices.ContainsFunc(t.Rules, func(r packRule) bool { return r.Verb == "destroy" }) {
		h.add(ruleUnresolved, c.name+": a subcommand built at run time by a command the detector cannot follow")
		return
	}
	for i := range t.Rules {
		r := &t.Rules[i]
		if detail, ok := t.matches(r, c, pc); ok {
			// asked only once a rule applies: most calls match none
			if deletesScratch(c, canonical(c.name), func(w string) bool { return matchAnyWord(t.destroy, w) || matchAnyWord(t.After, w) }) ||
				deletesMentioned(c, t) || deletesHTTPScratch(c) {
				return // the resource the same && chain made, or one the script made under a throwaway name
			}
			x := hit{rule: r.id, detail: detail}
			if r.exceptM != nil {
				x.hosts = offendingHosts(r.match, r.exceptM, c)
			}
			*h = append(*h, x)
			return
		}
	}
}

// offendingHosts names the hosts of the arguments that match re and not
// except (the URLs a rule judged argument by argument), or nil when one
// of them has no literal host or the match was in the command's input.
func offendingHosts(re, except *textRe, c *command) []string {
	var hosts []string
	for _, a := range c.args {
		s := a.src
		if a.lit {
			s = a.val
		}
		if !matchesExcept(re, except, s) {
			continue
		}
		h := urlHost(s)
		if h == "" {
			return nil
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// urlHost is the host of a URL or a host[:port][/path] word, lowercased,
// or "" when it is not a literal name or address.
func urlHost(s string) string {
	s = strings.Trim(s, `"'`)
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?#"); i >= 0 {
		s = s[:i]
	}
	if strings.ContainsAny(s, `\ `) {
		return "" // read differently by different URL parsers
	}
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		s = s[i+1:]
	}
	if strings.HasPrefix(s, "[") {
		return "" // an IPv6 literal: never a configured service host
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if !hostName.MatchString(s) {
		return ""
	}
	return s
}

// hostName is a DNS name or an IPv4 address, as written in a URL.
var hostName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)

// matches reports whether r applies to the call, and how to show it.
func (t *packTool) matches(r *packRule, c *command, pc packCall) (string, bool) {
	n, ok := matchPath(r.paths, pc.path)
	if !ok {
		return "", false
	}
	shown := pc.path[:n]
	after := -1 // the index in args of the last word of the path or the verb
	if n > 0 && n <= len(pc.pathIdx) {
		after = pc.pathIdx[n-1]
	}
	if r.Verb == "destroy" {
		verb, vw := "", ""
		for i, w := range pc.path[n:] {
			v := w
			if strings.Contains(w, "/") {
				continue // a path (ns/prod), not a verb
			}
			if d := strings.LastIndexByte(w, '.'); d >= 0 {
				// openai api files.delete: to a program the generic tools
				// judge, a resource.verb word; otherwise a file (delete.go,
				// app.rb) or a name (nats sub orders.delete)
				if v = w[d+1:]; !t.generic || !dottedVerbs[v] || !isName(w[:d]) {
					continue
				}
			}
			if matchAnyWord(t.destroy, v) || matchAnyWord(t.read, v) || i > 0 && matchAnyWord(t.After, v) {
				verb, vw = w, v
				break
			}
		}
		if verb == "" || !matchAnyWord(t.destroy, vw) && !matchAnyWord(t.After, vw) || matchAnyWord(t.Read, vw) {
			return "", false
		}
		shown = pc.path[:slices.Index(pc.path, verb)+1]
		if k := slices.Index(pc.path, verb); k < len(pc.pathIdx) {
			after = pc.pathIdx[k]
		}
	}
	// a program the generic tools judge has options no table lists
	// (jira --plain is its own option, not --plaintext cut short)
	has := pc.hasOptionAbbrev
	if t.generic {
		has = pc.hasOption
	}
	for _, o := range r.All {
		if !has(o) {
			return "", false
		}
	}
	var flag string
	if len(r.Any) > 0 {
		for _, o := range r.Any {
			if has(o) {
				flag = o
				break
			}
		}
		if flag == "" {
			return "", false
		}
	}
	for _, o := range r.Unless {
		if pc.hasOption(o) && !pc.negated(o) && !pc.toStdout(o) {
			return "", false
		}
	}
	if r.Via != "" && !strings.Contains(c.via, r.Via) || r.UnlessVia != "" && runBy(c.via, r.UnlessVia) {
		return "", false
	}
	if r.Dynamic && !dynamicOperands(c) {
		return "", false
	}
	for _, re := range r.matchAll {
		if !matchText(re, c) {
			return "", false // first: a rule's own word (a token's name) rules most calls out cheaply
		}
	}
	if r.match != nil && (r.Input && !matchInput(r.match, c, !t.generic) || !r.Input && !matchTextExcept(r.match, r.exceptM, c)) {
		return "", false
	}
	if r.Piped && !c.stdin.present {
		return "", false
	}
	if r.PipedEnv && c.stdin.taint&taintSecret == 0 {
		return "", false
	}
	if r.Printed && c.captured {
		return "", false
	}
	if r.unlessM != nil && (r.UnlessEvery && t.everyOperand(r.unlessM, pc, after) || !r.UnlessEvery && matchUnless(r.unlessM, c)) {
		return "", false
	}
	if len(r.whenE) > 0 && !whenEnv(r.whenE, c.vars) {
		return "", false
	}
	for name, re := range r.unlessE {
		if !readsEnv(c.name, name) {
			continue // RACK_ENV=test means nothing to flask
		}
		if v, ok := c.vars[name]; ok && !v.unknown && len(v.vals) > 0 && !slices.ContainsFunc(v.vals, func(s string) bool { return !re.MatchString(s) }) &&
			!databaseChosen(c.vars) && !envOverridden(c, name, re) && !envInjected(c.via) {
			return "", false // RAILS_ENV=test: every value the script may give it is one the rule leaves alone
		}
	}
	detail := strings.Join(append([]string{c.name}, shown...), " ")
	if flag != "" {
		detail += " " + flag
	}
	return detail, true
}

// runBy reports a via path ("sh -c > op") one of whose levels is run by
// the program named.
func runBy(via, program string) bool {
	for level := range strings.SplitSeq(via, " > ") {
		if name, _, _ := strings.Cut(level, " "); name == program {
			return true
		}
	}
	return false
}

// envReaders names, for an environment variable an unless_env rule trusts,
// the programs that choose their database by it. A task runner (make, npm
// run, just: taskRunners) passes it on to whatever its task runs.
var envReaders = map[string][]string{
	"RAILS_ENV":              {"rails", "rake", "bundle", "spring"},
	"RACK_ENV":               {"rails", "rake", "bundle", "spring", "rackup", "padrino", "hanami"},
	"MIX_ENV":                {"mix", "elixir", "iex"},
	"NODE_ENV":               {"node", "nodejs", "knex", "sequelize", "sequelize-cli", "npx", "pnpx", "bunx"},
	"APP_ENV":                {"php", "artisan", "console", "symfony"},
	"FLASK_ENV":              {"flask"},
	"DJANGO_SETTINGS_MODULE": {"manage.py", "django-admin", "python", "python3", "uv", "poetry", "pipenv"},
}

// envOverridden reports a command whose own arguments set the variable an
// unless_env trusts to another value: rake's NAME=VALUE arguments
// (rake db:drop RAILS_ENV=production), artisan's --env, Django's
// --settings.
func envOverridden(c *command, name string, re *textRe) bool {
	for i, a := range c.args {
		v := a.val
		if !a.lit {
			v = a.src
		}
		opt, val, eq := strings.Cut(v, "=")
		if !eq && i+1 < len(c.args) {
			val = c.args[i+1].val
		}
		switch {
		case opt == name && eq, (opt == "--env" || opt == "-e") && name == "APP_ENV", opt == "--settings" && name == "DJANGO_SETTINGS_MODULE":
			if !a.lit || !re.MatchString(val) {
				return true
			}
		case eq && databaseVar.MatchString(opt):
			return true // rake db:drop DATABASE_URL=postgres://prod/...: the database the argument names
		}
	}
	return false
}

// envInjectors are the runners that give the program they run an
// environment of their own (a platform's or a secret store's variables):
// what the script set may not be what the program sees.
var envInjectors = []string{"railway", "doppler", "op", "infisical", "heroku", "systemd-run", "dotenv", "dotenvx", "envchain",
	"aws-vault", "chamber", "teller", "sops", "direnv", "fly", "flyctl", "vercel", "netlify", "render", "sudo", "doas", "su", "runuser"}

// envInjected reports a command run by one of envInjectors.
func envInjected(via string) bool {
	return via != "" && slices.ContainsFunc(envInjectors, func(r string) bool { return runBy(via, r) })
}

// compileEnv compiles an unless_env or when_env table: each value is an
// expression a variable's whole value must match, case-insensitively.
func compileEnv(env map[string]string, field string) (map[string]*textRe, error) {
	if len(env) == 0 {
		return nil, nil
	}
	out := make(map[string]*textRe, len(env))
	for name, v := range env {
		re, err := compileText("(?i)^(?:" + v + ")$")
		if err != nil {
			return nil, fmt.Errorf("%s[%s]: %w", field, name, err)
		}
		out[name] = re
	}
	return out, nil
}

// whenEnv reports whether one of the variables is set to a value its
// expression matches, or to a value the detector cannot know.
func whenEnv(want map[string]*textRe, vars map[string]value) bool {
	for name, re := range want {
		v, ok := vars[name]
		if ok && (v.unknown && !v.env || slices.ContainsFunc(v.vals, re.MatchString)) {
			return true
		}
	}
	return false
}

// readsEnv reports whether program (as the command names it) chooses its
// database by the environment variable name.
func readsEnv(program, name string) bool {
	readers, ok := envReaders[name]
	base := program[strings.LastIndexByte(program, '/')+1:]
	return !ok || slices.Contains(readers, base) || taskRunners[base] || taskRunners[program]
}

// databaseVar names a variable that points a program at a database
// whatever its environment's name says: RAILS_ENV=test with DATABASE_URL
// set resets the database the URL names.
var databaseVar = regexp.MustCompile(`(?i)^(DATABASE_URL|\w*_DATABASE_URL|\w*_DSN|DB_(HOST|URL|NAME|DATABASE)|PG(HOST|DATABASE|SERVICE)|MYSQL_(HOST|DATABASE)|\w*_DB_URL|MONGO(DB)?_UR[IL]|REDIS_URL)$`)

// databaseChosen reports a job or script that sets a database variable.
func databaseChosen(vars map[string]value) bool {
	for name := range vars {
		if databaseVar.MatchString(name) {
			return true
		}
	}
	return false
}

// dynamicOperands reports a command whose operands are built at run time:
// a word that is not a literal, or arguments xargs appends.
func dynamicOperands(c *command) bool {
	if strings.Contains(c.via, "xargs") {
		return true
	}
	for _, a := range c.args {
		if !a.lit {
			return true
		}
	}
	return false
}

// matchPath reports whether one of paths is a prefix of path, and its
// length. No paths matches every path, with length 0.
func matchPath(paths [][][]string, path []string) (int, bool) {
	if len(paths) == 0 {
		return 0, true
	}
next:
	for _, p := range paths {
		if len(p) > len(path) {
			continue
		}
		for i, alts := range p {
			if !matchAnyWord(alts, path[i]) {
				continue next
			}
		}
		return len(p), true
	}
	return 0, false
}

// matchText reports whether re matches one of c's arguments (a literal's
// value, or a word built at run time as written: a URL with $ZONE in it)
// or the known text of its standard input.
func matchText(re *textRe, c *command) bool { return matchTextExcept(re, nil, c) }

// matchTextExcept is matchText where a text that also matches except
// does not count, judged text by text (nil: every text counts).
func matchTextExcept(re, except *textRe, c *command) bool {
	for _, a := range c.args {
		if a.lit && matchesExcept(re, except, a.val) || !a.lit && matchesExcept(re, except, a.src) {
			return true // a word with a variable is matched as written
		}
		if !a.lit && a.val != "" && re.MatchString(a.val) && (except == nil || !except.MatchString(a.src) && !except.MatchString(a.val)) {
			// and by its known parts, quotes removed: a JSON body with a
			// timestamp filled in at run time ("value":".+", "$(date)")
			return true
		}
	}
	if !c.stdin.known {
		return c.stdin.shape != "" && matchesExcept(re, except, c.stdin.shape) // built by jq from a literal filter
	}
	return matchesExcept(re, except, c.stdin.text) || c.stdin.alt != "" && matchesExcept(re, except, c.stdin.alt)
}

// matchUnless is matchText for an unless_match, which lets a command off
// when some argument matches: only an argument that can narrow what the
// command does counts. Not a header, a description or a log file's name
// (inertOption), nor the value of an option given twice (the tool takes
// the first or the last), nor what a script's comment says.
func matchUnless(re *textRe, c *command) bool {
	for i, a := range c.args {
		if unlessCarrier(c, i) {
			continue
		}
		s := a.src
		if a.lit {
			s = a.val
		}
		if re.MatchString(withoutComments(s)) || a.expanded && re.MatchString(a.src) {
			return true // an expanded word also as written: $(hdiutil attach -nomount ram://N)
		}
	}
	if !c.stdin.known {
		return false // a shape (jq's filter, git's --format) is any text its writer chose: it lets nothing off
	}
	return re.MatchString(c.stdin.text) || c.stdin.alt != "" && re.MatchString(c.stdin.alt)
}

// everyOperand reports whether re matches every operand of the call after
// the argument at index after, and there is one: the words that are not
// options or the values of the tool's value options.
func (t *packTool) everyOperand(re *textRe, pc packCall, after int) bool {
	n := 0
	for i := after + 1; i < len(pc.args); i++ {
		a := pc.args[i]
		if a.lit && strings.HasPrefix(a.val, "-") && a.val != "-" {
			if !strings.Contains(a.val, "=") && slices.Contains(t.Values, a.val) {
				i++ // its value
			}
			continue
		}
		s := a.src
		if a.lit {
			s = a.val
		}
		if !re.MatchString(s) {
			return false
		}
		n++
	}
	return n > 0
}

// inertOptions are options whose value never narrows what a command does
// to its target, lowercased: a dry-run marker in a User-Agent, "status"
// as a log file's name or "tcp:80" in a description change nothing.
var inertOptions = map[string]bool{"--header": true, "--user-agent": true, "--referer": true, "--cookie": true,
	"--description": true, "--comment": true, "--message": true, "--note": true, "--title": true, "--reason": true,
	"--log": true, "--log-file": true, "--logfile": true, "--log-path": true, "--logdir": true, "--log-dir": true,
	"--log-level": true, "--tmpdir": true, "--timeout": true, "--cli-connect-timeout": true, "--cli-read-timeout": true,
	"--dupe-window": true, "--touch": true, "--tag": true, "--label": true}

// inertShort are short options of the same kind, per program.
var inertShort = map[string][]string{"curl": {"-H", "-A", "-e", "-b"}, "gh": {"-H"}, "glab": {"-H"}, "mvn": {"-l"}, "mvnw": {"-l"},
	"socat": {"-lf", "-L"}, "hponcfg": {"-l"}, "alembic": {"-x"}}

// envArgTools read a NAME=value argument as an environment variable
// (rake db:drop RAILS_ENV=test, make reset RAILS_ENV=test); to any other
// program it is an operand like another.
var envArgTools = map[string]bool{"rake": true, "rails": true, "bundle": true, "make": true, "gmake": true}

// envArg is a NAME=value word.
var envArg = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// stdoutPath names the job's own output as a file.
var stdoutPath = regexp.MustCompile(`^(/dev/(stdout|stderr|tty|fd/[12])|/proc/self/fd/[12])$`)

// unlessCarrier reports c's argument i as one that cannot narrow the
// command (see matchUnless).
func unlessCarrier(c *command, i int) bool {
	a := c.args[i]
	name, inline := "", false
	if a.lit && strings.HasPrefix(a.val, "-") && a.val != "-" && a.val != "--" {
		if n, _, ok := strings.Cut(a.val, "="); ok {
			name, inline = n, true
		}
	}
	if !inline && i > 0 {
		if p := c.args[i-1]; p.lit && strings.HasPrefix(p.val, "-") && len(p.val) > 1 && p.val != "--" && !strings.Contains(p.val, "=") &&
			!strings.HasPrefix(a.val, "-") {
			name = p.val
		}
	}
	if name != "" && (inertOptions[strings.ToLower(name)] || slices.Contains(inertShort[canonical(c.name)], name)) {
		return true
	}
	base := c.name[strings.LastIndexByte(c.name, '/')+1:]
	if a.lit && envArg.MatchString(a.val) && !strings.HasPrefix(a.val, "-") && !envArgTools[base] {
		return true
	}
	// --output=/dev/stdout, -l /dev/stdout: an output option that prints
	if a.lit && strings.HasPrefix(a.val, "-") {
		if _, v, ok := strings.Cut(a.val, "="); ok && stdoutPath.MatchString(v) ||
			!ok && i+1 < len(c.args) && c.args[i+1].lit && stdoutPath.MatchString(c.args[i+1].val) {
			return true
		}
	}
	// npm run X --env=test: npm's own configuration, not the script's;
	// npx --env=test pkg: npx's, before the package
	switch base {
	case "npm":
		if a.lit && strings.HasPrefix(a.val, "-") && !slices.ContainsFunc(c.args[:i], func(b arg) bool { return b.lit && b.val == "--" }) {
			return true
		}
	case "npx", "pnpx", "bunx":
		if a.lit && strings.HasPrefix(a.val, "-") && !slices.ContainsFunc(c.args[:i], func(b arg) bool { return b.lit && !strings.HasPrefix(b.val, "-") }) {
			return true
		}
	}
	if name != "" && strings.HasPrefix(name, "-") {
		n := 0
		for _, b := range c.args {
			if b.lit && (b.val == name || strings.HasPrefix(b.val, name+"=")) {
				n++
			}
		}
		if n > 1 {
			return true
		}
	}
	// httpie's Name:value items are request headers
	return httpieLike[canonical(c.name)] && a.lit && httpieHeader.MatchString(a.val)
}

// httpieHeader is an httpie request item that sets a header.
var httpieHeader = regexp.MustCompile(`^[A-Z][A-Za-z0-9-]*:([^/\d]|/[^/]|$)`)

// withoutComments is s without what a script's comments say: from a #
// that starts a word, or a // after a blank, to the end of the line,
// outside quotes. Text that is no script loses nothing it needs.
func withoutComments(s string) string {
	if !strings.Contains(s, "#") && !strings.Contains(s, "//") {
		return s
	}
	var b strings.Builder
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
		case ch == '#' && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n' || s[i-1] == ';'),
			ch == '/' && i+1 < len(s) && s[i+1] == '/' && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t' || s[i-1] == '\n' || s[i-1] == ';'):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				return b.String()
			}
			i += j - 1
			continue
		}
		b.WriteByte(ch)
	}
	return b.String()
}

func matchesExcept(re, except *textRe, s string) bool {
	return re.MatchString(s) && (except == nil || !except.MatchString(s))
}

// matchInput reports whether re matches what c reads: the known text of
// its standard input, or of a literal operand naming a file the script
// wrote earlier in the job; or, with generated (a tool's own table, not
// the generic one that judges any program's stdin) and a re that matches
// destructive SQL, an input generated with it (see taintSQLGen).
func matchInput(re *textRe, c *command, generated bool) bool {
	if c.stdin.known && (re.MatchString(c.stdin.text) || c.stdin.alt != "" && re.MatchString(c.stdin.alt)) {
		return true
	}
	if generated && !c.stdin.known && c.stdin.taint&taintSQLGen != 0 && re.MatchString("DROP TABLE t; TRUNCATE t; DELETE FROM t;") {
		// SQL another command generated with drops, truncates or deletes
		// (manage.py sqlflush | manage.py dbshell), for a rule that looks
		// for them
		return true
	}
	for _, a := range c.args {
		if !a.lit {
			continue
		}
		if f, ok := c.files[fileKey(strings.TrimPrefix(a.val, "@"))]; ok && f.s.known && re.MatchString(f.s.text) {
			return true
		}
	}
	return false
}

// cmdWords walks the command cmd /c (or /k, /r) runs when it is given as
// separate words: cmd /c kubectl delete ns prod runs kubectl, as cmd /c
// "kubectl delete ns prod" does (whose one quoted word the windows pack
// reads as a script).
func (w *walker) cmdWords(c *command) {
	if c.name != "cmd" && c.name != "cmd.exe" {
		return
	}
	for i, a := range c.args {
		if !a.lit || !strings.HasPrefix(a.val, "/") {
			return
		}
		switch strings.ToLower(a.val) {
		case "/c", "/k", "/r":
			if rest := c.args[i+1:]; len(rest) >= 2 && rest[0].lit && pathWord(rest[0].val) {
				w.run(rest, c.stdin, c.sp, joinVia(c.via, c.name), false)
			}
			return
		}
	}
}

// packNest walks the commands a pack's tool runs: the values of its Script
// options as shell scripts, and with Exec the words after "--".
func (w *walker) packNest(c *command) {
	w.cmdWords(c)
	tools := packTools[canonical(c.name)]
	if tools == nil && (psCmdlet(c.name) || psBlockAliases[strings.ToLower(c.name)]) && plainName(c.prog) {
		w.cmdletBlocks(c)
	}
	if tools == nil && genericProgram(c.name) && !projectProgram(c.prog) {
		tools = packAny
	}
	for _, t := range tools {
		if t.except[c.name] {
			continue
		}
		if len(t.Script) == 0 && len(t.ScriptRaw) == 0 && !t.Exec && len(t.runs) == 0 && len(t.images) == 0 && !t.ScriptAll && !t.ScriptPairs && !t.ScriptStdin &&
			len(t.ScriptFile) == 0 && len(t.ScriptDefault) == 0 && !t.ScriptOperand {
			continue
		}
		var pc packCall
		if len(t.runs) > 0 || len(t.images) > 0 || len(t.ScriptWhen) > 0 {
			pc = t.parse(c) // the command path and options, only when they are read
		}
		if n, ok := matchPath(t.images, pc.path); ok && n > 0 && n < len(pc.pathIdx) {
			w.runImage(c, pc.pathIdx[n])
		}
		if len(t.runs) > 0 {
			if n, ok := matchPath(t.runs, pc.path); ok && n > 0 && t.RunsShell && n <= len(pc.pathIdx) {
				if rest := c.args[pc.pathIdx[n-1]+1:]; len(rest) > 0 {
					for len(rest) > 0 && rest[0].lit && strings.HasPrefix(rest[0].val, "-") {
						if t.values[rest[0].val] && len(rest) > 1 {
							rest = rest[1:] // send-keys -t PANE
						}
						rest = rest[1:] // foreach --recursive
					}
					if len(rest) > 0 {
						w.runCode(c, langShell, joinCode(rest), c.name+" "+strings.Join(pc.path[:n], " "), c.sp, nil, false)
					}
				}
			} else if ok && n < len(pc.pathIdx) {
				words := slices.Clone(c.args[pc.pathIdx[n]:])
				words[0] = packageProgram(words[0])
				if c.name == "apptainer" || c.name == "singularity" {
					// apptainer exec -B $HOME:/w IMG rm -rf /w: the bound
					// paths are the host's
					words = hostPaths(words, apptainerBinds(c.args[:pc.pathIdx[n]]))
				}
				w.run(words, c.stdin, c.sp, joinVia(c.via, c.name), false)
			} else if ok && n > 0 && n == len(pc.pathIdx) {
				// npm exec --yes -- rm -rf DIR: the command follows --
				for j := pc.pathIdx[n-1] + 1; j+1 < len(c.args); j++ {
					if c.args[j].lit && c.args[j].val == "--" {
						w.run(c.args[j+1:], c.stdin, c.sp, joinVia(c.via, c.name), false)
						break
					}
				}
			}
		}
		when := len(t.ScriptWhen) == 0
		for _, o := range t.ScriptWhen {
			when = when || pc.hasOption(o) || len(pc.path) > 0 && pc.path[0] == o // an option, or the subcommand (go run)
		}
		if when && t.CheckMode && t.safe(t.parse(c), canonical(c.name)) {
			when = false // ansible --check: the shell and command modules are skipped
		}
		if in := c.stdin.code(); when && t.ScriptStdin && c.stdin.present && in.known {
			t.runScript(w, c, arg{val: in.text, lit: true, pos: c.sp.start, end: c.sp.end, exact: -1}, "| "+c.name)
		}
		if when {
			t.scriptFiles(w, c)
		}
		if when && t.ScriptAll && t.Joined && len(t.Encoded) > 0 {
			t.unfoldedScripts(w, c)
		}
		for i, a := range c.args {
			if a.lit && a.val == "--" {
				if t.Exec && i+1 < len(c.args) {
					// kubectl exec -i POD -- psql <<SQL: what the tool
					// reads on stdin is the remote command's stdin.
					w.run(c.args[i+1:], c.stdin, c.sp, joinVia(c.via, c.name), false)
				}
				break
			}
			if when && !a.lit && t.ScriptAll && t.Joined && winShells[c.name] {
				// powershell -Command "... { docker rm -f $_ }": sh would
				// expand $_, PowerShell is given it as written
				if src, ok := psQuotedSource(a.src); ok {
					t.runScript(w, c, arg{val: src, lit: true, pos: a.pos, end: a.end, exact: -1}, c.name)
				}
			}
			if !when || !a.lit {
				continue
			}
			if t.ScriptAll {
				t.runScript(w, c, a, c.name)
			}
			if t.ScriptPairs && i+1 < len(c.args) && c.args[i+1].lit && !strings.HasPrefix(a.val, "-") {
				pair := c.args[i+1]
				pair.val = a.val + "=" + pair.val
				t.runScript(w, c, pair, c.name+" "+a.val)
			}
			name, val, inline := strings.Cut(a.val, "=")
			raw := slices.Contains(t.ScriptRaw, name) || slices.Contains(t.ScriptRaw, a.val)
			if !raw && !slices.Contains(t.Script, name) && !slices.Contains(t.Script, a.val) {
				continue
			}
			v := arg{}
			switch {
			case (slices.Contains(t.Script, a.val) || slices.Contains(t.ScriptRaw, a.val)) && i+1 < len(c.args):
				v = c.args[i+1]
			case inline:
				v = a
				v.val, v.exact = val, -1
			default:
				continue
			}
			if raw || !v.lit && t.scriptRe == nil {
				w.runCode(c, t.lang, argCode(v), c.name+" "+name, c.sp, nil, false)
				continue
			}
			t.runScript(w, c, v, c.name+" "+name)
		}
	}
}

// psQuotedSource is a double-quoted word's text as written, when it holds
// only PowerShell's variables ($_, $env:X) and no command substitution:
// the script a Windows shell is given.
func psQuotedSource(src string) (string, bool) {
	if len(src) < 2 || src[0] != '"' || src[len(src)-1] != '"' || strings.Contains(src, "$(") || strings.Contains(src, "`") {
		return "", false
	}
	return unescapeDouble(src[1 : len(src)-1]), true
}

// psBlockAliases are ForEach-Object and Where-Object (no approved verb
// names them) and their short names: sh reads % { kubectl delete ns $_ }
// as a program named %.
var psBlockAliases = map[string]bool{"foreach-object": true, "where-object": true, "%": true, "?": true, "foreach": true, "where": true}

// cmdletBlocks judges the native programs a PowerShell statement that sh
// read as a program runs in its script blocks (ForEach-Object { helm
// uninstall $_ }), as pwsh -Command would have them judged: $_ is a value
// known only at run time.
func (w *walker) cmdletBlocks(c *command) {
	words := []string{c.name}
	for _, a := range c.args {
		if a.src == "" {
			return
		}
		words = append(words, a.src)
	}
	if !slices.Contains(words, "{") && !slices.ContainsFunc(words, func(s string) bool { return strings.HasPrefix(s, "{") }) {
		return
	}
	line := strings.Join(words, " ")
	cc := *c
	cc.name, cc.prog = "pwsh", "pwsh"
	for _, t := range packTools["pwsh"] {
		if t.ScriptAll && t.Joined {
			t.runScript(w, &cc, arg{val: line, lit: true, pos: c.sp.start, end: c.sp.end, exact: -1}, c.name)
		}
	}
	if !psCmdlet(c.name) { // a cmdlet's own statement is judged as PowerShell already (matchCmdletLine)
		var h hits
		judgeAsPwsh(cc, line, &h) // the cmdlets in the block: { Remove-Item -Recurse $HOME }
		for _, x := range h {
			w.d.addHit(w.f, x, joinVia(c.via, c.name), c.sp)
		}
	}
}

// packagePrograms are the programs of packages a package runner (npx,
// pnpm dlx, bunx) runs by the package's name when it is not the
// program's.
var packagePrograms = map[string]string{
	"@anthropic-ai/claude-code": "claude", "@openai/codex": "codex", "@google/gemini-cli": "gemini",
	"@qwen-code/qwen-code": "qwen", "opencode-ai": "opencode", "@sourcegraph/amp": "amp", "@github/copilot": "copilot",
	"@continuedev/cli": "cn", "@charmland/crush": "crush", "@vibe-kit/grok-cli": "grok", "@kilocode/cli": "kilocode",
	"netlify-cli": "netlify", "firebase-tools": "firebase", "@railway/cli": "railway", "@aws-amplify/cli": "amplify",
	"aws-cdk": "cdk", "@salesforce/cli": "sf", "@sentry/cli": "sentry-cli", "@planetscale/cli": "pscale",
	"@angular/cli": "ng", "@nestjs/cli": "nest", "sequelize-cli": "sequelize", "@datadog/datadog-ci": "datadog-ci",
	"@shopify/cli": "shopify", "@stripe/cli": "stripe", "@fly/flyctl": "flyctl", "@vscode/vsce": "vsce",
}

// packageProgram returns the word naming the program a package runner
// runs for a package word (vercel@39, @anthropic-ai/claude-code@2.0.14):
// the package's program, without its version.
func packageProgram(a arg) arg {
	if !a.lit || !strings.Contains(a.val[min(1, len(a.val)):], "@") && !strings.HasPrefix(a.val, "@") {
		return a
	}
	pkg := a.val
	if i := strings.LastIndexByte(pkg, '@'); i > 0 {
		pkg = pkg[:i] // the version
	}
	prog, ok := packagePrograms[pkg]
	if !ok {
		prog = pkg[strings.LastIndexByte(pkg, '/')+1:] // @scope/tool: tool
	}
	if prog == "" || strings.ContainsAny(prog, ":@") {
		return a // github:user/repo, a URL: no program the detector knows
	}
	a.val, a.exact = prog, -1
	return a
}

// imagePrograms names the program of images whose name is not it.
var imagePrograms = map[string]string{"aws-cli": "aws", "azure-cli": "az", "cloud-sdk": "gcloud", "google-cloud-cli": "gcloud"}

// runImage judges the command a container run of the image c.args[i]
// runs: its arguments, or the image's program with them when the first
// argument is not a program (docker run --rm bitnami/kubectl delete ns
// shop runs kubectl delete ns shop). A fresh container is not the host:
// only programs whose harm reaches beyond it (the packs' tools, database
// clients) are judged; docker run alpine rm -rf / harms nothing.
func (w *walker) runImage(c *command, i int) {
	img, rest := c.args[i], c.args[i+1:]
	if !img.lit || len(rest) == 0 || !rest[0].lit {
		return
	}
	words, name := rest, rest[0].val
	if !knownProgram(name) {
		name = img.val
		name, _, _ = strings.Cut(name, "@")
		name = name[strings.LastIndex(name, "/")+1:]
		name, _, _ = strings.Cut(name, ":")
		if p, ok := imagePrograms[name]; ok {
			name = p
		}
		prog := img
		prog.val, prog.exact = name, -1
		words = append([]arg{prog}, rest...)
	}
	if slices.ContainsFunc(c.args[:i], func(a arg) bool {
		return a.lit && (a.val == "--volumes-from" || strings.HasPrefix(a.val, "--volumes-from="))
	}) {
		// another container's volumes, at the paths it has them: judged
		// as the host's own paths
		w.run(words, c.stdin, c.sp, joinVia(c.via, c.name+" "+img.val), false)
		return
	}
	if mounts := scratchVolumesOut(c, containerMounts(stableArgs(c, c.args[:i]))); len(mounts) > 0 {
		// what the container does to a mounted path it does to the host's
		// (docker run -v pgdata:/data alpine sh -c 'rm -rf /data/*'): the
		// command is judged with the mount points written as their sources
		w.run(hostPaths(words, mounts), c.stdin, c.sp, joinVia(c.via, c.name+" "+img.val), false)
		return
	}
	if shells[name] || interpreterLang(name) != langShell {
		// a shell or an interpreter: what it does to the container's own
		// files stays there, but code it fetches and runs, a shell it
		// wires to the network, or a cluster or cloud it reaches does not
		n := len(w.d.findings)
		w.run(words, c.stdin, c.sp, joinVia(c.via, c.name+" "+img.val), false)
		kept := slices.DeleteFunc(w.d.findings[n:], func(f finding) bool {
			r, _ := lookupRule(f.rule)
			return f.hostOnly || r.fixed || f.rule == ruleInlineCode
		})
		w.d.findings = w.d.findings[:n+len(kept)]
		return
	}
	if packTools[canonical(name)] == nil && sqlClients[name] == nil {
		return // a host tool: its harm stays in the container
	}
	w.run(words, c.stdin, c.sp, joinVia(c.via, c.name+" "+img.val), false)
}

// scratchVolumesOut drops from mounts the named volumes c's chain made
// (docker volume create ci-$$ && docker run -v ci-$$:/w ... && docker
// volume rm ci-$$), or made earlier under a throwaway name: their data is
// the script's own, not a service's.
func scratchVolumesOut(c *command, mounts []mount) []mount {
	return slices.DeleteFunc(mounts, func(m mount) bool {
		name, ok := strings.CutPrefix(m.src, dockerVolumes+"/")
		if !ok || strings.Contains(name, "/") {
			return false
		}
		own := func(r created) bool {
			if _, bound := r.pairs["-o"]; bound || r.pairs["--opt"] != "" || r.pairs["--driver"] != "" || r.pairs["-d"] != "" {
				return false // a volume bound to a host path or an NFS export holds that data
			}
			return (r.prog == "docker" || r.prog == "podman" || r.prog == "nerdctl") && slices.Equal(r.prefix, []string{"volume"}) && r.name == name
		}
		return slices.ContainsFunc(c.scratch, own) || slices.ContainsFunc(c.earlier, func(r created) bool { return own(r) && throwawayName(name) })
	})
}

// mount is a host path (or a named volume's directory) and where a
// container sees it.
type mount struct{ src, dst string }

// dockerVolumes is where the engine keeps its named volumes: each child is
// one volume's data.
const dockerVolumes = "/var/lib/docker/volumes"

// apptainerBinds reads the -B/--bind (SRC[:DST[:OPTS]], comma-separated)
// and --mount type=bind options of an apptainer or singularity command.
func apptainerBinds(args []arg) []mount {
	var out []mount
	for i, a := range args {
		name, val, eq := strings.Cut(a.val, "=")
		if !a.lit || name != "-B" && name != "--bind" && name != "--mount" {
			continue
		}
		if !eq {
			if i+1 >= len(args) {
				break
			}
			val = args[i+1].val
		}
		if name == "--mount" {
			src, dst := mountSpec(val)
			if src != "" && strings.HasPrefix(dst, "/") {
				out = append(out, mount{src: src, dst: strings.TrimSuffix(dst, "/")})
			}
			continue
		}
		for spec := range strings.SplitSeq(val, ",") {
			parts := strings.Split(spec, ":")
			src, dst := parts[0], parts[0]
			if len(parts) > 1 {
				dst = parts[1]
			}
			if src != "" && strings.HasPrefix(dst, "/") && dst != "/" {
				out = append(out, mount{src: src, dst: strings.TrimSuffix(dst, "/")})
			}
		}
	}
	return out
}

// mountSpec reads a --mount value (type=bind,src=/x,dst=/y): its source and
// target.
func mountSpec(v string) (src, dst string) {
	for kv := range strings.SplitSeq(v, ",") {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "source", "src":
			src = val
		case "target", "dst", "destination":
			dst = val
		}
	}
	return src, dst
}

// containerMounts reads the -v/--volume and --mount options of a docker
// run: host paths as written, named volumes as their directory under
// dockerVolumes. The container's root (dst /) is not translated.
func containerMounts(opts []arg) []mount {
	var out []mount
	add := func(src, dst string) {
		dst = strings.TrimSuffix(dst, "/")
		if src == "" || dst == "" || !strings.HasPrefix(dst, "/") {
			return
		}
		if !strings.ContainsAny(src[:1], "/.~$") {
			src = dockerVolumes + "/" + src // a named volume
		}
		if src = strings.TrimSuffix(src, "/"); src == "" {
			src = "/" // the host's root
		}
		out = append(out, mount{src: src, dst: dst})
	}
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		if !a.lit {
			continue
		}
		v, ok := "", false
		switch {
		case a.val == "-v" || a.val == "--volume" || a.val == "--mount":
			if i+1 < len(opts) && opts[i+1].lit {
				v, ok = opts[i+1].val, true
				i++
			}
		case strings.HasPrefix(a.val, "--volume=") || strings.HasPrefix(a.val, "--mount=") || strings.HasPrefix(a.val, "-v") && len(a.val) > 2:
			_, v, ok = strings.Cut(a.val, "=")
			if strings.HasPrefix(a.val, "-v") && !strings.HasPrefix(a.val, "--") {
				v, ok = a.val[2:], true
			}
		}
		if !ok {
			continue
		}
		if strings.Contains(v, "target=") || strings.Contains(v, "dst=") || strings.Contains(v, "destination=") || strings.Contains(v, "source=") || strings.Contains(v, "src=") {
			add(mountSpec(v))
			continue
		}
		if len(v) > 2 && v[1] == ':' && (v[2] == '\\' || v[2] == '/') {
			continue // C:\:C:\host: a Windows host's drive (the rd /s model's)
		}
		parts := strings.Split(v, ":")
		if len(parts) >= 2 {
			add(parts[0], parts[1])
		}
	}
	return out
}

// hostPaths writes, in each literal word, a mount point's paths as the
// host paths they are (the longest mount point first).
func hostPaths(words []arg, mounts []mount) []arg {
	slices.SortFunc(mounts, func(a, b mount) int { return len(b.dst) - len(a.dst) })
	out := make([]arg, len(words))
	for i, a := range words {
		out[i] = a
		if !a.lit {
			continue
		}
		v := a.val
		for _, m := range mounts {
			v = replacePathPrefix(v, m.dst, m.src)
		}
		if v != a.val {
			out[i].val, out[i].exact = v, -1
		}
	}
	return out
}

// replacePathPrefix replaces dst where it starts a path in s (after a
// space, quote, =, ( or the start, and followed by /, the end, a space,
// a quote, * or a shell separator).
func replacePathPrefix(s, dst, src string) string {
	var b strings.Builder
	for {
		at := strings.Index(s, dst)
		if at < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := at + len(dst)
		before := at == 0 || strings.ContainsRune(" \t\n\"'=(:", rune(s[at-1]))
		after := end == len(s) || strings.ContainsRune("/ \t\n\"'*;)|&", rune(s[end]))
		b.WriteString(s[:at])
		if before && after {
			b.WriteString(src)
		} else {
			b.WriteString(dst)
		}
		s = s[end:]
	}
}

// runScript judges the script a literal argument holds: with ScriptRe,
// every match's first non-empty group.
func (t *packTool) runScript(w *walker, c *command, a arg, via string) {
	if !a.lit {
		return
	}
	if t.scriptRe == nil {
		w.runCode(c, t.lang, argCode(a), via, c.sp, nil, false)
		return
	}
	if t.scriptDyn != nil && t.scriptDyn.MatchString(a.val) {
		w.d.add(w.f, ruleUnresolved, c.name+" runs a command built at run time", via, c.sp)
	}
	for _, m := range t.scriptRe.FindAllStringSubmatch(a.val, maxInputs) {
		var parts []string // the groups that matched: entry: CMD and its args: [...]
		for _, g := range m[1:] {
			if g != "" {
				parts = append(parts, g)
			}
		}
		script := strings.Join(parts, " ")
		for _, r := range t.scriptSubst {
			script = r.re.ReplaceAllString(script, r.to)
		}
		if strings.TrimSpace(script) == "" {
			continue
		}
		if t.ScriptLenient {
			if _, err := parse(script); err != nil {
				continue
			}
		}
		s := a
		s.val, s.exact = script, -1
		w.runCode(c, t.lang, argCode(s), via, c.sp, nil, false) // a recipe's language: shell unless the tool says (rake's Rakefile is Ruby)
	}
}

// unfoldedScripts runs the native programs of a PowerShell or cmd line as
// it reads once unfolded (psUnfold): a for /f loop's body on its command's
// output, a command called by its name as a string.
func (t *packTool) unfoldedScripts(w *walker, c *command) {
	var words []string
	for _, a := range c.args {
		if !a.lit {
			return
		}
		words = append(words, a.val)
	}
	line := c.name + " " + strings.Join(words, " ")
	if n := psUnfold(line); n != line {
		t.runScript(w, c, arg{val: n, lit: true, pos: c.sp.start, end: c.sp.end, exact: -1}, c.name)
	}
}

// withHomePaths returns c with each code argument that joins the home
// directory with literal parts (File.join(Dir.home, ".ssh", "id_rsa"))
// added as the path it makes (~/.ssh/id_rsa), for the paths pack's rules.
func withHomePaths(c *command) *command {
	var extra []arg
	for _, a := range c.args {
		if a.lit {
			if joined, ok := homeJoined(a.val); ok {
				extra = append(extra, arg{val: joined, lit: true, exact: -1})
			}
			if strings.Contains(a.val, homeMarker) && interpreterLang(c.name) != langShell {
				// python3 -c "shutil.rmtree('$HOME/Documents')": the shell
				// put the home directory into the code, a path there
				extra = append(extra, arg{val: homeInCode(a.val, false), lit: true, exact: -1})
			}
		}
	}
	if c.stdin.known && interpreterLang(c.name) != langShell {
		// python3 - <<EOF with $HOME in it: the shell's expansion, or
		// os.path.expandvars's
		if t := homeInCode(c.stdin.text, true); t != c.stdin.text {
			extra = append(extra, arg{val: t, lit: true, exact: -1})
		}
	}
	if extra == nil {
		return c
	}
	cc := *c
	cc.args = append(slices.Clone(c.args), extra...)
	return &cc
}

// withText returns c with its whole line (Joined) and its decoded
// -EncodedCommand scripts (Encoded) added as arguments, for matching.
func (t *packTool) withText(c *command) *command {
	cc := *c
	cc.args = slices.Clone(c.args)
	var words []string
	for i, a := range c.args {
		v := strings.ReplaceAll(a.val, homeMarker, "$HOME") // the shell expanded it: the home directory
		if !a.lit {
			v = a.src
		}
		words = append(words, v)
		if a.lit && i+1 < len(c.args) && slices.ContainsFunc(t.Encoded, func(o string) bool { return strings.EqualFold(o, a.val) }) {
			if text, ok := decodeUTF16Base64(c.args[i+1].val); ok {
				cc.args = append(cc.args, arg{val: text, lit: true, exact: -1})
				if n := psUnfold(text); n != text {
					cc.args = append(cc.args, arg{val: n, lit: true, exact: -1})
				}
			}
		}
		if f, ok := t.fileOperand(c.args, i); ok {
			if file, ok := c.files[fileKey(f)]; ok && file.s.known {
				cc.args = append(cc.args, arg{val: file.s.text, lit: true, exact: -1})
			} else if ok && file.s.shape != "" {
				cc.args = append(cc.args, arg{val: file.s.shape, lit: true, exact: -1}) // built by jq from a literal filter
			}
		}
	}
	ps := psColonParams
	if !powershellProgram(c.name) {
		ps = func(s string) string { return s } // wbadmin -version:03/31/2024 is cmd's own form
	}
	// a cmdlet called by its name with -WhatIf previews the whole call
	// (Stop-Service X -WhatIf); elsewhere a preview covers the script word
	// it is in (pwsh -c '...'), and to a native program (cmd /c rd ...
	// -WhatIf) a bare -WhatIf is only a word
	cmdlet := psCmdletName.MatchString(c.name)
	if t.pack == "windows" {
		// a PowerShell script's removals of what it made itself
		for i := range cc.args {
			if v := cc.args[i].val; cc.args[i].lit && len(v) > 8 {
				cc.args[i].val = ps(psDropPreviews(psDropScratch(v)))
			}
		}
		for i, w := range words {
			if w = psDropScratch(w); !cmdlet {
				w = psDropPreviews(w)
			}
			words[i] = w
		}
	}
	if t.Joined {
		line := c.name + " " + strings.Join(words, " ")
		if t.pack == "windows" {
			if cmdlet {
				line = psDropPreviews(line)
			}
			line = ps(line)
		}
		cc.args = append(cc.args, arg{val: line, lit: true, exact: -1})
		if t.pack == "windows" {
			if b := psBackslashes(line); b != line {
				cc.args = append(cc.args, arg{val: b, lit: true, exact: -1}) // "$HOME/.ssh/id_rsa" is $HOME\.ssh\id_rsa
			}
			// as written: the backslashes sh would have taken (reg delete
			// HKCU\Software, type %USERPROFILE%\.ssh\id_rsa unquoted)
			raw := make([]string, len(c.args))
			for i, a := range c.args {
				w := psDropScratch(strings.ReplaceAll(winAsWritten(a), homeMarker, "$HOME"))
				if !cmdlet {
					w = psDropPreviews(w)
				}
				raw[i] = w
			}
			rawLine := c.name + " " + strings.Join(raw, " ")
			if cmdlet {
				rawLine = psDropPreviews(rawLine)
			}
			if r := ps(rawLine); r != line {
				cc.args = append(cc.args, arg{val: r, lit: true, exact: -1})
			}
		}
		if len(t.Encoded) > 0 {
			if n := psUnfold(line); n != line {
				cc.args = append(cc.args, arg{val: n, lit: true, exact: -1})
			}
		}
	}
	return &cc
}

var (
	// psConcat is two adjacent PowerShell string literals joined by +.
	psConcat = regexp.MustCompile(`"([^"` + "`" + `$]*)"\s*\+\s*"([^"` + "`" + `$]*)"|'([^']*)'\s*\+\s*'([^']*)'|"([^"` + "`" + `$]*)"\s*\+\s*'([^']*)'|'([^']*)'\s*\+\s*"([^"` + "`" + `$]*)"`)
	// psConcatVar is a string literal joined with a variable, which reads
	// as the variable inside the string: "Remove-Item " + $env:USERPROFILE.
	psConcatVar = regexp.MustCompile(`"([^"` + "`" + `]*)"\s*\+\s*(\$(?:env:)?[A-Za-z_]\w*)\b`)
	// cmdCaret is cmd's escape character before a character it does not
	// need to escape: r^d /s /q runs rd.
	// cmdQuiet is cmd's @ before a command at a statement's start (not
	// echoed when it runs); elsewhere @ is PowerShell's (@p, @(...), @{}).
	cmdQuiet = regexp.MustCompile(`(?i)(^|[&|(;\n"]\s*|\bdo\s+|\belse\s+|(?:^|\s)/[ck]\s+)@+`)
	cmdCaret = regexp.MustCompile(`\^([A-Za-z0-9/\\:.%-])`)
	// cmdSet is cmd's set NAME=VALUE, its value running to the next & or
	// the end; cmdVarRef is a use of it, %NAME% or !NAME! (delayed), with
	// an optional substring :~START,LENGTH.
	cmdSet    = regexp.MustCompile(`(?i)\bset\s+"?([A-Za-z_]\w*)=([^&"\n]*)"?`)
	cmdVarRef = regexp.MustCompile(`[%!]([A-Za-z_]\w*)(?::~(-?\d+)(?:,(-?\d+))?)?[%!]`)
	// psBase64 is a literal decoded at run time: FromBase64String("...").
	psBase64 = regexp.MustCompile(`(?i)FromBase64String\(\s*["']([A-Za-z0-9+/=\s]+)["']\s*\)`)
	// psNestedEncoded is a PowerShell started inside the script with an
	// encoded script of its own: cmd /c "powershell -enc ...".
	psNestedEncoded = regexp.MustCompile(`(?i)\b(?:powershell|pwsh)(?:\.exe)?\b[^|&;\n]*?\s[-/](?:e|en|enc|ec|encodedcommand)\s+["']?([A-Za-z0-9+/]{8,}={0,2})`)
	// psModuleName is a cmdlet qualified by its module
	// (Microsoft.PowerShell.Management\Remove-Item): the cmdlet runs.
	psModuleName = regexp.MustCompile(`(?i)(^|[\s;|({&])(?:[A-Za-z][A-Za-z0-9]*\.)*[A-Za-z][A-Za-z0-9]*\\((?:` + psVerbs + `)-[A-Za-z])`)
	// psCallName is the call operator given a command's name as a string
	// or through Get-Command: & "Remove-Item" ..., & (gcm Remove-Item) ...
	psCallName = regexp.MustCompile(`(?i)[&.]\s*(?:"([A-Za-z][\w.-]*)"|'([A-Za-z][\w.-]*)'|\(\s*(?:(?:Get-Command|gcm)\s+)?["']?([A-Za-z][\w.-]*-[\w.-]*)["']?\s*\))`)
	// psAssign is a variable given a literal once: $p = 'C:\data'.
	psAssign = regexp.MustCompile(`\$([A-Za-z_]\w*)\s*=\s*(?:"([^"` + "`" + `$\n]*)"|'([^'\n]*)')\s*(?:;|$|\n|\})`)
	// cmdForF is cmd's loop over a command's output lines:
	// for /f ["options"] %i in ('CMD') do BODY.
	cmdForF = regexp.MustCompile(`(?i)\bfor\s+/f\s+(?:"[^"]*"\s+)?(%%?[A-Za-z])\s+in\s+\('([^']*)'\)\s+do\s+`)
	// psAlias is a PowerShell alias at a statement's start (sp HKLM:\...).
	psAlias = regexp.MustCompile(`(?i)(?:^|[;|{(&]\s*|\s-c(?:ommand)?\s+)(sp|rp|spps|spsv|sasv|mi|rni|clc|cli|gc|icm|saps|start)\s`)
	// psSetPositional is Set-ItemProperty PATH NAME VALUE, its parameters
	// given by position.
	psSetPositional = regexp.MustCompile(`(?i)\bSet-ItemProperty\s+(?:-Path\s+)?("[^"]*"|'[^']*'|[^-\s]\S*)\s+([^-\s]\S*)\s+([^-\s;|]\S*)`)
	// psParam is an abbreviated -Recurse or -Force (-r, -fo): PowerShell takes any
	// unambiguous prefix of a parameter's name.
	psParam = regexp.MustCompile(`(?i)(\s)-(r|rec|recu|recur|recurs|fo|for|forc)\b`)
)

// psQuotes are the typographic quotes PowerShell reads as ' and " (its
// tokenizer takes U+2018 to U+201B as single quotes and U+201C to U+201E
// as double), and psQuote writes them as those.
const psQuotes = "\u2018\u2019\u201a\u201b\u201c\u201d\u201e"

var psQuote = strings.NewReplacer("\u2018", "'", "\u2019", "'", "\u201a", "'", "\u201b", "'", "\u201c", `"`, "\u201d", `"`, "\u201e", `"`)

// psUnfold returns a PowerShell or cmd line as it runs once its literal
// disguises are undone, for matching: backtick escapes (in "...", `n is a
// newline; a backtick before any other letter is dropped: I`nv`oke), string
// literals joined with + ("Stop-" + "Computer"), and base64 literals
// decoded at run time ([Convert]::FromBase64String("...")), their text
// appended (UTF-16LE, as -EncodedCommand carries, or UTF-8).
func psUnfold(s string) string {
	if strings.ContainsAny(s, psQuotes) {
		s = psQuote.Replace(s) // ‘-WhatIf’ is a quoted string as '-WhatIf' is
	}
	if strings.Contains(s, "${") {
		s = psBracedEnv(s)
	}
	if !strings.ContainsAny(s, "`+&{=%^@") && !strings.Contains(s, "64") && !strings.Contains(s, " -") { // FromBase64String in any case
		return s // nothing to unfold: the common case, no copy
	}

	if low := strings.ToLower(s); strings.HasPrefix(low, "cmd ") || strings.HasPrefix(low, "cmd.exe ") || strings.HasPrefix(low, "/c ") ||
		strings.HasPrefix(low, "/k ") || strings.HasPrefix(low, "/v") {
		if strings.Contains(s, "^") {
			s = cmdCaret.ReplaceAllString(s, "$1") // cmd's escape: r^d is rd
		}
		s = cmdSetVars(s)
	}
	if strings.Contains(s, "@") {
		s = cmdQuiet.ReplaceAllString(s, "$1") // @rd /s /q C:\Users is rd /s /q C:\Users, not echoed
	}
	var b strings.Builder
	inDouble := false // `n, `r, `t are control characters only in "..."; elsewhere a backtick keeps the next letter (-Fo`rce is -Force)
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			inDouble = !inDouble
		}
		if s[i] != '`' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; {
		case !inDouble && c == '-' && (i == 1 || strings.IndexByte(" \t\n;({", s[i-2]) >= 0):
			b.WriteString(`"-"`) // `-WhatIf is a string, not a parameter: kept quoted
		case !inDouble:
			b.WriteByte(c)
		case c == 'n' || c == 'r':
			b.WriteByte('\n')
		case c == 't':
			b.WriteByte(' ')
		case c == '0' || c == 'a' || c == 'b' || c == 'e' || c == 'f' || c == 'v':
		default:
			b.WriteByte(c)
		}
	}
	out := b.String()
	for range 64 {
		n := psConcat.ReplaceAllString(out, `"$1$2$3$4$5$6$7$8"`)
		n = psConcatVar.ReplaceAllString(n, `"$1$2"`)
		if n == out {
			break
		}
		out = n
	}
	out = psNames(out)
	out = cmdLoops(out)
	for _, m := range psNestedEncoded.FindAllStringSubmatch(out, 8) {
		if text, ok := decodeUTF16Base64(m[1]); ok {
			out += "\n" + text
		}
	}
	for _, m := range psBase64.FindAllStringSubmatch(out, 8) {
		raw, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(m[1]), ""))
		if err != nil {
			continue
		}
		if text, ok := decodeUTF16Base64(m[1]); ok && utf16Text(raw) {
			out += "\n" + text
		} else {
			out += "\n" + string(raw)
		}
	}
	return out
}

// cmdLoops writes cmd's for /f loops over a command's output as the body
// run on that output: for /f %i in ('docker ps -aq') do docker rm -f %i
// becomes do docker rm -f "$(docker ps -aq)", which the rules read as a removal
// of every listed item.
func cmdLoops(s string) string {
	if strings.Contains(s, "%") {
		s = cmdForSet.ReplaceAllStringFunc(s, func(m string) string {
			g := cmdForSet.FindStringSubmatch(m)
			var bodies []string
			for _, item := range strings.FieldsFunc(g[3], func(r rune) bool { return r == ' ' || r == ',' || r == ';' }) {
				if cmdForRecursive.MatchString(m) {
					root := strings.Trim(g[1], `"`)
					if root == "" {
						root = "."
					}
					item = strings.TrimSuffix(root, `\`) + `\**\` + item // every directory of the tree
				}
				bodies = append(bodies, strings.ReplaceAll(g[4], g[2], item))
			}
			return strings.Join(bodies, " & ") // for %x in (C D) do format %x: runs format C: & format D:
		})
	}
	for range 4 {
		m := cmdForF.FindStringSubmatchIndex(s)
		if m == nil {
			return s
		}
		v, src := s[m[2]:m[3]], s[m[4]:m[5]]
		body := s[m[1]:]
		end := len(body)
		if i := strings.IndexAny(body, "\"&|\n"); i >= 0 {
			end = i
		}
		body = strings.ReplaceAll(body[:end], v, `"$(`+src+`)"`) + body[end:]
		s = s[:m[0]] + "do " + body // the header's do stays: what follows it is a command
	}
	return s
}

// psNames undoes the indirections of names in a PowerShell line: a
// command called by its name as a string (& "Remove-Item"), a variable
// given a literal once and used after ($p = 'C:\data'; Remove-Item $p),
// a script block's first command written against its brace ({Remove-Item),
// and -Recurse and -Force abbreviated (-Recu, -Fo).
func psNames(s string) string {
	s = psIndirect(s)
	s = psModuleName.ReplaceAllString(s, "$1$2")
	s = psCallName.ReplaceAllString(s, "& $1$2$3")
	s = psAlias.ReplaceAllStringFunc(s, func(m string) string {
		i := len(m) - 1
		for i > 0 && m[i-1] != ' ' && m[i-1] != ';' && m[i-1] != '|' && m[i-1] != '{' && m[i-1] != '(' && m[i-1] != '&' {
			i--
		}
		return m[:i] + psAliases[strings.ToLower(strings.TrimSpace(m[i:]))] + " "
	})
	s = strings.ReplaceAll(s, "{", "{ ")
	s = psSetPositional.ReplaceAllString(s, "Set-ItemProperty -Path $1 -Name $2 -Value $3")
	s = psParam.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(strings.ToLower(m[2:]), "r") {
			return m[:1] + "-Recurse"
		}
		return m[:1] + "-Force"
	})
	// Variables given only literals: in a script without blocks each use
	// sees the latest assignment before it; with blocks (if, foreach),
	// only a variable given one literal once is replaced.
	assigns := map[string]int{}
	for _, m := range psAssignAny.FindAllStringSubmatch(s, -1) {
		assigns[strings.ToLower(m[1]+m[4])]++
	}
	lits := psAssign.FindAllStringSubmatchIndex(s, 16)
	count := map[string]int{}
	for _, m := range lits {
		count[strings.ToLower(s[m[2]:m[3]])]++
	}
	straight := !strings.Contains(s, "{")
	for name, n := range count {
		if assigns[name] != n || n > 1 && !straight {
			continue // also given a computed value, or given several in blocks
		}
		use := regexp.MustCompile(`(?i)\$` + regexp.QuoteMeta(name) + `\b([^\w:=]|$)`)
		var b strings.Builder
		last, val := 0, ""
		for _, m := range lits {
			if !strings.EqualFold(s[m[2]:m[3]], name) {
				continue
			}
			b.WriteString(psReplaceUses(use, s[last:m[0]], name, val))
			b.WriteString(s[m[0]:m[1]])
			last = m[1]
			val = psLiteral(s, m)
		}
		if n == 1 && !straight {
			b.Reset()
			b.WriteString(psReplaceUses(use, s, name, val))
		} else {
			b.WriteString(psReplaceUses(use, s[last:], name, val))
		}
		s = b.String()
		lits = psAssign.FindAllStringSubmatchIndex(s, 16)
	}
	return s
}

// psAliases are the cmdlets PowerShell's built-in aliases stand for.
var psAliases = map[string]string{"sp": "Set-ItemProperty", "rp": "Remove-ItemProperty", "spps": "Stop-Process", "spsv": "Stop-Service",
	"sasv": "Start-Service", "mi": "Move-Item", "rni": "Rename-Item", "clc": "Clear-Content", "cli": "Clear-Item", "gc": "Get-Content",
	"icm": "Invoke-Command", "saps": "Start-Process", "start": "Start-Process"}

// psLiteral is the value of the literal assignment match m in s.
func psLiteral(s string, m []int) string {
	for g := 2; g <= 3; g++ {
		if m[2*g] >= 0 {
			return s[m[2*g]:m[2*g+1]]
		}
	}
	return ""
}

// psReplaceUses replaces the uses of $name in s by val ("" leaves them).
func psReplaceUses(use *regexp.Regexp, s, name, val string) string {
	if val == "" {
		return s
	}
	return use.ReplaceAllStringFunc(s, func(m string) string {
		return val + m[1+len(name):]
	})
}

// utf16Text reports whether b looks like UTF-16LE text of the ASCII range
// (every second byte zero).
func utf16Text(b []byte) bool {
	if len(b) < 2 || len(b)%2 != 0 {
		return false
	}
	for i := 1; i < len(b); i += 2 {
		if b[i] != 0 {
			return false
		}
	}
	return true
}

// fileOperand returns the file args[i] names as the value of one of the
// tool's Files options (-f FILE, /s FILE, --opt=file://FILE), if it does.
func (t *packTool) fileOperand(args []arg, i int) (string, bool) {
	a := args[i]
	if len(t.Files) == 0 || !a.lit {
		return "", false
	}
	v := ""
	switch name, val, inline := strings.Cut(a.val, "="); {
	case slices.ContainsFunc(t.Files, func(o string) bool { return strings.EqualFold(o, a.val) }) && i+1 < len(args) && args[i+1].lit:
		v = args[i+1].val
	case inline && slices.ContainsFunc(t.Files, func(o string) bool { return strings.EqualFold(o, name) }):
		v = val
	default:
		return "", false
	}
	for _, scheme := range []string{"file://", "fileb://"} {
		v = strings.TrimPrefix(v, scheme)
	}
	v = strings.TrimPrefix(v, "@")
	return v, v != ""
}

// decodeUTF16Base64 decodes a PowerShell -EncodedCommand value.
func decodeUTF16Base64(s string) (string, bool) {
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b)%2 != 0 {
		return "", false
	}
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = uint16(b[2*i]) | uint16(b[2*i+1])<<8
	}
	return string(utf16.Decode(u)), true
}

// scriptSubst is one of a tool's ScriptSubst pairs, compiled.
type scriptSubst struct {
	re *regexp.Regexp
	to string
}

// scriptFiles judges the recipe file a tool reads (ScriptFile, else
// ScriptDefault) when the command wrote it earlier with known content.
func (t *packTool) scriptFiles(w *walker, c *command) {
	if t.scriptRe == nil || len(t.ScriptFile) == 0 && len(t.ScriptDefault) == 0 && !t.ScriptOperand {
		return
	}
	var files []arg
	for i, a := range c.args {
		name, val, inline := strings.Cut(a.val, "=")
		switch {
		case t.ScriptOperand && a.lit && !strings.HasPrefix(a.val, "-"):
			files = append(files, a)
		case !a.lit || !slices.Contains(t.ScriptFile, name):
		case inline:
			files = append(files, arg{val: val, lit: true, pos: a.pos, end: a.end, exact: -1})
		case i+1 < len(c.args):
			files = append(files, c.args[i+1])
		}
	}
	if len(files) == 0 {
		for _, name := range t.ScriptDefault {
			if strings.ContainsAny(name, "*?[") {
				files = append(files, w.writtenMatching(name, c.sp)...) // *.tf: every file of the directory the tool reads
				continue
			}
			files = append(files, arg{val: name, lit: true, pos: c.sp.start, end: c.sp.end, exact: -1})
		}
	}
	for _, f := range files {
		wr, ok := w.writtenScript(f)
		if !ok || !wr.s.known {
			continue
		}
		t.runScript(w, c, arg{val: wr.s.text, lit: true, pos: c.sp.start, end: c.sp.end, exact: -1}, c.name+" "+f.val)
	}
}

// cmdSetVars replaces, in a cmd line, the uses of variables the line set
// with a literal (set x=rd /s /q&& !x! DIR) by their values, substrings
// (!a:~1,2!) taken: the command cmd runs once it expands them.
func cmdSetVars(s string) string {
	sets := cmdSet.FindAllStringSubmatchIndex(s, 16)
	if len(sets) == 0 {
		return s
	}
	vals := map[string]string{}
	for _, m := range sets {
		vals[strings.ToLower(s[m[2]:m[3]])] = strings.TrimRight(s[m[4]:m[5]], " ")
	}
	return cmdVarRef.ReplaceAllStringFunc(s, func(ref string) string {
		g := cmdVarRef.FindStringSubmatch(ref)
		v, ok := vals[strings.ToLower(g[1])]
		if !ok {
			return ref
		}
		if g[2] != "" {
			start, _ := strconv.Atoi(g[2])
			if start < 0 {
				start += len(v)
			}
			start = max(0, min(start, len(v)))
			end := len(v)
			if g[3] != "" {
				n, _ := strconv.Atoi(g[3])
				if n >= 0 {
					end = min(len(v), start+n)
				} else {
					end = max(start, len(v)+n)
				}
			}
			v = v[start:end]
		}
		return v
	})
}

// psRootedPath is a Windows path written with forward slashes from a root
// PowerShell and cmd expand: $env:APPDATA/Code/User, $HOME/.ssh, ~/.aws,
// C:/Users, %USERPROFILE%/Documents.
var psRootedPath = regexp.MustCompile(`(?i)(\$\{?env:\w+\}?|\$HOME\b|(?:^|[\s"'(=,])~|\b[A-Za-z]:|%\w+%)((?:/[^\s"';|&)/]*)+)`)

// psBackslashes writes the rooted paths of a PowerShell or cmd line with
// backslashes, as the rules read Windows paths.
func psBackslashes(line string) string {
	if !strings.Contains(line, "/") {
		return line
	}
	return psRootedPath.ReplaceAllStringFunc(line, func(m string) string {
		i := strings.IndexByte(m, '/')
		return m[:i] + strings.ReplaceAll(m[i:], "/", `\`)
	})
}
