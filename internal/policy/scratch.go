package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A scratch resource is one the script made itself and deletes again:
//
//	hcloud server create --name ci-4711 ... && ./e2e.sh && hcloud server delete ci-4711
//
// The delete is reached only if the create succeeded, and a create fails
// when the name is taken, so what it deletes is what the script made, not
// something that was there before. A delete after ";" (or in a trap) runs
// whether or not the create succeeded: there the name may be someone
// else's, and it is judged like any delete, unless the name is one no
// lasting resource is given (ci-4711, shop_test_12, ScratchVol: a mark of
// a test, CI or scratch resource; throwawayName), the cleanup idiom
//
//	kind create cluster --name ci-4711 && make e2e; kind delete cluster --name ci-4711
//
// whose delete must run when the tests fail. A script may still reach a
// resource of that name it did not make; what it can reach that way is
// what is named as disposable.

// created is a resource a command made: the tool, the command path before
// its create verb, the operands after it, the options given with a value
// (--project-id X: the scope), and the name (--name X, or the last operand).
type created struct {
	prog     string
	prefix   []string
	operands []string
	pairs    map[string]string
	name     string
	// idempotent: the tool's create succeeds on a name that is taken, so
	// only a throwaway name on the same && chain is the script's own
	idempotent bool
	// capture numbers the assignment of a variable that captured the
	// create's output (ID=$(tool create ...)); see printedID.
	capture int
	// quiet: the create was asked to print nothing (-q), so what a
	// variable captured from it is not its ID
	quiet bool
}

// cmdWords is a command line read without knowing its options: each
// option followed by a word is taken to give it that value.
type cmdWords struct {
	positional []string
	pairs      map[string]string
	flags      []string // options given without a value
	dynamic    bool     // a word built at run time
}

// pair records an option's value; an option given twice with different
// values (--topic ci-4711 --topic orders) names more than one thing, which
// one map entry cannot hold: the line is not read.
func (cw *cmdWords) pair(name, val string) {
	if v, ok := cw.pairs[name]; ok && v != val {
		cw.dynamic = true
	}
	cw.pairs[name] = val
}

func readWords(args []arg) cmdWords {
	cw := cmdWords{pairs: map[string]string{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !a.lit:
			cw.dynamic = true
		case a.val == "--":
			cw.dynamic = true // what follows is a command or a list: not read here
			return cw
		case strings.HasPrefix(a.val, "-") && len(a.val) > 1:
			if name, val, ok := strings.Cut(a.val, "="); ok {
				cw.pair(name, val)
			} else if booleanOptions[a.val] {
				cw.flags = append(cw.flags, a.val)
			} else if i+1 < len(args) && args[i+1].lit && !strings.HasPrefix(args[i+1].val, "-") {
				cw.pair(a.val, args[i+1].val)
				i++
			} else {
				cw.flags = append(cw.flags, a.val)
			}
		default:
			cw.positional = append(cw.positional, a.val)
		}
	}
	return cw
}

// stableArgs is args where a word that expands one variable the script
// never sets (scratch-$$, s3://ci-smoke-$RUN_ID, "tmp/probe-${CI_JOB_ID}")
// reads as written: it names the same thing at the create and at the
// delete of a chain. The variable stands for itself under a name no
// throwaway test reads as a word (pgdata$TMP is pgdata when TMP is
// unset). A variable the script or the job sets, or one that changes at
// each expansion ($RANDOM), stays unknown.
func stableArgs(c *command, args []arg) []arg {
	out := args
	for i, a := range args {
		if a.lit && (!a.expanded || !strings.Contains(a.src, "$$")) {
			continue // $$ expands to the detector's stand-ins for the shell's PID
		}
		m := stableWord.FindStringSubmatch(a.src)
		if m == nil {
			continue
		}
		name := m[3]
		if name != "" && volatileVars[name] {
			continue
		}
		if _, set := c.vars[name]; set && name != "" || name != "" && sources.MatchString(c.frame) {
			continue // set by the script, or perhaps by a file it sources
		}
		if name == "" {
			name = "$"
		}
		if &out[0] == &args[0] {
			out = slices.Clone(args)
		}
		out[i] = arg{val: m[1] + "\x00" + digitsName(name) + "\x00" + m[4], lit: true, pos: a.pos, end: a.end, exact: -1}
	}
	return out
}

// digitsName writes a variable's name as the decimal codes of its bytes
// (TMP is 84.77.80): one name to one text, and no word a throwaway test
// reads. A hash would not do: a submitter picks two names whose hashes
// collide, and the delete of one passes for the create of the other.
func digitsName(name string) string {
	var b strings.Builder
	for i := range len(name) {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(int(name[i])))
	}
	return b.String()
}

// stableWord is a word of literal name characters (group 1 before, group
// 4 after) around one expansion of $$ or of a variable (group 3),
// optionally in double quotes.
var stableWord = regexp.MustCompile(`^"?([\w./:@%+-]*)\$(\$|\{?([A-Za-z_]\w*)\}?)([\w./:@%+-]*)"?$`)

// sources is script text that runs a file in the same shell (. FILE,
// source FILE), which may set any variable unseen.
var sources = regexp.MustCompile(`(^|[;&|(\s])(\.|source)\s`)

// volatileVars change at each expansion.
var volatileVars = map[string]bool{"RANDOM": true, "SRANDOM": true, "SECONDS": true, "LINENO": true, "BASHPID": true, "EPOCHREALTIME": true, "EPOCHSECONDS": true}

// makesNothing reports a create that only says what it would make
// (--dry-run=client, --help).
func makesNothing(cw cmdWords) bool {
	if v, ok := cw.pairs["--dry-run"]; ok && v != "none" && v != "false" {
		return true
	}
	for _, o := range []string{"--dry-run", "--help", "--what-if", "--whatif", "--noop"} {
		if slices.Contains(cw.flags, o) {
			return true
		}
		if _, ok := cw.pairs[o]; ok && o != "--dry-run" {
			return true // --help read as taking the next word
		}
	}
	return false
}

// scopeOptions say where a resource lives (cluster, project, account,
// region, host): a delete must name the same scope as its create.
var scopeOptions = []string{"--context", "--kubeconfig", "--cluster", "-n", "--namespace", "--project", "--region", "--zone", "--location",
	"--profile", "--subscription", "--resource-group", "-g", "--account", "--hostname", "-R", "--repo", "--org", "--host", "-H",
	"--server", "--endpoint-url", "--endpoint", "--env", "--environment", "--stage", "--app", "-a", "--workspace", "--tenant"}

// booleanOptions are options that take no value in the tools that have
// them: the word after one is an operand.
var booleanOptions = map[string]bool{"--force": true, "-f": true, "--yes": true, "-y": true, "--purge": true, "--wait": true,
	"--quiet": true, "-q": true, "--confirm": true, "--now": true, "--recursive": true, "-r": true, "-R": true, "--permanent": true,
	"--no-wait": true, "--json": true, "--verbose": true, "-v": true, "--async": true}

// createVerb reports a word that makes a new resource and fails when its
// name is taken (create, snapshot-create-as, mb, clone, launch). add is
// not one: several tools' add succeeds on an existing name (nats stream
// add, helm repo add).
func createVerb(w string) bool {
	switch w {
	case "create", "new", "mb", "mk", "launch", "clone":
		return true
	}
	return strings.HasPrefix(w, "create-") || strings.HasPrefix(w, "create_") || strings.HasSuffix(w, "-create") ||
		strings.HasSuffix(w, "_create") || strings.Contains(w, "-create-") || strings.HasSuffix(w, ":create") ||
		strings.HasPrefix(w, "new-") && len(w) > len("new-")
}

// idempotentCreators are tools whose create succeeds on an existing name
// (docker volume create, aws s3 mb in its home region, Azure's
// create-or-update), or whose names are not unique (a DigitalOcean
// droplet's, a Scaleway or Vultr instance's).
var idempotentCreators = map[string]bool{"docker": true, "nerdctl": true, "aws": true, "az": true, "doctl": true, "scw": true, "vultr-cli": true,
	"rabbitmqadmin": true} // declare succeeds on an existing queue

// resourceTypes are words that name a kind of resource, not one: a
// verb-first tool's delete names the kind before the name (kubectl delete
// ns ci-4711).
var resourceTypes = map[string]bool{"ns": true, "namespace": true, "namespaces": true, "deployment": true, "deploy": true,
	"pod": true, "svc": true, "service": true, "configmap": true, "cm": true, "secret": true, "job": true, "cronjob": true,
	"pvc": true, "statefulset": true, "sts": true, "daemonset": true, "ds": true, "ingress": true, "serviceaccount": true, "sa": true,
	"db": true, "database": true, "bucket": true, "branch": true, "volume": true, "vm": true, "instance": true, "server": true,
	"cluster": true, "topic": true, "queue": true, "stream": true, "snapshot": true, "image": true, "network": true, "project": true,
	"repo": true, "app": true, "site": true, "realm": true, "env": true, "environment": true, "profile": true}

// reuseOptions make a create succeed on an existing name or replace it.
var reuseOptions = []string{"--ignore-existing", "--ignore", "-p", "--if-not-exists", "--exist-ok", "--exists-ok", "--upsert",
	"--or-update", "--update", "--force", "-f", "--overwrite", "--replace", "--reuse", "--idempotent", "--skip-existing", "--if-missing"}

// broadeningOptions make a delete reach beyond the names it is given.
var broadeningOptions = []string{"--all", "-a", "-A", "--all-namespaces", "--selector", "-l", "--prefix", "--filter", "--match",
	"--pattern", "--everything", "--field-selector"}

// createdBy returns the resource c makes, when it is a create of a tool
// the packs know (or the generic tools read) or createdb.
func createdBy(c *command) []created {
	return append(namedCreated(c), mentioned(c)...)
}

// namedCreated is createdBy for the tools whose create the model reads.
func namedCreated(c *command) []created {
	if made := httpCreated(c); made != nil {
		return made
	}
	name := canonical(c.name)
	if sqlClients[name] != nil {
		if made := sqlCreated(c); made != nil {
			return made
		}
	}
	if name != "createdb" && !slices.ContainsFunc(c.args, func(a arg) bool { return a.lit && createVerb(a.val) }) {
		return nil // the common case: no word is a create verb
	}
	cw := readWords(stableArgs(c, c.args))
	if cw.dynamic || slices.ContainsFunc(reuseOptions, func(o string) bool { _, ok := cw.pairs[o]; return ok || slices.Contains(cw.flags, o) }) ||
		makesNothing(cw) {
		return nil
	}
	if name == "createdb" {
		if len(cw.positional) == 0 {
			return nil
		}
		return []created{{prog: "dropdb", pairs: cw.pairs, operands: cw.positional, name: cw.positional[0]}}
	}
	if packTools[name] == nil && (!genericProgram(c.name) || projectProgram(c.prog)) {
		return nil
	}
	i := slices.IndexFunc(cw.positional, createVerb)
	if i < 0 {
		return nil
	}
	r := created{prog: name, prefix: cw.positional[:i], operands: cw.positional[i+1:], pairs: cw.pairs,
		quiet: slices.ContainsFunc([]string{"-q", "--quiet", "--silent"}, func(o string) bool { return slices.Contains(cw.flags, o) }) ||
			cw.pairs["-o"] == "none" || cw.pairs["--output"] == "none" || cw.pairs["--format"] == "none"}
	switch {
	case cw.pairs["--name"] != "":
		r.name = cw.pairs["--name"]
	case len(r.operands) > 1 && r.operands[len(r.operands)-1] == "-":
		r.name = r.operands[len(r.operands)-2] // docker secret create NAME -: the data on stdin
	case len(r.operands) > 0:
		r.name = r.operands[len(r.operands)-1]
	case cw.pairs["-n"] != "":
		r.name = cw.pairs["-n"] // with no operand, -n is the name (multipass launch -n ci)
	}
	// with no name the tool names what it makes, and prints that (an ID
	// a variable may capture: printedID); "" matches no delete's target
	if idempotentCreators[name] {
		if !throwawayName(r.name) {
			return nil // the create may have found the name taken: only a throwaway name is the script's own
		}
		r.idempotent = true
	}
	return []created{r}
}

// A command that makes something under a throwaway name in another form
// than <tool> ... create NAME (zpool create ci4711 IMG, limactl start
// --name=ci-4711, govc vm.clone -vm tmpl ci-4711, zfs snapshot
// tank/shop@pre-test-4711) names it; mentioned records each such name,
// and deletesMentioned exempts a later call of the same tool that
// removes only it.

// makingWords are words that make a resource in the forms createVerb does
// not read.
var makingWords = map[string]bool{"init": true, "start": true, "snapshot": true, "createvm": true, "vol-create-as": true,
	"vm.clone": true, "up": true, "addVolume": true, "import": true, "run": true, "add": true, "copy": true,
	"declare": true, "--create": true} // rabbitmqadmin declare queue name=X, kafka-topics --create --topic X

// mentionPrefix marks the records of mentioned.
const mentionPrefix = "mention:"

// makingWord reports a word that makes a resource: a create verb, one
// of makingWords, or an add_X/add-X verb (rabbitmqctl add_vhost).
func makingWord(w string) bool {
	return makingWords[w] || createVerb(w) || (strings.HasPrefix(w, "add_") || strings.HasPrefix(w, "add-")) && len(w) > len("add_")
}

func mentioned(c *command) []created {
	making := false
	for _, a := range c.args {
		if a.lit && makingWord(a.val) {
			making = true
			break
		}
	}
	if !making && c.name != "lvcreate" && c.name != "vgcreate" {
		return nil
	}
	var words []string
	for _, a := range stableArgs(c, c.args) {
		if a.lit {
			if _, v, ok := strings.Cut(a.val, "="); ok && strings.HasPrefix(a.val, "-") {
				words = append(words, v)
			} else {
				words = append(words, a.val)
			}
		}
	}
	cw := readWords(stableArgs(c, c.args))
	var prefix []string // the words before the making one: the resource's kind (machine, osd pool)
	for _, w := range cw.positional {
		if makingWord(w) {
			break
		}
		prefix = append(prefix, w)
	}
	var out []created
	for _, w := range words {
		if strings.ContainsAny(w, "|*?+()[]{}^$\\") || canonical(c.name) == "kafka-topics" && strings.Contains(lastComponent(w), ".") {
			continue // a pattern, not a name (kafka-topics --delete --topic takes a regular expression)
		}
		if n := lastComponent(w); n != "" && throwawayName(n) {
			out = append(out, created{prog: mentionPrefix + canonical(c.name), name: n, operands: words, prefix: prefix, pairs: cw.pairs,
				idempotent: idempotentCreators[canonical(c.name)]})
		}
	}
	return out
}

// lastComponent is the last part of a path-like name: ci-4711 of
// /srv/.snap/ci-4711, pre-test of tank/shop@pre-test.
func lastComponent(w string) string {
	if i := strings.LastIndexAny(w, "/@:="); i >= 0 {
		w = w[i+1:]
	}
	return w
}

// deletesMentioned reports a call of t's tool whose operands are only
// words of a command that made a throwaway-named resource, and destroy
// verbs and kinds, and whose last operand is that resource.
func deletesMentioned(c *command, t *packTool) bool {
	if len(c.scratch) == 0 && len(c.earlier) == 0 {
		return false
	}
	cw := readWords(stableArgs(c, c.args))
	if cw.dynamic || len(cw.positional) == 0 && len(cw.pairs) == 0 || slices.ContainsFunc(broadeningOptions, func(o string) bool { _, ok := cw.pairs[o]; return ok || slices.Contains(cw.flags, o) }) {
		return false
	}
	last := "" // kafka-topics --delete --topic X: no operand, the option names it
	if len(cw.positional) > 0 {
		last = lastComponent(cw.positional[len(cw.positional)-1])
	}
	for i, r := range append(slices.Clip(c.scratch), c.earlier...) {
		if r.prog != mentionPrefix+canonical(c.name) || r.idempotent && i >= len(c.scratch) {
			continue // a create-or-update may have found the name taken: only on the same && chain
		}
		words, by := cw.positional[:max(0, len(cw.positional)-1)], ""
		if r.name != last {
			// the name given by the option the making command gave it
			// with (minikube start -p ci-4711 ... minikube delete -p ci-4711)
			by = optionNaming(cw.pairs, r)
			if by == "" {
				continue
			}
			words = cw.positional
		}
		// before the name only the kind the making command gave, verbs
		// and kinds; in the options only the scope it was made in
		own := true
		for _, w := range words {
			if !slices.Contains(r.prefix, w) && !destroyWord(t, w) && !resourceTypes[w] && lastComponent(w) != r.name {
				own = false
				break
			}
		}
		for k, v := range cw.pairs {
			if k == "--name" || k == "-n" || k == by {
				continue
			}
			if rv, ok := r.pairs[k]; ok && rv != v || !ok && !slices.Contains(r.operands, v) {
				own = false
				break
			}
		}
		if own {
			return true
		}
	}
	return false
}

// optionNaming returns the option of a delete whose value names r the way
// the command that made r named it (the same option, the same value), or
// "".
func optionNaming(pairs map[string]string, r created) string {
	for k, v := range pairs {
		if rv, ok := r.pairs[k]; ok && rv == v && lastComponent(v) == r.name {
			return k
		}
	}
	return ""
}

// destroyWord reports a destroy verb of t or of the generic tools, or a
// word that holds one (vm.destroy, unregistervm).
func destroyWord(t *packTool, w string) bool {
	if matchAnyWord(t.destroy, w) || matchAnyWord(t.After, w) {
		return true
	}
	l := strings.ToLower(w)
	for _, v := range []string{"delete", "destroy", "remove", "unregister", "purge"} {
		if strings.Contains(l, v) {
			return true
		}
	}
	for _, g := range packAny {
		if matchAnyWord(g.destroy, w) || matchAnyWord(g.After, w) {
			return true
		}
	}
	return false
}

// sqlCreateDB is a script that only creates a database (not IF NOT
// EXISTS: that succeeds on a database that was there).
var sqlCreateDB = regexp.MustCompile(`(?i)^\s*CREATE\s+DATABASE\s+([\w"` + "`" + `\[\]]+)\s*;?\s*$`)

// sqlDropDB is a script that only drops one database.
var sqlDropDB = regexp.MustCompile(`(?i)^\s*DROP\s+DATABASE\s+(?:IF\s+EXISTS\s+)?([\w"` + "`" + `\[\]]+)\s*;?\s*$`)

// sqlServerOptions name the server a database client talks to.
var sqlServerOptions = []string{"-S", "-h", "--host", "-H", "--server"}

// sqlCreated returns the database a client's CREATE DATABASE makes, as a
// resource of that client on that server.
func sqlCreated(c *command) []created {
	sql, stdin := sqlClients[canonical(c.name)](c.args)
	if stdin || len(sql) != 1 || !sql[0].lit {
		return nil
	}
	m := sqlCreateDB.FindStringSubmatch(sql[0].val)
	if m == nil {
		return nil
	}
	cw := readWords(stableArgs(c, c.args))
	pairs := map[string]string{}
	for _, o := range sqlServerOptions {
		if v, ok := cw.pairs[o]; ok {
			pairs[o] = v
		}
	}
	return []created{{prog: "sql:" + canonical(c.name), pairs: pairs, name: strings.ToLower(strings.Trim(m[1], "\"`[]"))}}
}

// dropsScratchDB reports a client whose only statement drops a database
// a CREATE DATABASE on the same server made earlier (on the same && chain,
// or under a throwaway name).
func dropsScratchDB(c *command, sql []arg) bool {
	if len(sql) != 1 || !sql[0].lit {
		return false
	}
	m := sqlDropDB.FindStringSubmatch(sql[0].val)
	if m == nil {
		return false
	}
	name := strings.ToLower(strings.Trim(m[1], "\"`[]"))
	cw := readWords(stableArgs(c, c.args))
	made := c.scratch
	for _, r := range c.earlier {
		if throwawayName(r.name) {
			made = append(slices.Clip(made), r)
		}
	}
	for _, r := range made {
		if r.prog != "sql:"+canonical(c.name) || r.name != name {
			continue
		}
		same := true
		for _, o := range sqlServerOptions {
			if cw.pairs[o] != r.pairs[o] {
				same = false
			}
		}
		if same {
			return true
		}
	}
	return false
}

// deletesScratch reports whether c, a delete by the tool prog whose verb
// isVerb recognises (nil: every operand is a target, as for dropdb), names
// exactly a resource a create made earlier on the same && chain: the same
// command path, the same scope options, and as its target the created name
// (or the create's own operands). Anything built at run time, a second
// target or an option that widens the delete gives no exemption.
func deletesScratch(c *command, prog string, isVerb func(string) bool) bool {
	made := c.scratch
	for _, r := range c.earlier {
		if throwawayName(r.name) && !r.idempotent {
			made = append(slices.Clip(made), r)
		}
	}
	args, cloned := c.args, false
	for i, a := range c.args {
		if r, ok := c.printedID(a); ok && capturedOnChain(c, r) {
			// "$ID", where ID=$(tool create ...) holds what the create
			// printed: the ID of what it made, whatever came before it
			if !cloned {
				args, cloned = slices.Clone(c.args), true
			}
			marker := fmt.Sprintf("\x00id%d", i)
			args[i] = arg{val: marker, lit: true}
			r.name = marker
			made = append(slices.Clip(made), r)
		}
	}
	if len(made) == 0 {
		return false
	}
	cw := readWords(stableArgs(c, args))
	if cw.dynamic || slices.ContainsFunc(broadeningOptions, func(o string) bool { _, ok := cw.pairs[o]; return ok || slices.Contains(cw.flags, o) }) {
		return false
	}
	prefix, targets, verb := []string(nil), cw.positional, ""
	if isVerb != nil {
		i := slices.IndexFunc(cw.positional, isVerb)
		if i < 0 {
			return false
		}
		prefix, targets, verb = cw.positional[:i], cw.positional[i+1:], cw.positional[i]
	}
	// a delete whose command path names the kind (pscale branch delete DB
	// BRANCH, virsh snapshot-delete DOMAIN SNAP) takes the parent it
	// lives in before its name; a verb-first one (tart delete A B) takes
	// a list of names
	nounFirst := len(prefix) > 0 || strings.ContainsAny(verb, "-_:")
	pairs, named := cw.pairs, ""
	if v, ok := pairs["--name"]; ok {
		named = "--name"
		targets = append(slices.Clip(targets), v)
	} else if v, ok := pairs["-n"]; ok && len(targets) == 0 {
		named = "-n"
		targets = []string{v}
	}
	for _, r := range made {
		targets, named := targets, named
		if len(targets) == 0 {
			// heroku apps:destroy --app X --confirm X: the name only in
			// options, every one of which names it
			for k, v := range pairs {
				if v == r.name && r.name != "" {
					targets, named = []string{v}, k
					break
				}
			}
		}
		if len(targets) == 0 || r.prog != prog || !slices.Equal(r.prefix, prefix) || targets[len(targets)-1] != r.name {
			continue
		}
		// before the name, only kinds the create named the same way
		// (kubectl create ns X ... kubectl delete ns X); a second name
		// (tart delete SOURCE CLONE) is not the scratch resource
		kinds := targets[:len(targets)-1]
		if len(kinds) > len(r.operands) || !slices.Equal(kinds, r.operands[:len(kinds)]) ||
			(!nounFirst || len(kinds) != len(r.operands)-1) && slices.ContainsFunc(kinds, func(k string) bool { return !resourceTypes[k] }) {
			continue
		}
		scoped := true
		for k, v := range pairs {
			if k == named || v == r.name && len(cw.positional) == len(prefix)+1 {
				continue // the name given again (--confirm X)
			}
			if r.pairs[k] != v {
				scoped = false // a delete in another project, region or host
				break
			}
		}
		for _, k := range scopeOptions {
			if _, made := r.pairs[k]; made && k != named {
				if _, ok := pairs[k]; !ok {
					scoped = false // made in --context kind-scratch, deleted in the default one
				}
			}
		}
		if scoped {
			return true
		}
	}
	return false
}

// capturedOnChain reports whether the assignment that captured r's ID is
// on the && chain c is on: c runs only if it succeeded, and a create that
// failed (its ID empty: delete "" may mean the current or every resource,
// as gh repo delete does) stopped the chain.
func capturedOnChain(c *command, r created) bool {
	return r.capture != 0 && !r.quiet && slices.ContainsFunc(c.scratch, func(s created) bool { return s.capture == r.capture })
}

// idVar matches a word that is only a variable's value: $ID, "${ID}".
var idVar = regexp.MustCompile(`^"?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?"?$`)

// printedID returns the resource whose ID a word holds: the word is only a
// variable, assigned (unconditionally, and not since) the output of a
// create (ID=$(xcrun simctl create ci "iPhone 15")).
func (c *command) printedID(a arg) (created, bool) {
	if a.lit || len(c.vars) == 0 {
		return created{}, false
	}
	m := idVar.FindStringSubmatch(a.src)
	if m == nil || strings.Count(m[0], "{") != strings.Count(m[0], "}") || strings.Count(m[0], `"`)%2 != 0 {
		return created{}, false
	}
	v, ok := c.vars[m[1]]
	if !ok || v.id == nil {
		return created{}, false
	}
	return *v.id, true
}

// captureID returns the create whose output a lone $(...) assigned to a
// variable holds: the $(...) is one command, and it made one resource
// the model reads (made is what the walk of that command recorded).
func captureID(a *syntax.Assign, made []created) *created {
	if len(made) == 0 || a.Value == nil || !loneSubst(a.Value) {
		return nil
	}
	made = slices.DeleteFunc(slices.Clone(made), func(r created) bool { return strings.HasPrefix(r.prog, mentionPrefix) })
	if len(made) != 1 {
		return nil
	}
	part := a.Value.Parts[0]
	if dq, ok := part.(*syntax.DblQuoted); ok {
		part = dq.Parts[0]
	}
	if cs, ok := part.(*syntax.CmdSubst); !ok || len(cs.Stmts) != 1 {
		return nil
	}
	r := made[0]
	return &r
}

// throwawayWords mark a name as a test's, a CI run's or a scratch
// resource's.
var throwawayWords = map[string]bool{"ci": true, "tmp": true, "temp": true, "test": true, "tests": true, "testing": true,
	"scratch": true, "e2e": true, "probe": true, "ephemeral": true, "throwaway": true, "disposable": true, "smoke": true, "pr": true}

// throwawayName reports a resource name with a word of throwawayWords in
// it: words are split at punctuation, at a lower-case letter followed by
// an upper-case one and between letters and digits (CI4711, ShopScratch,
// shop_test_4711, rg-ci-4711).
func throwawayName(name string) bool {
	if strings.Contains(strings.ToLower(name), "e2e") {
		return true
	}
	var word []rune
	kind := func(r rune) int {
		switch {
		case r >= 'a' && r <= 'z':
			return 1
		case r >= 'A' && r <= 'Z':
			return 2
		case r >= '0' && r <= '9':
			return 3
		}
		return 0
	}
	flush := func() bool {
		w := strings.ToLower(string(word))
		word = word[:0]
		return throwawayWords[w]
	}
	prev := 0
	for _, r := range name {
		k := kind(r)
		boundary := k == 0 || prev != 0 && (prev == 3) != (k == 3) || prev == 1 && k == 2
		if boundary && len(word) > 0 && flush() {
			return true
		}
		if k != 0 {
			word = append(word, r)
		}
		prev = k
	}
	return len(word) > 0 && flush()
}
