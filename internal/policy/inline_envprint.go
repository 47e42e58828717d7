package policy

import (
	"regexp"
	"strings"
)

// printWords are the calls of each language that write their arguments to
// standard output.
var printWords = map[lang][]string{
	langPython: {"print", "pprint", "pp", "sys.stdout.write"},
	langNode:   {"console.log", "console.info", "console.dir", "console.error", "console.warn", "console.table", "process.stdout.write"},
	langRuby:   {"puts", "print", "p", "pp", "$stdout.puts", "STDOUT.puts"},
	langPerl:   {"print", "say", "printf"},
	langPHP:    {"echo", "print", "print_r", "var_dump", "var_export", "printf"},
	langLua:    {"print", "io.write"},
	langAwk:    {"print", "printf"},
}

// envSecretName is an environment variable name that says it holds a
// secret: the names printenv refuses, and any *_KEY.
const envSecretName = `[A-Z0-9_]*(?:SECRET|TOKEN|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIAL|DATABASE_URL|DB_URL|_DSN|CONNECTION_STRING|MONGO(?:DB)?_UR[IL]|REDIS_URL|AMQP_URL|_KEY\b)[A-Z0-9_]*` //nolint:gosec // a pattern of variable names, not a credential

// envRead is code reading one secret variable of the environment, or the
// whole environment with its values, or a project's .env file parsed
// (a print of it prints the secrets):
// os.environ["DATABASE_URL"], os.getenv("STRIPE_KEY"), process.env.API_TOKEN,
// ENV.fetch("GITHUB_TOKEN"), $ENV{AWS_SECRET_ACCESS_KEY}, getenv('DB_PASSWORD'),
// dict(os.environ), process.env whole, %ENV, $_ENV, dotenv's parsed values.
var envRead = map[lang]*regexp.Regexp{
	langPython: regexp.MustCompile(`\bos\.(?:environ\s*(?:\[\s*|\.get\s*\(\s*)|getenv\s*\(\s*)['"]` + envSecretName + `['"]` +
		`|\bos\.environ\s*(?:$|[),}]|\.(?:items|values|copy)\s*\()|\bdotenv_values\s*\(`),
	langNode: regexp.MustCompile(`\bprocess\.env\s*(?:\.\s*|\[\s*['"])` + envSecretName + `\b` +
		`|\bprocess\.env\s*(?:$|[),}])|\bDeno\.env\.(?:toObject\s*\(|get\s*\(\s*['"]` + envSecretName + `['"])|\brequire\s*\(\s*['"]dotenv['"]\s*\)\s*\.config\s*\([^)]*\)\s*\.parsed\b|\bdotenv\b.*\.parsed\b|\bdotenv\.parse\s*\(`),
	langRuby: regexp.MustCompile(`\bENV\s*(?:\[\s*|\.fetch\s*\(?\s*)['"]` + envSecretName + `['"]` +
		`|\bENV\s*(?:$|[;)}\n]|\.(?:to_h|to_a|to_hash|inspect|values|each|map|select|filter_map|sort)\b)|\bDotenv\.parse\b`),
	langPerl: regexp.MustCompile(`\$ENV\s*\{\s*['"]?` + envSecretName + `['"]?\s*\}|\$ENV\s*\{\s*\$|%ENV\b`),
	langPHP:  regexp.MustCompile(`\b(?:getenv|\$_ENV\s*\[|\$_SERVER\s*\[)\s*\(?\s*['"]` + envSecretName + `['"]|\bgetenv\s*\(\s*\)|\$_ENV\b\s*(?:$|[),;])`),
	langLua:  regexp.MustCompile(`\bos\.getenv\s*\(?\s*['"]` + envSecretName + `['"]`),
	langAwk:  regexp.MustCompile(`\bENVIRON\s*\[\s*"` + envSecretName + `"\s*\]`),
}

// envKeysOnly is code that prints only the names of the environment's
// variables, not their values: sorted(os.environ), Object.keys(process.env),
// ENV.keys, keys %ENV, array_keys($_ENV), or tests whether one is set
// ('API_KEY' in os.environ, ENV.key?("API_KEY"), exists $ENV{API_KEY}).
var envKeysOnly = regexp.MustCompile(`\b(?:sorted|list|set|len)\s*\(\s*os\.environ\s*\)|Object\.keys\s*\(\s*process\.env\s*\)|\bENV\.keys\b|\bkeys\s*%ENV|\barray_keys\s*\(\s*\$_ENV` +
	`|\bin\s+(?:os\.environ|process\.env)\b|\bENV\.(?:key\?|has_key\?|include\?)|\bexists\s+\$ENV\b` +
	// a value only tested: "set" if os.environ.get("X") else "unset",
	// bool(...), !!process.env.X, process.env.X ? ... : ..., ENV["X"] ? ...
	`|\bif\s+os\.(?:environ\.get|getenv)\s*\([^()]*\)\s+else\b|\b(?:bool|len)\s*\(\s*os\.(?:environ\.get|getenv)\s*\([^()]*\)\s*\)` +
	`|!!\s*process\.env\.\w+|\bBoolean\s*\(\s*process\.env\.\w+\s*\)|\bprocess\.env\.\w+\s*\?[^?]|\bENV\s*\[[^\]]*\]\s*\?\s`)

// envPrint judges interpreter code that prints, into the job's output, a
// secret variable of the worker's environment, the whole environment with
// its values, or a project's .env file parsed: python -c
// 'import os; print(os.environ["DATABASE_URL"])', node -e
// 'console.log(process.env)', ruby -e 'pp ENV.to_h'. Only the arguments of a
// print call count, and a loop over the whole environment with a print in
// it (for k, v in os.environ.items(): print(k, v)).
func (w *walker) envPrint(l lang, f *frame, masked string) {
	re, words := envRead[l], printWords[l]
	if re == nil || w.captured > 0 || !re.MatchString(f.src) {
		return
	}
	for _, name := range words {
		for from := 0; ; {
			at := strings.Index(masked[from:], name)
			if at < 0 {
				break
			}
			at += from
			from = at + len(name)
			if at > 0 && (isIdentByte(masked[at-1]) && masked[at-1] != '.' || masked[at-1] == '.' && !strings.Contains(name, ".")) ||
				from < len(masked) && isIdentByte(masked[from]) && masked[from] != '.' {
				continue
			}
			region := printRegion(masked, from)
			if region.end <= region.start {
				continue
			}
			arg := envKeysOnly.ReplaceAllStringFunc(f.src[region.start:region.end], blankOut)
			if loc := re.FindStringIndex(arg); loc != nil && !passedOn(strings.TrimPrefix(masked[region.start:region.start+loc[0]], "(")) {
				w.d.add(f, ruleSecretPrint, name+" prints the worker's secrets read from its environment", "", span{at, region.end})
				return
			}
			if loop := envLoop.FindStringIndex(f.src); loop != nil {
				w.d.add(f, ruleSecretPrint, name+" prints every variable of the worker's environment with its value", "", span{min(loop[0], at), max(loop[1], region.end)})
				return
			}
		}
	}
}

// envLoop is a loop over the environment's names and values.
var envLoop = regexp.MustCompile(`\bos\.environ\.items\s*\(|\bObject\.(?:entries|values)\s*\(\s*process\.env\s*\)|\bENV\.(?:each|map|select|to_h|to_a)\b|\beach\s*%ENV|\$ENV\s*\{\s*\$|\bforeach\s*\(\s*(?:\$_ENV|getenv\s*\(\s*\))`)

// printRegion is the argument text of a print call whose name ends at
// from: a parenthesised list, or (print "x", ruby's puts x) the rest of
// the statement.
func printRegion(masked string, from int) span {
	j := from
	for j < len(masked) && (masked[j] == ' ' || masked[j] == '\t') {
		j++
	}
	if j < len(masked) && masked[j] == '(' {
		return span{j, matchParen(masked, j)}
	}
	// to the end of the statement: a ; or a newline, or the } of a block
	// it is in ($ENV{X} and hash[...] are its own brackets)
	depth := 0
	for k := j; k < len(masked); k++ {
		switch masked[k] {
		case '{', '(', '[':
			depth++
		case '}', ')', ']':
			if depth == 0 {
				return span{j, k}
			}
			depth--
		case ';', '\n':
			if depth == 0 {
				return span{j, k}
			}
		}
	}
	return span{j, len(masked)}
}

// blankOut replaces a text with spaces of the same length.
func blankOut(s string) string { return strings.Repeat(" ", len(s)) }

// printConversions are the calls that turn a value into its text, so
// that a print of their result prints the value: print(dict(os.environ)),
// console.log(JSON.stringify(process.env)).
var printConversions = map[string]bool{
	"": true, "dict": true, "str": true, "repr": true, "dumps": true, "pformat": true, "format": true, "stringify": true,
	"inspect": true, "entries": true, "assign": true, "to_h": true, "to_s": true, "Dumper": true, "encode_json": true,
	"json_encode": true, "print_r": true, "var_export": true, "join": true, "sprintf": true, "f": true,
}

// passedOn reports whether an environment read that follows the text
// before (a print call's arguments up to it, without the opening
// parenthesis) is an argument of another call inside the print, such as
// requests.get(url, headers={...}): the secret is used, and the print
// shows what the call returned.
func passedOn(before string) bool {
	var stack []string
	for i := 0; i < len(before); i++ {
		switch before[i] {
		case '(':
			j := i
			for j > 0 && (isIdentByte(before[j-1]) && before[j-1] != '.') {
				j--
			}
			stack = append(stack, before[j:i])
		case ')':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
	}
	for _, name := range stack {
		if !printConversions[name] {
			return true
		}
	}
	return false
}
