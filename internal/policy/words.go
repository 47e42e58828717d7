package policy

import (
	"path"
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// homeMarker stands for an unexpanded $HOME or ${HOME} in a resolved word.
// A NUL byte cannot occur in a real argument, so a quoted '$HOME' (the
// literal text) can never be mistaken for it.
const homeMarker = "\x00HOME"

// Bounds on expansion work per word and per command. Past them the command
// is too-complex.
const (
	maxAlts   = maxValues + 1 // alternative expansions of one word: every value of a variable, and unknown
	maxCombos = 16            // alternative argument lists of one command
	maxFields = 64            // words brace expansion may produce from one word
)

// taint says where the unknown part of a word comes from.
type taint uint16

const (
	taintUnknown  taint = 1 << iota // a variable or output the detector cannot know
	taintDownload                   // output of a program that downloads (curl, wget)
	taintDecoded                    // output of a decoder (base64 -d, xxd -r)
	taintProc                       // a <(...) path: the word names a stream of generated content
	// taintEnv is a variable the script never assigns and the job does not
	// set: the worker's environment, written by its operator, or unset.
	// The submitter cannot choose it, but it may be empty ("$DIR/"* is /*).
	taintEnv
	// taintEnvSet is such a variable that cannot be empty there
	// (${DIR:?}, ${DIR:-build}): the operator's value, trusted.
	taintEnvSet
	// taintSecret is output that holds the environment's values (env,
	// printenv, set, /proc/self/environ), and what is made of it.
	taintSecret
	// taintCredential is output that names credential files found by name
	// (find / -name .netrc), and a word made of it.
	taintCredential
	// taintSQLGen is output of a command whose own words build destructive
	// SQL (select 'DROP TABLE ' || name ...): statements generated to be run.
	taintSQLGen
	// taintData is a database's dump (pg_dump, mysqldump, mongodump
	// --archive) or a shell history read out, and what is made of it
	// (gzip, base64, openssl enc).
	taintData
	// taintToken is an access token a CLI prints (gh auth token, gcloud
	// auth print-access-token), and what is made of it: sent anywhere but
	// to its issuer, it is a leak (see matchEnvSend).
	taintToken
	// taintEnvFile is the content of the project's secrets file (.env,
	// .env.production) read out, and what is made of it: the project's
	// own to read, a leak once sent to a network program.
	taintEnvFile
	// taintKeyList is a service's list of its keys or tokens, downloaded
	// from its HTTP API (GET /keys, /api-keys, /authorizations), and
	// taintVarList its list of secret variables (GET /env, /config-vars):
	// a filter that picks their values prints them.
	taintKeyList
	taintVarList
	// taintPulled is a secret store's values a CLI wrote to a file (vercel
	// env pull FILE, op inject -o FILE, sops -d --output FILE): printed,
	// the store's values reach the job's output.
	taintPulled
	// taintStored is a value a secret store's CLI printed (vault kv get,
	// op read) and what is made of it: handed to the program that needs
	// it, it is used as meant; printed, it reaches the job's output.
	taintStored
)

// arg is one word of a command after expansion and quote removal.
type arg struct {
	val   string // the value, with quotes removed; $HOME kept as homeMarker
	lit   bool   // the value is fully known without running anything
	taint taint  // where unknown parts come from; a literal may carry taintDecoded
	pos   int    // offset in the frame's source of the word it comes from
	end   int    // offset just past that word
	exact int    // offset in the source where val appears verbatim, or -1
	// tail is, for a word that is not fully known, its known end: the text
	// after its last unknown part ("/bin/tool" in $GOPATH/bin/tool).
	tail string
	// src is the word as written; expanded says a variable or command
	// substitution contributed to val. Details show src for those, so a
	// Reason never carries a variable's value.
	src      string
	expanded bool
	// home says a leading ~ in val is the home directory, however the
	// word was split: an array element a tilde was expanded in when the
	// array was assigned (a=(rm -rf ~/.ssh); "${a[@]}").
	home bool
}

// partial is one alternative expansion of a word in progress.
type partial struct {
	fields   []arg
	cur      strings.Builder
	lit      bool // cur is fully known
	taint    taint
	has      bool              // cur is a field even if empty ("")
	chosen   map[string]string // the value picked for each variable expanded so far
	known    int               // cur[known:] is known text after the last unknown part
	expanded bool              // a variable or substitution contributed to cur
	home     bool              // cur's leading ~ is the home (see arg.home)
	d        *detector         // charged for the text cur grows by
}

func newPartial(d *detector) *partial { return &partial{lit: true, d: d} }

func (p *partial) clone() *partial {
	p.d.charge(1, p.cur.Len()+argBytes*len(p.fields))
	c := &partial{fields: append([]arg(nil), p.fields...), lit: p.lit, taint: p.taint, has: p.has, known: p.known, expanded: p.expanded, home: p.home, d: p.d}
	c.cur.WriteString(p.cur.String())
	if p.chosen != nil {
		c.chosen = make(map[string]string, len(p.chosen)+1)
		for k, v := range p.chosen {
			c.chosen[k] = v
		}
	}
	return c
}

// add appends s to the current field; when split, the IFS characters in s
// separate fields, as for an unquoted expansion.
func (p *partial) add(s string, split bool, ifs string) {
	p.d.charge(0, len(s))
	if !split || ifs == "" {
		p.cur.WriteString(s)
		p.has = true
		return
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(ifs, s[i]) >= 0 {
			p.finish()
			continue
		}
		p.cur.WriteByte(s[i])
		p.has = true
	}
}

// finish closes the current field, if any.
func (p *partial) finish() {
	if !p.has && p.cur.Len() == 0 {
		return
	}
	p.d.charge(1, argBytes)
	a := arg{val: p.cur.String(), lit: p.lit, taint: p.taint, expanded: p.expanded, home: p.home}
	if !p.lit {
		a.tail = a.val[p.known:]
	}
	p.fields = append(p.fields, a)
	p.cur.Reset()
	p.lit, p.taint, p.has, p.known, p.expanded, p.home = true, 0, false, 0, false, false
}

func (p *partial) unknown(t taint) {
	p.lit, p.taint, p.has, p.known = false, p.taint|t, true, p.cur.Len()
}

// expander expands one word into alternative field lists.
type expander struct {
	w     *walker
	split bool   // unquoted expansions split into fields (false in assignments)
	ifs   string // the field separators
	alts  []*partial
	sp    span // the word, where a limit reached is reported
}

// fields expands a command word: brace expansion, parameter expansion with
// the variables assigned so far, quote removal and field splitting. It
// returns up to maxAlts alternative field lists. POSIX sh has no brace
// expansion, but /bin/sh may be bash: in a tree read as sh, a word with
// braces has both readings, the literal one first.
func (w *walker) fields(word *syntax.Word) [][]arg {
	words := []*syntax.Word{word}
	if split := *word; syntax.SplitBraces(&split) && w.braces(word, &split) { // a copy: the AST keeps its positions
		words = words[:0]
		for bw, err := range expand.BracesSeq(nil, &split) {
			if err != nil || len(words) == maxFields {
				break
			}
			words = append(words, bw)
		}
		if w.tree == ShellSh {
			all := append(w.expandWords(word, []*syntax.Word{word}), w.expandWords(word, words)...)
			if len(all) > maxAlts {
				w.limit(overAlts, wordSpan(word))
			}
			return all[:min(len(all), maxAlts)]
		}
	}
	return w.expandWords(word, words)
}

// expandWords expands the words brace expansion made of word.
func (w *walker) expandWords(word *syntax.Word, words []*syntax.Word) [][]arg {
	out := [][]arg{nil}
	for _, bw := range words {
		x := &expander{w: w, split: true, ifs: w.env.ifs(), alts: []*partial{newPartial(w.d)}, sp: wordSpan(word)}
		x.parts(bw.Parts, false)
		var next [][]arg
		for _, prefix := range out {
			for _, p := range x.alts {
				p.finish()
				for j := range p.fields {
					if strings.HasPrefix(p.fields[j].val, "~") && (j > 0 && !p.fields[j].home || literalTilde(bw)) {
						p.fields[j].val = "./" + p.fields[j].val // a directory named ~, not the home
					}
				}
				if len(next) < maxAlts {
					w.d.charge(1, argBytes*(len(prefix)+len(p.fields)))
					next = append(next, append(append([]arg(nil), prefix...), p.fields...))
				} else {
					w.limit(overAlts, x.sp)
				}
			}
		}
		out = next
	}
	exact := exactOffset(word)
	src := w.wordSource(word)
	for _, alt := range out {
		for i := range alt {
			alt[i].pos, alt[i].end, alt[i].exact, alt[i].src = int(word.Pos().Offset()), int(word.End().Offset()), -1, src
			if len(alt) == 1 && alt[i].lit {
				alt[i].exact = exact
			}
		}
	}
	return out
}

// value expands a word that is not split into fields (an assignment value,
// a redirection target, a here-string) into its alternative values.
func (w *walker) value(word *syntax.Word) []arg {
	x := &expander{w: w, alts: []*partial{newPartial(w.d)}, sp: wordSpan(word)}
	x.parts(word.Parts, false)
	out := make([]arg, 0, len(x.alts))
	exact := exactOffset(word)
	for _, p := range x.alts {
		a := arg{val: p.cur.String(), lit: p.lit, taint: p.taint, exact: -1, expanded: p.expanded,
			pos: int(word.Pos().Offset()), end: int(word.End().Offset()), src: w.wordSource(word)}
		if strings.HasPrefix(a.val, "~") && literalTilde(word) {
			a.val = "./" + a.val // a directory named ~, not the home
		}
		if !a.lit {
			a.tail = a.val[p.known:]
		}
		if a.lit {
			a.exact = exact
		}
		out = append(out, a)
	}
	return out
}

// wordSource returns a word's text in the frame's source.
func (w *walker) wordSource(word *syntax.Word) string {
	start, end := int(word.Pos().Offset()), int(word.End().Offset())
	if start < 0 || end > len(w.f.src) || start > end {
		return ""
	}
	return w.f.src[start:end]
}

// exactOffset returns the offset where a word's value appears verbatim in
// the source (a plain literal, '...' or "..." without escapes), or -1.
func exactOffset(word *syntax.Word) int {
	if len(word.Parts) != 1 {
		return -1
	}
	switch p := word.Parts[0].(type) {
	case *syntax.Lit:
		if !strings.Contains(p.Value, `\`) {
			return int(p.Pos().Offset())
		}
	case *syntax.SglQuoted:
		if !p.Dollar {
			return int(p.Pos().Offset()) + 1
		}
	case *syntax.DblQuoted:
		if len(p.Parts) == 0 {
			return int(p.Pos().Offset()) + 1
		}
		if lit, ok := p.Parts[0].(*syntax.Lit); ok && len(p.Parts) == 1 && !strings.Contains(lit.Value, `\`) {
			return int(lit.Pos().Offset())
		}
	}
	return -1
}

func (x *expander) parts(parts []syntax.WordPart, quoted bool) {
	for _, part := range parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s := unescapeBare(p.Value)
			if quoted {
				s = unescapeDouble(p.Value)
			}
			x.each(func(a *partial) { a.add(s, false, "") })
		case *syntax.SglQuoted:
			s := p.Value
			if p.Dollar {
				s = decodeANSIC(s)
			}
			x.each(func(a *partial) { a.add(s, false, "") })
		case *syntax.DblQuoted:
			x.each(func(a *partial) { a.has = true })
			x.parts(p.Parts, true)
		case *syntax.ParamExp:
			x.param(p, quoted)
			x.each(func(a *partial) { a.expanded = true })
		case *syntax.CmdSubst:
			out := x.w.output(p.Stmts)
			if out.known {
				// a printer writes the home directory as $HOME (its text may
				// be run as code); as a word's value it is the home directory
				// (fails closed on a literal '$HOME')
				text := strings.ReplaceAll(strings.TrimRight(out.text, "\n"), "$HOME", homeMarker)
				x.branch(known(text), !quoted, 0)
				x.each(func(a *partial) { a.taint |= out.taint & taintDecoded }) // known, but decoded
			} else if out.cwd && x.w.env.cwd.env {
				x.branchVar("PWD", x.w.env.cwd, !quoted, taintEnv) // as "$PWD"
			} else {
				x.branch(unknownValue, !quoted, out.taint|taintUnknown)
			}
			x.each(func(a *partial) { a.expanded = true })
		case *syntax.ProcSubst:
			out := x.w.output(p.Stmts)
			x.branch(unknownValue, false, out.taint|taintUnknown|taintProc)
		default: // $((...)), extended globs, zsh forms
			x.branch(unknownValue, false, taintUnknown)
		}
	}
}

func (x *expander) each(f func(*partial)) {
	for _, a := range x.alts {
		f(a)
	}
}

// param expands $name, ${name}, the default-value forms and ${!name}
// when name holds one known variable name; anything else (length, arrays,
// pattern edits) is unknown.
func (x *expander) param(p *syntax.ParamExp, quoted bool) {
	if p.Excl && p.Param != nil && p.Names == 0 && p.Index == nil && arraysTracked(x.w.f) {
		// bash's indirection: v=HOME; ${!v} is $HOME (not with read -a,
		// namerefs and the like about, see arrayChangers)
		if v := x.w.env.get(p.Param.Value); !v.unknown && len(v.vals) == 1 && isName(v.vals[0]) {
			q := *p
			q.Excl, q.Param = false, &syntax.Lit{ValuePos: p.Param.ValuePos, ValueEnd: p.Param.ValueEnd, Value: v.vals[0]}
			x.param(&q, quoted)
			return
		}
	}
	if v, sep, ok := x.arrayElems(p, quoted); ok {
		x.words(v, sep, !quoted && x.split, true)
		return
	}
	if p.Param == nil || p.Excl || p.Length || p.Width || p.IsSet || p.Index != nil ||
		p.Slice != nil || p.Repl != nil || p.Names != 0 || len(p.Modifiers) > 0 ||
		p.NestedParam != nil || p.Flags != nil {
		x.branch(unknownValue, false, taintUnknown)
		return
	}
	name := p.Param.Value
	if (name == "@" || name == "*") && x.w.env.argsKnown && p.Exp == nil {
		x.positional(quoted && name == "@", !quoted && x.split)
		return
	}
	v := x.w.env.get(name)
	t := taintUnknown
	if v.env {
		t = taintEnv
	}
	if p.Exp != nil {
		unknownCwd := name == "PWD" && v.unknown
		v = x.paramOp(v, p.Exp)
		if unknownCwd && (p.Exp.Op == syntax.RemSmallSuffix || p.Exp.Op == syntax.RemLargeSuffix) && p.Exp.Word != nil &&
			strings.HasPrefix(p.Exp.Word.Lit(), "/") {
			v = union(v, known("..")) // ${PWD%/*}: the directory above the working one
		}
		if p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull {
			x.w.setVar(name, v, false) // ${U:=default} assigns what it expands to
		}
		if v.over != "" {
			x.w.limit(v.over, x.sp)
		}
		switch {
		case !v.env:
			t = taintUnknown
		case p.Exp.Op == syntax.ErrorUnsetOrNull || p.Exp.Op == syntax.DefaultUnsetOrNull || p.Exp.Op == syntax.AssignUnsetOrNull:
			t = taintEnvSet // the empty case aborts or takes the default
		}
		name = "" // the value depends on more than the variable
	}
	t |= v.carried
	x.branchVar(name, v, !quoted, t)
}

// unknownChoice marks a variable whose unknown value a partial picked.
const unknownChoice = "\x00unknown"

// branchVar is branch for a variable: a variable expanded twice in one
// word has the same value both times, so each alternative keeps its pick.
func (x *expander) branchVar(name string, v value, split bool, t taint) {
	if name == "" || len(v.vals)+boolInt(v.unknown) < 2 {
		x.branch(v, split, t)
		return
	}
	var next []*partial
	for _, a := range x.alts {
		if s, ok := a.chosen[name]; ok {
			if s == unknownChoice {
				a.unknown(t)
			} else {
				a.add(s, split, x.ifs)
			}
			next = append(next, a)
			continue
		}
		saved := x.alts
		x.alts = []*partial{a}
		x.branch(v, split, t)
		for i, c := range x.alts {
			if c.chosen == nil {
				c.chosen = make(map[string]string)
			}
			switch {
			case i < len(v.vals):
				c.chosen[name] = v.vals[i]
			default:
				c.chosen[name] = unknownChoice
			}
		}
		next = append(next, x.alts...)
		x.alts = saved
	}
	x.alts = x.cut(next)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (x *expander) paramOp(v value, exp *syntax.Expansion) value {
	word := func() value {
		if exp.Word == nil {
			return known("")
		}
		out := value{}
		for _, a := range x.w.value(exp.Word) {
			if a.lit {
				out.vals = append(out.vals, a.val)
			} else {
				out.unknown = true
			}
		}
		return out
	}
	switch exp.Op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		set := value{unknown: v.unknown, env: v.env}
		for _, s := range v.vals {
			if s != "" {
				set.vals = append(set.vals, s)
			}
		}
		if v.unknown || len(set.vals) < len(v.vals) {
			set = union(set, word())
		}
		return set
	case syntax.AlternateUnset, syntax.AlternateUnsetOrNull:
		return union(word(), known(""))
	case syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
		return v
	case syntax.RemSmallSuffix, syntax.RemLargeSuffix, syntax.RemSmallPrefix, syntax.RemLargePrefix:
		// ${HOME%/}, ${p##*/}: a literal pattern trims each known value
		pat := word()
		if pat.unknown || len(pat.vals) != 1 {
			return unknownValue
		}
		out := value{unknown: v.unknown, env: v.env}
		for _, s := range v.vals {
			out.vals = append(out.vals, trimPattern(s, pat.vals[0], exp.Op))
		}
		return out
	}
	return unknownValue
}

// shellMatch reports whether the shell pattern pat matches all of s: *
// matches any run of characters (a / too, unlike a path name's glob), ?
// one character, [...] one character of a class.
func shellMatch(pat, s string) bool {
	if pat == "" {
		return s == ""
	}
	switch pat[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if shellMatch(pat[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && shellMatch(pat[1:], s[1:])
	case '[':
		if end := strings.IndexByte(pat[1:], ']'); end > 0 && s != "" {
			if ok, err := path.Match(pat[:end+2], s[:1]); err == nil {
				return ok && shellMatch(pat[end+2:], s[1:])
			}
		}
	case '\\':
		if len(pat) > 1 {
			return s != "" && s[0] == pat[1] && shellMatch(pat[2:], s[1:])
		}
	}
	return s != "" && s[0] == pat[0] && shellMatch(pat[1:], s[1:])
}

// trimPattern removes from s the shortest or longest prefix or suffix
// that the shell pattern pat matches.
func trimPattern(s, pat string, op syntax.ParExpOperator) string {
	match := func(t string) bool { return shellMatch(pat, t) }
	switch op {
	case syntax.RemSmallSuffix:
		for i := len(s); i >= 0; i-- {
			if match(s[i:]) {
				return s[:i]
			}
		}
	case syntax.RemLargeSuffix:
		for i := 0; i <= len(s); i++ {
			if match(s[i:]) {
				return s[:i]
			}
		}
	case syntax.RemSmallPrefix:
		for i := 0; i <= len(s); i++ {
			if match(s[:i]) {
				return s[i:]
			}
		}
	case syntax.RemLargePrefix:
		for i := len(s); i >= 0; i-- {
			if match(s[:i]) {
				return s[i:]
			}
		}
	}
	return s
}

// positional expands $@ or $*; quoted "$@" keeps each parameter one field.
func (x *expander) positional(separate, split bool) {
	args := x.w.env.args
	if len(args) > 0 {
		args = args[1:] // $@ starts at $1
	}
	x.words(args, separate, split, false)
}

// arrayElems returns the elements ${a[@]}, ${a[*]} or ${a[N]} gives, of
// an array whose elements are known (see arrayValue); separate says each
// is a word of its own ("${a[@]}").
func (x *expander) arrayElems(p *syntax.ParamExp, quoted bool) (elems []string, separate, ok bool) {
	if p.Index == nil || p.Param == nil || p.Excl || p.Length || p.Width || p.IsSet || p.Slice != nil || p.Repl != nil ||
		p.Names != 0 || len(p.Modifiers) > 0 || p.NestedParam != nil || p.Flags != nil || p.Exp != nil {
		return nil, false, false
	}
	v := x.w.env.get(p.Param.Value)
	idx, isWord := p.Index.(*syntax.Word)
	if !v.array || v.unknown || !isWord || !arraysTracked(x.w.f) {
		return nil, false, false
	}
	switch lit := idx.Lit(); lit {
	case "@", "*":
		if !quoted && x.split && x.w.env.ifs() == "" {
			return v.elems, true, true // IFS= : unquoted ${a[*]} is each element, unsplit
		}
		return v.elems, quoted && lit == "@", true
	default:
		i, err := strconv.Atoi(lit)
		if err != nil || i < 0 || len(lit) > 1 && lit[0] == '0' { // 010 is octal
			return nil, false, false
		}
		if i >= len(v.elems) {
			return []string{""}, false, true
		}
		return v.elems[i : i+1], false, true
	}
}

// arrayChangers are the commands and forms that change an array other
// than by assigning it a list (read -a, mapfile, unset 'a[0]', printf -v
// 'a[0]', declare with attributes or namerefs, [[ =~ ]] setting
// BASH_REMATCH, pushd setting DIRSTACK): in a script that holds one, no
// array's elements are taken as known.
var arrayChangers = regexp.MustCompile(`\b(read|mapfile|readarray|unset|printf|declare|typeset|local|export|readonly|pushd|popd|getopts|compgen|coproc)\b|=~|\b(BASH_\w+|DIRSTACK|MAPFILE|COMP_\w+|GROUPS|FUNCNAME|PIPESTATUS)\b`)

// arraysTracked reports whether the scripts being walked (f and the ones
// it is nested in) change arrays only by assigning them lists.
func arraysTracked(f *frame) bool {
	for ; f != nil; f = f.parent {
		if arrayChangers.MatchString(f.src) {
			return false
		}
	}
	return true
}

// words adds args to every alternative: as separate words ("$@"), or
// joined by spaces and split as an unquoted expansion is. home says a
// leading ~ in an arg is the home (see arg.home).
func (x *expander) words(args []string, separate, split, home bool) {
	if !x.split {
		separate = false // s="$@", an assignment: one value, the words joined
	}
	// "$*" joins with IFS's first character (none when IFS is empty)
	join := " "
	if ifs := x.w.env.ifs(); ifs == "" {
		join = ""
	} else if !strings.HasPrefix(ifs, " ") {
		join = ifs[:1]
	}
	x.each(func(a *partial) {
		for i, s := range args {
			if separate {
				if i > 0 {
					a.finish()
				}
				a.add(s, false, "")
				a.home = home && strings.HasPrefix(s, "~")
				continue
			}
			if i > 0 {
				a.add(join, split, x.ifs)
			}
			if a.cur.Len() == 0 {
				a.home = home && strings.HasPrefix(s, "~")
			}
			a.add(s, split, x.ifs)
		}
	})
}

// branch appends a value that may be any of v's values to every
// alternative, splitting it into fields when split.
func (x *expander) branch(v value, split bool, t taint) {
	switch {
	case len(v.vals) == 0 && !v.unknown:
		return
	case len(v.vals) == 1 && !v.unknown:
		x.each(func(a *partial) { a.add(v.vals[0], split, x.ifs) })
		return
	}
	next := make([]*partial, 0, len(x.alts)*(len(v.vals)+1))
	for _, a := range x.alts {
		for _, s := range v.vals {
			c := a.clone()
			c.add(s, split, x.ifs)
			next = append(next, c)
		}
		if v.unknown {
			c := a.clone()
			c.unknown(t)
			next = append(next, c)
		}
	}
	x.alts = x.cut(next)
}

// literalTilde reports a word whose leading ~ no shell expands to the home
// directory: a quoted one ('~/', "~"), or one whose tilde-prefix holds
// quoted characters (~"",
// ~"/x": the prefix runs to the first unquoted slash). A variable holding
// ~ is left alone: X=~ expanded it when it was assigned.
func literalTilde(word *syntax.Word) bool {
	if len(word.Parts) == 0 {
		return false
	}
	switch p := word.Parts[0].(type) {
	case *syntax.SglQuoted:
		return !p.Dollar
	case *syntax.DblQuoted:
		// "~..." written as text; "$d" may hold a home a tilde already
		// expanded to (d=~), which the detector keeps as ~
		lit, ok := firstPart(p.Parts).(*syntax.Lit)
		return ok && strings.HasPrefix(lit.Value, "~")
	case *syntax.Lit:
		if !strings.HasPrefix(p.Value, "~") || strings.Contains(p.Value, "/") {
			return false
		}
		for _, next := range word.Parts[1:] {
			lit, ok := next.(*syntax.Lit)
			if !ok {
				return true // a quote or an expansion inside the tilde-prefix
			}
			if strings.Contains(lit.Value, "/") {
				return false
			}
		}
	}
	return false
}

func firstPart(parts []syntax.WordPart) syntax.WordPart {
	if len(parts) == 0 {
		return nil
	}
	return parts[0]
}
