package policy

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// walker walks one script in source order, tracking variables, and judges
// every command that would run: simple commands in lists, pipelines,
// subshells, blocks, if/while/for/case bodies, functions, $(...), `...` and
// <(...), with the input each one reads.
type walker struct {
	d    *detector
	f    *frame
	tree Shell // the dialect the walked tree was read in
	env  *env
	// prefix are the assignments written before the command being run
	// (RAILS_ENV=test bin/rails db:reset): its environment, not the script's
	prefix map[string]value
	cond   int // >0: what runs here may not run, or runs in a subshell
	// argsCond is cond where the positional parameters were set (a
	// function's call, a script's start): set -- and shift at that
	// level change them for sure.
	argsCond int
	stack    []string // functions being walked at a call, against recursion
	depth    int      // statements being walked, nested
	out      int      // $(...) outputs being computed, nested
	// captured > 0: what runs here writes into a $(...) that is a word of
	// a command other than a printer, or into a pipe to a command that
	// reads a credential on stdin (see command.captured).
	captured int
	// pipe is the text of the pipeline being walked, if any
	pipe string
	// inDecl > 0: walking a function's body at its definition, with its
	// arguments unknown (calls walk it again with theirs).
	inDecl int
	// scratch are the resources the left sides of the && chains being
	// walked made: the commands here run only if they were made (see
	// scratch.go). made is what the last statement walked makes when it
	// succeeds; making is what the top-level command of a call makes.
	scratch      []created
	made, making []created
	// andRight counts the right sides of && chains being walked (each
	// also counts in cond): an assignment there is definite for the rest
	// of its chain (see setVar). chainOld holds, for the chain being
	// walked, the values its assignments replaced; chainInner marks the
	// left part of a chain, which is not the whole chain.
	andRight   int
	chainOld   map[string]value
	chainInner bool
	// pipeMade is what a pipeline that prints one field of a create's
	// output (tool create | jq -r .id) makes: see picksField.
	pipeMade []created
	// earlier are the resources statements walked before made, whether
	// or not the statements after them depend on their success.
	earlier []created
}

// Bounds on nesting within one script. Deeper statements are not walked
// and deeper $(...) outputs count as unknown; either makes the command
// too-complex.
const (
	maxDepth    = 200
	maxOutDepth = 32
)

func (w *walker) stmts(list []*syntax.Stmt, in stream) {
	for _, s := range list {
		w.stmt(s, in)
		w.earlier = append(w.earlier, w.made...)
	}
}

// stmtSpan is the text of a statement without its terminator (; or &).
func stmtSpan(s *syntax.Stmt) span {
	end := s.Position.Offset()
	if s.Cmd != nil {
		end = max(end, s.Cmd.End().Offset())
	}
	for _, r := range s.Redirs {
		if r.Word != nil {
			end = max(end, r.Word.End().Offset())
		}
	}
	return span{int(s.Position.Offset()), int(end)}
}

// stdoutDiscarded reports a statement whose standard output last goes to
// /dev/null: what it prints never reaches the job's output. A file does
// not count: a later command, or a later job sharing the directory, can
// print it (vault kv get -field=password x > /tmp/p; cat /tmp/p).
func stdoutDiscarded(s *syntax.Stmt) bool {
	discarded := false
	for _, r := range s.Redirs {
		fd := "1"
		if r.N != nil {
			fd = r.N.Value
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
			if fd == "1" || r.Op == syntax.RdrAll || r.Op == syntax.AppAll {
				discarded = r.Word.Lit() == "/dev/null"
			}
		case syntax.DplOut:
			if fd == "1" {
				discarded = false // >&2: the output again
			}
		}
	}
	return discarded
}

// stmt walks one statement reading in as its standard input and returns
// what it writes to its standard output, as far as the detector can tell.
func (w *walker) stmt(s *syntax.Stmt, in stream) stream {
	w.d.charge(1, 0)
	if w.depth++; w.depth > maxDepth {
		w.depth--
		w.limit(fmt.Sprintf("statements nested more than %d levels", maxDepth), stmtSpan(s))
		return generated()
	}
	defer w.leave(s)
	if s.Background || s.Coprocess {
		w.cond++
		defer func() { w.cond-- }()
	}
	sp := stmtSpan(s)
	in = w.redirects(s, in, sp)
	var made []created // what this statement makes when it succeeds
	defer func() { w.made = made }()
	switch c := s.Cmd.(type) {
	case nil:
		return stream{}
	case *syntax.CallExpr:
		w.making = nil
		discarded := stdoutDiscarded(s)
		if discarded {
			w.captured++
		}
		out := w.call(c, in, sp)
		if discarded {
			w.captured--
		}
		if !s.Negated && !s.Background && !s.Coprocess {
			made = w.making
		}
		w.making = nil
		w.recordRedirects(s, out)
		return out
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			w.pipeMade = nil
			out := w.pipeline(s, in)
			made, w.pipeMade = w.pipeMade, nil
			if s.Negated || s.Background {
				made = nil // ! cmd | tool create X: succeeds when the create fails
			}
			return out
		}
		and := c.Op == syntax.AndStmt && !s.Negated && !s.Background
		top := and && !w.chainInner // the whole chain, not its left part
		w.chainInner = false
		var outerOld map[string]value
		if top {
			outerOld, w.chainOld = w.chainOld, nil
		}
		if x, ok := c.X.Cmd.(*syntax.BinaryCmd); and && ok && x.Op == syntax.AndStmt && !c.X.Negated && !c.X.Background {
			w.chainInner = true
		}
		out := w.stmt(c.X, in)
		w.chainInner = false
		left := w.made
		n := len(w.scratch)
		if and {
			w.scratch = append(w.scratch, left...) // the right side runs only if the left succeeded
			w.andRight++
		}
		w.cond++
		out = out.merge(w.stmt(c.Y, stream{}))
		w.cond--
		w.scratch = w.scratch[:n]
		if and {
			w.andRight--
			made = append(slices.Clip(left), w.made...)
		}
		if top {
			w.endChain(outerOld)
		}
		return out
	case *syntax.Subshell:
		w.cond++
		out := w.list(c.Stmts, in)
		w.cond--
		w.recordRedirects(s, out)
		return out
	case *syntax.Block:
		out := w.list(c.Stmts, in)
		w.recordRedirects(s, out)
		return out
	case *syntax.IfClause:
		w.ifClause(c, false)
	case *syntax.WhileClause:
		w.cond++
		// the condition reads the loop's input (while read l): where it
		// comes from, not its text, which the loop consumes line by line
		cin := stream{}
		if in.present {
			cin = stream{present: true, taint: in.taint &^ taintProc, start: -1, base: -1}
		}
		w.stmts(c.Cond, cin)
		w.stmts(c.Do, stream{})
		w.cond--
	case *syntax.ForClause:
		w.forClause(c)
	case *syntax.CaseClause:
		w.subst(c.Word)
		w.cond++
		for _, item := range c.Items {
			for _, p := range item.Patterns {
				w.subst(p)
			}
			w.stmts(item.Stmts, stream{})
		}
		w.cond--
	case *syntax.FuncDecl:
		if b, ok := c.Body.Cmd.(*syntax.BinaryCmd); ok {
			return w.declThen(c, b, in, sp)
		}
		w.funcDecl(c, sp)
	case *syntax.DeclClause:
		w.decl(c, sp)
	case *syntax.TimeClause:
		if c.Stmt != nil {
			return w.stmt(c.Stmt, in)
		}
	case *syntax.CoprocClause:
		w.cond++
		w.stmt(c.Stmt, in)
		w.cond--
	default: // (( )), [[ ]], let, bats tests: only their substitutions run commands
		w.subst(c)
	}
	return generated()
}

// list walks statements that share one input and one output.
func (w *walker) list(list []*syntax.Stmt, in stream) stream {
	var out stream
	for _, s := range list {
		out = out.merge(w.stmt(s, in))
		w.earlier = append(w.earlier, w.made...)
	}
	return out
}

func (w *walker) ifClause(c *syntax.IfClause, nested bool) {
	if nested {
		w.cond++
		defer func() { w.cond-- }()
	}
	w.stmts(c.Cond, stream{})
	w.cond++
	w.stmts(c.Then, stream{})
	w.cond--
	if c.Else != nil {
		w.ifClause(c.Else, true)
	}
}

func (w *walker) forClause(c *syntax.ForClause) {
	w.cond++
	defer func() { w.cond-- }()
	switch loop := c.Loop.(type) {
	case *syntax.WordIter:
		v := value{}
		for _, item := range loop.Items {
			w.subst(item)
			for _, alt := range w.fields(item) {
				for _, a := range alt {
					if a.lit {
						v.vals = append(v.vals, a.val)
					} else {
						v.unknown = true
						v.carried |= a.taint & carriedTaints
					}
				}
			}
		}
		if len(loop.Items) == 0 { // for x; do: the positional parameters
			v = unknownValue
		}
		if len(v.vals) > maxValues {
			w.limit(fmt.Sprintf("a for loop over more than %d values", maxValues), span{int(c.Pos().Offset()), int(c.End().Offset())})
		}
		// The body runs with the variable set to an item; after the loop
		// it holds what the body left, or what it held before when the
		// list was empty.
		name := loop.Name.Value
		prev := w.env.get(name)
		w.env.set(name, v.bounded(), false)
		w.stmts(c.Do, stream{})
		w.env.set(name, union(prev, w.env.get(name)), false)
		return
	default:
		w.subst(loop)
	}
	w.stmts(c.Do, stream{})
}

// pipeline walks a | b | c left to right, the first stage reading in and
// each other stage what the previous one writes.
func (w *walker) pipeline(s *syntax.Stmt, in stream) stream {
	stages := flattenPipe(s, nil)
	w.cond++ // every stage runs in a subshell
	start := int(s.Position.Offset())
	outer := w.pipe
	if end := int(s.End().Offset()); start >= 0 && end <= len(w.f.src) && start < end {
		w.pipe = w.f.src[start:end]
	}
	defer func() { w.cond--; w.pipe = outer }()
	for i, st := range stages {
		consumed := i+1 < len(stages) && (readsCredential(stages[i+1]) || onlyCounts(stages[i+1]) || projectsNames(stages[i+1]) || appliesManifest(stages[i+1]))
		if consumed {
			w.captured++
		}
		out := w.stmt(st, in)
		if consumed {
			w.captured--
		}
		if i == 0 && len(stages) == 2 && picksField(stages[1]) {
			// tool create ... | jq -r .id: what the pipeline prints is the
			// ID of what the create made
			w.pipeMade = w.made
		} else if i > 0 && i == len(stages)-1 && len(w.made) > 0 {
			// echo -n x | gcloud secrets create NAME --data-file=-: the
			// pipeline's status is its last stage's
			w.pipeMade = w.made
		}
		out.start = start
		in = out
	}
	return in
}

// picksField reports a jq stage that prints one field of its input, raw,
// and fails when there is none (jq -er .id, jq -e -r '.volume.id'): the
// pipeline's status is jq's, so only then does an empty input (a create
// that failed) fail it.
func picksField(s *syntax.Stmt) bool {
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) < 3 || len(ce.Args) > 4 || len(s.Redirs) > 0 {
		return false
	}
	switch ce.Args[0].Lit() {
	case "jq", "gojq", "jaq":
	default:
		return false
	}
	flags := ""
	for _, a := range ce.Args[1 : len(ce.Args)-1] {
		f := a.Lit()
		if !strings.HasPrefix(f, "-") || strings.HasPrefix(f, "--") {
			return false
		}
		flags += f[1:]
	}
	if strings.Trim(flags, "er") != "" || !strings.Contains(flags, "e") || !strings.Contains(flags, "r") {
		return false
	}
	f, ok := literalWord(ce.Args[len(ce.Args)-1])
	return ok && jqFieldPath.MatchString(f)
}

// jqFieldPath is a jq filter that is one field's path: .id, .data.id.
var jqFieldPath = regexp.MustCompile(`^\.[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$`)

// hashes are the programs that print a digest of what they read.
var hashes = map[string]bool{"sha256sum": true, "sha1sum": true, "sha512sum": true, "sha224sum": true, "sha384sum": true,
	"md5sum": true, "b2sum": true, "shasum": true, "cksum": true}

// stdinLogins are the programs whose --password-stdin, --with-token or
// --with-api-key reads a credential from their input and prints nothing
// of it.
var stdinLogins = map[string]bool{"docker": true, "podman": true, "nerdctl": true, "buildah": true, "skopeo": true, "helm": true,
	"oras": true, "crane": true, "regctl": true, "gh": true, "glab": true, "codex": true, "cosign": true, "flux": true,
	"finch": true, "limactl": true, "npm": true, "vault": true, "aws": true, "kubectl": true}

// readsCredential reports a pipeline stage that reads a credential on its
// standard input (docker login --password-stdin, gh auth login
// --with-token, codex login --with-api-key), which it does not print.
func readsCredential(s *syntax.Stmt) bool {
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok {
		return false
	}
	lits := make([]string, len(ce.Args))
	for i, word := range ce.Args {
		lits[i] = word.Lit()
	}
	if len(lits) == 0 || slices.Contains(lits, "") {
		return false // a word built at run time or quoted: 'sh' -c 'cat' --with-api-key
	}
	if stdinLogins[path.Base(lits[0])] {
		for _, v := range lits[1:] {
			if strings.HasPrefix(v, "--") && (strings.HasSuffix(v, "-stdin") || v == "--with-token" || v == "--with-api-key") {
				return true // docker login --password-stdin, gh auth login --with-token
			}
		}
	}
	switch {
	case hashes[lits[0]] && !slices.ContainsFunc(lits[1:], func(v string) bool { return v != "-" && v != "-b" && v != "--binary" && v != "-t" && v != "--text" }):
		return true // sha256sum: what it prints is a digest of what it reads (not -c, which prints the lines)
	case lits[0] == "wc" && wcCounts(lits[1:]):
		return true // wc -c: a count
	case len(lits) >= 3 && (lits[0] == "kubectl" || lits[0] == "oc") && lits[1] == "create" && lits[2] == "secret" &&
		slices.ContainsFunc(lits, func(v string) bool { return strings.HasSuffix(v, "=/dev/stdin") }) &&
		!slices.ContainsFunc(lits, func(v string) bool {
			return strings.HasPrefix(v, "-o") || strings.HasPrefix(v, "--output") || strings.HasPrefix(v, "-v") || strings.HasPrefix(v, "--v") ||
				strings.HasPrefix(v, "-s") || strings.HasPrefix(v, "--server") || strings.HasPrefix(v, "--dry-run")
		}):
		return true // kubectl create secret generic x --from-file=key=/dev/stdin, printing nothing of it
	case slices.Contains(lits, "--data-file=-"), dataFileStdin(lits):
		return true // gcloud secrets versions add NAME --data-file=-
	case len(lits) >= 4 && (lits[0] == "docker" || lits[0] == "podman") && lits[1] == "secret" && lits[2] == "create" && lits[len(lits)-1] == "-":
		return true // docker secret create NAME -
	case len(lits) >= 3 && lits[0] == "gh" && lits[1] == "secret" && lits[2] == "set" && !slices.ContainsFunc(lits, func(v string) bool { return v == "-b" || v == "--body" || strings.HasPrefix(v, "--body=") }):
		return true // gh secret set NAME reads the value on stdin
	case len(lits) >= 3 && lits[0] == "wrangler" && lits[1] == "secret" && lits[2] == "put":
		return true
	}
	// ssh-add - loads a private key from its input into the agent
	return len(ce.Args) == 2 && ce.Args[0].Lit() == "ssh-add" && ce.Args[1].Lit() == "-"
}

// dataFileStdin reports --data-file - among a command's words.
func dataFileStdin(lits []string) bool {
	i := slices.Index(lits, "--data-file")
	return i >= 0 && i+1 < len(lits) && lits[i+1] == "-"
}

// appliesManifest reports a pipeline stage that hands what it reads to a
// cluster and prints only the names of what it made (kubectl apply -f -):
// a decrypted manifest piped in is not printed.
func appliesManifest(s *syntax.Stmt) bool {
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) < 4 {
		return false
	}
	switch ce.Args[0].Lit() {
	case "kubectl", "oc":
	default:
		return false
	}
	verb, stdin := "", false
	for i, word := range ce.Args[1:] {
		switch v := word.Lit(); {
		case v == "apply" || v == "create" || v == "replace":
			if verb == "" {
				verb = v
			}
		case (v == "-f" || v == "--filename") && i+2 < len(ce.Args) && ce.Args[i+2].Lit() == "-", v == "--filename=-":
			stdin = true
		case v == "-o" || v == "--output" || strings.HasPrefix(v, "-o") || strings.HasPrefix(v, "--output=") || v == "-v" || strings.HasPrefix(v, "--v="):
			return false // an output format or a verbose log prints the objects
		}
	}
	return verb != "" && stdin
}

// onlyCounts reports a pipeline stage that prints nothing of what it reads
// but a count or a status (wc; grep -c, -q): what the stage before it
// prints does not reach the job's output.
func onlyCounts(s *syntax.Stmt) bool {
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 || len(s.Redirs) > 0 {
		return false
	}
	switch ce.Args[0].Lit() {
	case "wc":
		// --files0-from=- reads names on stdin and prints them back
		for _, word := range ce.Args[1:] {
			if v := word.Lit(); v == "" || strings.HasPrefix(v, "--files0") {
				return false
			}
		}
		return true
	case "grep", "egrep", "fgrep":
	default:
		return false
	}
	for _, word := range ce.Args[1:] {
		v := word.Lit()
		switch {
		case v == "--count" || v == "--quiet" || v == "--silent":
			return true
		case len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.ContainsAny(v[1:], "cq") &&
			!strings.ContainsAny(v[1:], "efABCm"): // options whose value could hold c or q
			return true
		}
	}
	return false
}

// projectsNames reports a pipeline stage that prints only the names of
// what it reads: jq whose filter ends in name-like fields (.[].name,
// .items[] | {name, id}), or cut keeping the first field of KEY=VALUE or
// NAME:HASH records, or fields of passwd-style records other than the
// second (the hash). A listing of secrets projected to their names does
// not print the secrets.
func projectsNames(s *syntax.Stmt) bool {
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) < 2 || len(s.Redirs) > 0 {
		return false
	}
	words := make([]string, 0, len(ce.Args)-1)
	for _, w := range ce.Args[1:] {
		v, ok := literalWord(w)
		if !ok {
			return false
		}
		words = append(words, v)
	}
	switch ce.Args[0].Lit() {
	case "jq", "gojq", "jaq", "yq":
		return jqNamesOnly(words)
	case "cut":
		return cutNamesOnly(words)
	}
	return false
}

// jqMetadata is a jq path to a secret's metadata (vault kv's versions
// and times), not its data.
var jqMetadata = regexp.MustCompile(`^\.data\.metadata(\.\w+)*$`)

// jqSelect is a select(...) stage that compares and logs nothing.
var jqSelect = regexp.MustCompile(`^select\(([^()=]|==|!=|<=|>=|\((\.[\w.]*)?\))*\)$`)

// jqLeaky names jq builtins that print or fail with a value (debug,
// stderr, error) or read more input.
var jqLeaky = regexp.MustCompile(`\b(debug|stderr|error|halt_error|input|inputs|input_filename|env|getpath|splits|ltrimstr|rtrimstr|test|match|capture)\b|[$@]`)

// jqPlainPath is a jq stage that only walks into its input (.data,
// .items[0].spec): it moves no value where a later stage would print it.
var jqPlainPath = regexp.MustCompile(`^\.(\w+|\[\d*\]|"[\w.-]+")?(\.\w+|\[\d*\]|\."[\w.-]+")*$`)

// literalWord is w's value when it is made only of literal text and quotes.
func literalWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// nameFields are the fields a listing names its entries by.
var nameFields = map[string]bool{"name": true, "names": true, "id": true, "ids": true, "title": true, "label": true,
	"type": true, "username": true, "login": true, "email": true, "path": true, "folder": true,
	"folderId": true, "vault": true, "created": true, "createdAt": true, "updated": true, "updatedAt": true, "version": true,
	"description": true, "status": true, "state": true, "kind": true, "region": true, "scopes": true, "expiresAt": true, "expires_at": true,
	"last4": true, "token_last_eight": true}

// jqNamePath is a jq path whose fields are plain names: .items[].name, name.
var jqNamePath = regexp.MustCompile(`^\.?(\[\])?([A-Za-z_]\w*(\[\])?)?(\.[A-Za-z_]\w*(\[\])?)*$`)

// jqNamesOnly: jq's options leave it reading a filter from the command line
// whose last stage builds only name-like fields.
func jqNamesOnly(words []string) bool {
	var filter string
	found := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--arg" || w == "--argjson":
			i += 2
		case w == "-f" || w == "--from-file" || strings.HasPrefix(w, "--slurpfile") || strings.HasPrefix(w, "--rawfile") || w == "--args" || w == "--jsonargs":
			return false
		case strings.HasPrefix(w, "-"):
		case !found:
			filter, found = w, true
		}
	}
	if !found {
		return false
	}
	stages := strings.Split(filter, "|")
	for _, st := range stages[:len(stages)-1] {
		if st = strings.TrimSpace(st); !jqPlainPath.MatchString(st) && (!jqSelect.MatchString(st) || jqLeaky.MatchString(st)) {
			return false // with_entries(.key = .value) | keys, debug | length: values moved or logged first
		}
	}
	last := strings.TrimSpace(stages[len(stages)-1])
	switch last {
	case "keys", "keys[]", "keys_unsorted", "keys_unsorted[]", ".[].key", "to_entries[].key", "map(.key)", "length", "keys | length",
		"map_values(length)", "map_values(type)", "map(length)":
		return true // an object's keys (variable names), or a count
	}
	if jqMetadata.MatchString(last) {
		return true // vault kv get | jq .data.metadata: versions and times
	}
	last = strings.TrimPrefix(last, "map(")
	last = strings.Trim(last, "[]() ")
	last = strings.TrimSuffix(strings.TrimPrefix(last, "{"), "}")
	if last == "" {
		return false
	}
	items := strings.Split(last, ",")
	// a CI variable's key is its name when the pick also holds the
	// variable's settings ({key, protected, environment_scope}); alone,
	// .key is as often an API key
	varMeta := slices.ContainsFunc(items, func(it string) bool { return variableMeta[strings.TrimPrefix(strings.TrimSpace(it), ".")] })
	for _, item := range items {
		item = strings.TrimSpace(item)
		if k, v, ok := strings.Cut(item, ":"); ok {
			if item = strings.TrimSpace(v); item == "" {
				item = strings.TrimSpace(k)
			}
		}
		if !jqNamePath.MatchString(item) {
			return false
		}
		field := strings.TrimSuffix(item[strings.LastIndex(item, ".")+1:], "[]")
		if !nameFields[field] && !variableMeta[field] && (field != "key" || !varMeta) {
			return false
		}
	}
	return true
}

// variableMeta are the settings of a CI/CD variable (GitLab's), which
// say nothing of its value.
var variableMeta = map[string]bool{"protected": true, "masked": true, "environment_scope": true, "variable_type": true, "hidden": true, "raw": true}

// cutNamesOnly: cut -d D -f LIST keeping only field 1 of KEY=VALUE or
// NAME:VALUE records, or fields other than 2 of colon-separated
// passwd-style records.
func cutNamesOnly(words []string) bool {
	var delim, fields string
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case (w == "-d" || w == "-f") && i+1 < len(words):
			if w == "-d" {
				delim = words[i+1]
			} else {
				fields = words[i+1]
			}
			i++
		case strings.HasPrefix(w, "-d"):
			delim = w[2:]
		case strings.HasPrefix(w, "-f"):
			fields = w[2:]
		case strings.HasPrefix(w, "--delimiter="):
			delim = strings.TrimPrefix(w, "--delimiter=")
		case strings.HasPrefix(w, "--fields="):
			fields = strings.TrimPrefix(w, "--fields=")
		default:
			return false
		}
	}
	if fields == "1" && (delim == "=" || delim == ":") {
		return true
	}
	if delim != ":" || fields == "" {
		return false
	}
	for _, f := range strings.Split(fields, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n == 2 || n < 1 {
			return false
		}
	}
	return true
}

// printsArgs are the commands that write their arguments to the output:
// a $(...) in their words reaches the job's output.
var printsArgs = map[string]bool{"echo": true, "printf": true, "print": true, "": true}

func flattenPipe(s *syntax.Stmt, out []*syntax.Stmt) []*syntax.Stmt {
	b, ok := s.Cmd.(*syntax.BinaryCmd)
	if !ok || b.Op != syntax.Pipe && b.Op != syntax.PipeAll {
		return append(out, s)
	}
	return pipeStages(b.Y, pipeStages(b.X, out))
}

// pipeStages appends the stages of one side of a pipe: a nested plain
// pipeline is flattened, anything else (negated, redirected) is a stage.
func pipeStages(s *syntax.Stmt, out []*syntax.Stmt) []*syntax.Stmt {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) &&
		len(s.Redirs) == 0 && !s.Negated && !s.Background {
		return flattenPipe(s, out)
	}
	return append(out, s)
}

// subst walks the commands that substitutions inside node run: $(...),
// `...` and <(...), which run in subshells, and those that arithmetic on
// variables runs (see arith).
func (w *walker) subst(node syntax.Node) {
	if node == nil {
		return
	}
	syntax.Walk(node, func(n syntax.Node) bool {
		w.d.charge(1, 0)
		if arithContext(n) {
			w.arith(n)
		}
		switch n := n.(type) {
		case *syntax.CmdSubst:
			w.cond++
			w.stmts(n.Stmts, stream{})
			w.cond--
			return false
		case *syntax.ProcSubst:
			w.cond++
			w.stmts(n.Stmts, stream{})
			w.cond--
			return false
		}
		return true
	})
}

// call walks a simple command: the substitutions in its words first, then
// the assignments (when it has no command), then every alternative
// expansion of its words as a command.
func (w *walker) call(ce *syntax.CallExpr, in stream, sp span) stream {
	w.captured++       // a $(...) in an assignment, or in the words of a command that does not print them
	var ids []*created // what the creates in lone $(...) values made
	for i, a := range ce.Assigns {
		w.made = nil
		w.subst(a)
		if r := captureID(a, w.made); r != nil && len(ce.Args) == 0 {
			if ids == nil {
				ids = make([]*created, len(ce.Assigns))
			}
			ids[i] = r
		}
	}
	printer := len(ce.Args) > 0 && printsArgs[ce.Args[0].Lit()]
	if printer {
		w.captured--
	}
	for _, word := range ce.Args {
		w.subst(word)
	}
	if !printer {
		w.captured--
	}
	if len(ce.Args) == 0 {
		for i, a := range ce.Assigns {
			w.assign(a, false, sp)
			if ids != nil && ids[i] != nil && w.cond == w.andRight {
				w.d.captures++
				ids[i].capture = w.d.captures
				w.env.markID(a.Name.Value, ids[i])
				// what the assignment makes, for the && chain it is on: the
				// commands after it run only if the create succeeded
				w.making = append(w.making, *ids[i])
			}
		}
		return stream{}
	}
	if w.tree == ShellSh {
		switch ce.Args[0].Lit() {
		case "export", "local", "readonly": // bash's declarations, plain commands to POSIX
			for _, a := range ce.Assigns {
				w.assign(a, false, sp)
			}
			w.declWords(ce.Args[1:], sp)
			return stream{}
		}
	}
	w.commandEnv(ce.Assigns, sp)
	defer func(saved map[string]value) { w.prefix = saved }(w.prefix)
	w.prefix = w.prefixVars(ce.Assigns)
	var out stream
	lists := w.argLists(ce.Args)
	if len(lists) > 1 {
		// each alternative's side effects (cd "${DIR:-$HOME}") may be the one
		w.cond++
		defer func() { w.cond-- }()
	}
	var first []created
	same := true
	for i, words := range lists {
		o := w.run(words, in, sp, "", false)
		if i == 0 {
			out, first = o, w.making
		} else {
			out = out.merge(o)
			same = same && slices.EqualFunc(first, w.making, sameCreated)
		}
	}
	if len(lists) > 1 {
		// which alternative ran, and so which name a create made, is not
		// known; unless every one made the same (scratch-$$ read as written)
		w.making = nil
		if same {
			w.making = first
		}
	}
	return out
}

// declThen walks f() { ...; } && cmd, which the parser reads as a
// function whose body is the whole chain: the shell takes the first
// compound command as the body, defines the function, and runs the rest
// of the chain at once (as if the definition were true).
func (w *walker) declThen(fn *syntax.FuncDecl, b *syntax.BinaryCmd, in stream, sp span) stream {
	first := b
	for {
		x, ok := first.X.Cmd.(*syntax.BinaryCmd)
		if !ok {
			break
		}
		first = x
	}
	body := first.X
	decl := *fn
	decl.Body = body
	w.funcDecl(&decl, sp)
	pos := body.Position
	first.X = &syntax.Stmt{Position: pos, Cmd: &syntax.CallExpr{Args: []*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{ValuePos: pos, ValueEnd: pos, Value: "true"}}}}}}
	defer func() { first.X = body }()
	return w.stmt(fn.Body, in)
}

// sameCreated reports two creates of the same resource.
func sameCreated(a, b created) bool {
	return a.prog == b.prog && a.name == b.name && a.idempotent == b.idempotent && a.capture == b.capture && a.quiet == b.quiet &&
		slices.Equal(a.prefix, b.prefix) && slices.Equal(a.operands, b.operands) && maps.Equal(a.pairs, b.pairs)
}

// prefixVars returns the values the assignments before a command give its
// environment, nil when there are none.
func (w *walker) prefixVars(assigns []*syntax.Assign) map[string]value {
	if len(assigns) == 0 {
		return nil
	}
	out := make(map[string]value, len(assigns))
	for _, a := range assigns {
		if a.Name == nil {
			continue
		}
		var v value
		if a.Value == nil {
			v.vals = []string{""}
		}
		if a.Value != nil {
			for _, x := range w.value(a.Value) {
				if !x.lit {
					v.unknown = true
					continue
				}
				v.vals = append(v.vals, x.val)
			}
		}
		out[a.Name.Value] = v
	}
	return out
}

// argLists expands the words of a command into up to maxCombos alternative
// argument lists.
func (w *walker) argLists(words []*syntax.Word) [][]arg {
	lists := [][]arg{make([]arg, 0, len(words))}
	for _, word := range words {
		alts := w.fields(word)
		if len(alts) == 1 {
			for i := range lists {
				lists[i] = append(lists[i], alts[0]...)
			}
			continue
		}
		next := make([][]arg, 0, len(lists)*len(alts))
		for _, l := range lists {
			for _, alt := range alts {
				if len(next) == maxCombos {
					w.limit(fmt.Sprintf("a command with more than %d alternative argument lists", maxCombos), wordSpan(word))
					break
				}
				w.d.charge(1, argBytes*(len(l)+len(alt)))
				next = append(next, append(append([]arg(nil), l...), alt...))
			}
		}
		lists = next
	}
	return lists
}
