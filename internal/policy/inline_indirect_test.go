package policy

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// indirectCase is inline code that reaches a call through a lookup: want
// is a rule among its findings and detail part of that finding's detail
// ("" for any).
type indirectCase struct {
	cmd    string
	want   string
	detail string
}

// TestInlineIndirectDeny checks that code reaching a call that runs or
// deletes through a lookup is refused in deny mode: judged as the call a
// literal name names, failing closed (inline-code) on a computed name.
func TestInlineIndirectDeny(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	cases := []indirectCase{
		// The examples.
		{`python3 -c 'import os; getattr(os, "sys"+"tem")("rm -rf /usr")'`, ruleRmRoot, "os.system through getattr"}, // "sys"+"tem" is folded
		{`python3 -c 'import os; f="rm"+"tree"; import shutil; getattr(shutil,f)("/")'`, ruleInlineCode, "python getattr with a computed name"},
		{`ruby -e 'Kernel.send(:system, "rm -rf /usr")'`, ruleRmRoot, "system through send"},
		{`node -e 'require("child_process")["execSync"]("rm -rf /usr")'`, ruleRmRoot, "execSync through lookup on child_process"},
		{`node -e 'const cp=require("child_process"); cp["exec"+"Sync"]("rm -rf /usr")'`, ruleRmRoot, "execSync through lookup on cp"},
		{`node -e 'const cp=require("child_process"); cp["exec"+s]("ls")'`, ruleInlineCode, "node lookup on cp with a computed name"},

		// python
		{`python3 -c 'import os; getattr(os, "system")("rm -rf /usr")'`, ruleRmRoot, "os.system through getattr"},
		{`python3 -c 'import os; getattr(os, "system")(cmd)'`, ruleUnresolved, "os.system through getattr runs a command built at run time"},
		{`python3 -c 'm=__import__("o"+x)'`, ruleInlineCode, "python __import__ of a computed name"},
		{`python3 -c 'import importlib,sys; importlib.import_module(sys.argv[1]).run()'`, ruleInlineCode, "python import_module of a computed name"},
		{`python3 -c 'globals()["__builtins__"]'`, ruleInlineCode, `python globals() lookup of "__builtins__"`},
		{`python3 -c 'locals()[name]()'`, ruleInlineCode, "python locals() lookup with a computed name"},
		{`python3 -c 'g=globals(); g[k]()'`, ruleInlineCode, "python globals() kept in a variable"},
		{`python3 -c 'import os; vars(os)["system"]("rm -rf /usr")'`, ruleRmRoot, "os.system through vars() lookup"},
		{`python3 -c 'import os; os.__dict__["sys"+"tem"]("rm -rf /usr")'`, ruleRmRoot, "os.system through __dict__ lookup"},
		{`python3 -c 'import os; os.__dict__["sys"+t]("id")'`, ruleInlineCode, "python __dict__ lookup with a computed name"},
		{`python3 -c '__builtins__.__dict__["exec"]("import os; os.system(\"rm -rf /usr\")")'`, ruleRmRoot, "exec through __dict__ lookup"},
		{`python3 -c 'import sys; sys.modules[sys.argv[1]].run()'`, ruleInlineCode, "python modules lookup with a computed name"},
		{`python3 -c 'import operator,os; operator.methodcaller("system", "rm -rf /usr")(os)'`, ruleRmRoot, "system through methodcaller"},
		{`python3 -c 'import operator,os; operator.attrgetter("system")(os)("ls")'`, ruleInlineCode, `python attrgetter of "system"`},
		{`python3 -c 'from os import system as s; s("rm -rf /usr")'`, ruleInlineCode, "python alias of system"},
		{`python3 -c 'import os; s=os.system; s("rm -rf /usr")'`, ruleInlineCode, "python os.system used as a value"},
		{`python3 -c 'import os; f=getattr; f(os, "system")("ls")'`, ruleInlineCode, "python getattr used as a value"},
		{`python3 -c 'o=().__class__.__base__.__subclasses__(); getattr(o[1], k)'`, ruleInlineCode, "python getattr with a computed name"},
		{`python3 -c 'import os; getattr(os, f"sys{t}")("ls")'`, ruleInlineCode, "python getattr with a computed name"},
		{`python3 -c 'import os; f = os.__dict__; f["system"]("rm -rf /usr")'`, ruleInlineCode, "python __dict__ kept in a variable"},
		{`python3 -c '__builtins__.__dict__.get("exec")("import os; os.system(\"rm -rf /usr\")")'`, ruleRmRoot, "exec through __dict__ lookup"},
		{`python3 -c '[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "Popen"][0]("id", shell=True)'`, ruleInlineCode, "python __subclasses__ walk"},
		{`python3 -c 'import os; os.system.__call__("rm -rf /usr")'`, ruleInlineCode, "python os.system used as a value"},

		// ruby
		{`ruby -e 'Kernel.public_send(:system, "rm -rf /usr")'`, ruleRmRoot, "system through public_send"},
		{`ruby -e '1.__send__ :system, "rm -rf /usr"'`, ruleRmRoot, "system through __send__"},
		{`ruby -e 'Kernel.send(:"system", "rm -rf /usr")'`, ruleRmRoot, "system through send"},
		{`ruby -e 'm="system"; Kernel.send(m, "ls")'`, ruleInlineCode, "ruby send with a computed name"},
		{`ruby -e 'send(:"#{ARGV[0]}", "ls")'`, ruleInlineCode, "ruby send with a computed name"},
		{`ruby -e 'method(:system).call("rm -rf /usr")'`, ruleRmRoot, "system through method"},
		{`ruby -e 'm = method(:exec); m.call("ls")'`, ruleInlineCode, `ruby method of "exec" used as a value`},
		{`ruby -e 'Object.const_get("Kernel").system("rm -rf /usr")'`, ruleRmRoot, ""},
		{`ruby -e 'Object.const_get("Ker"+"nel").send(:system, "rm -rf /usr")'`, ruleRmRoot, "system through send"},
		{`ruby -e 'Object.const_get("Ker"+k).send(:system, "ls")'`, ruleInlineCode, "ruby const_get with a computed name"},
		{`ruby -e 'Object.instance_eval(ARGV[0])'`, ruleInlineCode, "ruby instance_eval of a computed string"},
		{`ruby -e 'class Object; alias_method :sh, :system; end'`, ruleInlineCode, "ruby alias of system"},

		// perl
		{`perl -e 'my $c = shift; eval $c'`, ruleInlineCode, "perl eval of a computed string"},
		{`perl -e 'eval "$ARGV[0]"'`, ruleInlineCode, "perl eval of a computed string"},
		{`perl -ne 'eval'`, ruleInlineCode, "perl eval of $_"},
		{`perl -e 'use POSIX; &{"POSIX::system"}("rm -rf /usr")'`, ruleRmRoot, "system through &{...}"},
		{`perl -e 'use IPC::Open3; my $n = shift; &{"IPC::Open3::$n"}()'`, ruleInlineCode, "perl &{...} with a computed name"},
		{`perl -e 'use POSIX; *{"POSIX::system"}{CODE}->("rm -rf /usr")'`, ruleInlineCode, `perl *{...} of "POSIX::system"`},
		{`perl -e 'use POSIX; my $n = shift; *{"POSIX::$n"}{CODE}->("ls")'`, ruleInlineCode, "perl *{...} with a computed name"},
		{`perl -e 'use POSIX; my $n = "POSIX::sys"."tem"; &$n("ls")'`, ruleInlineCode, "perl &$ref call"},
		{`perl -e 'use POSIX; my $m = shift; POSIX->$m("ls")'`, ruleInlineCode, "perl ->$method call"},
		{`perl -e 'use POSIX; POSIX->can("system")->("rm -rf /usr")'`, ruleRmRoot, "system through can"},
		{`perl -e 'BEGIN { *CORE::GLOBAL::exit = sub { 1 } }'`, ruleInlineCode, "perl CORE::GLOBAL override"},
		{`perl -e 'my $f = \&CORE::system; $f->("ls")'`, ruleInlineCode, "perl reference to CORE::system"},
		{`perl -e 'system { "sh" } "sh", "-c", "rm -rf /usr"'`, ruleRmRoot, "system through indirect object"},
		{`perl -e 'exec { $ARGV[0] } "x"'`, ruleInlineCode, "perl exec with a computed program"},

		// node
		{`node -e 'globalThis["req"+"uire"]("child_process")'`, ruleInlineCode, `node lookup on globalThis of "require"`},
		{`node -e 'globalThis["req"+r]("child_process")'`, ruleInlineCode, "node lookup on globalThis with a computed name"},
		{`node -e 'const g = globalThis; g["process"].exit()'`, ruleInlineCode, `node lookup on g of "process"`},
		{`node -e 'const fs=require("fs"); fs["rm"+"Sync"]("/usr", {recursive: true})'`, "paths:interp-destroy", ""},
		{`node -e 'const fs=require("fs"); fs["rm"+s]("/usr", {recursive: true})'`, ruleInlineCode, "node lookup on fs with a computed name"},
		{`node -e 'const cp=require("child_process"); Reflect.apply(cp.execSync, null, ["rm -rf /usr"])'`, ruleRmRoot, "execSync through Reflect.apply"},
		{`node -e 'const cp=require("child_process"); Reflect.get(cp, "exec"+"Sync")("rm -rf /usr")'`, ruleRmRoot, "execSync through Reflect.get"},
		{`node -e 'const cp=require("child_process"); Reflect.get(cp, "exec"+s)("ls")'`, ruleInlineCode, "node Reflect.get with a computed name"},
		{`node -e 'process.binding("spawn_sync")'`, ruleInlineCode, "node process.binding"},
		{`node -e 'process.mainModule.require("child_process").execSync("ls")'`, ruleInlineCode, "node process.mainModule"},
		{`node -e 'require(process.argv[1])'`, ruleInlineCode, "node require of a computed name"},
		{`node -e 'import(process.argv[1]).then(m => m.run())'`, ruleInlineCode, "node import() of a computed name"},
		{`node -e 'const {execSync: run}=require("child_process"); run("rm -rf /usr")'`, ruleInlineCode, "node alias of execSync"},
		{`node -e 'require("child_process").execSync.call(null, "rm -rf /usr")'`, ruleRmRoot, "execSync through call"},
		{`node -e 'new Function(process.argv[1])()'`, ruleInlineCode, "node Function of a computed string"},
		{`node -e 'setTimeout("require(\"child_process\").execSync(\"rm -rf /usr\")", 1)'`, ruleRmRoot, ""},
		{`node -e 'eval("require")("child_" + "process")'`, ruleInlineCode, "node require used as a value"},
		{`node -e 'Object.values(require("child_process"))[3]("ls")'`, ruleInlineCode, "node Object.values of a module"},
		{`node -e '[].constructor.constructor(process.argv[1])()'`, ruleInlineCode, "node Function of a computed string"},
		{`node -e 'Function("return process")().mainModule.require("child_process")'`, ruleInlineCode, "node process.mainModule"},

		// php
		{`php -r '$f="system"; $f("rm -rf /usr");'`, ruleRmRoot, "system through variable function"},
		{`php -r '$f="sys"."tem"; $f("rm -rf /usr");'`, ruleRmRoot, "system through variable function"},
		{`php -r '$f="sys".$t; $f("ls");'`, ruleInlineCode, "php call of a variable function"},
		{`php -r '$f = $argv[1]; $f("ls");'`, ruleInlineCode, "php call of a variable function"},
		{`php -r '$$n("ls");'`, ruleInlineCode, "php variable variable call"},
		{`php -r '$o->$m("ls");'`, ruleInlineCode, "php method call with a computed name"},
		{`php -r 'call_user_func("system", "rm -rf /usr");'`, ruleRmRoot, "system through call_user_func"},
		{`php -r 'call_user_func("SYSTEM", "rm -rf /usr");'`, ruleRmRoot, "system through call_user_func"},
		{`php -r 'call_user_func_array($argv[1], ["ls"]);'`, ruleInlineCode, "php call_user_func_array with a computed callback"},
		{`php -r 'array_map("system", ["rm -rf /usr"]);'`, ruleRmRoot, "system through array_map"},
		{`php -r 'array_walk($argv, "passthru");'`, ruleInlineCode, `php array_walk of "passthru"`},
		{`php -r '("sys"."tem")("rm -rf /usr");'`, ruleRmRoot, "system through string call"},
		{`php -r '("sys".$t)("ls");'`, ruleInlineCode, "php call of a computed name"},
		{`php -r '"system"("rm -rf /usr");'`, ruleRmRoot, "system through string call"},
		{`php -r '${"f"}("ls");'`, ruleInlineCode, "php call of a computed name"},
		{`php -r '$o->{"m"}("ls");'`, ruleInlineCode, "php call of a computed name"},
		{`php -r '$a = ["system"]; $a[0]("ls");'`, ruleInlineCode, "php call of an array element"},
		{`php -r '(new ReflectionFunction("system"))->invoke("ls");'`, ruleInlineCode, `php reflectionfunction of "system"`},
		{`php -r 'preg_replace_callback("/.+/", "system", "rm -rf /usr");'`, ruleInlineCode, `php preg_replace_callback of "system"`},

		// lua and gawk
		{`lua -e 'os["exe".."cute"]("ls")'`, ruleInlineCode, "lua os lookup with a computed name"},
		{`lua -e 'local e = os.execute; e("rm -rf /usr")'`, ruleInlineCode, "lua os.execute used as a value"},
		{`lua -e '_G["os"]["execute"]("rm -rf /usr")'`, ruleRmRoot, "os.execute through os lookup"},
		{`lua -e '_G.os["execute"]("rm -rf /usr")'`, ruleRmRoot, "os.execute through os lookup"},
		{`lua -e 'local o = os; o.execute("rm -rf /usr")'`, ruleInlineCode, "lua os kept in a variable"},
		{`lua -e 'require("os").execute("rm -rf /usr")'`, ruleInlineCode, "lua require of os"},
		{`gawk 'BEGIN { f="system"; @f("rm -rf /usr") }'`, ruleInlineCode, "awk indirect function call"},
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			t.Parallel()
			if d := e.Decide(Request{Command: tc.cmd, Origin: "manual", Mode: ModeDeny}); d.Allow {
				t.Errorf("allowed in deny mode: %s", d.Reason)
			}
			var details []string
			for _, f := range detect(tc.cmd) {
				if f.rule == tc.want && strings.Contains(f.detail, tc.detail) {
					return
				}
				details = append(details, f.rule+": "+f.detail)
			}
			t.Errorf("no %s finding with %q in %q", tc.want, tc.detail, details)
		})
	}
}

// TestInlineIndirectAllow checks look-alikes of those lookups that stay
// allowed: literal names that do not run anything, lookups on data, and
// calls of literal names judged harmless.
func TestInlineIndirectAllow(t *testing.T) {
	t.Parallel()
	e := newEngine(t, DefaultConfig())
	cmds := []string{
		// The examples.
		`python3 -c 'print(1+1)'`,
		`python3 -c 'import json,sys; print(json.load(sys.stdin)["x"])'`,
		`python3 -c 'import sys; print(getattr(sys, "version"))'`,
		`python -c 'import argparse; a=argparse.Namespace(v=1); print(getattr(a, "v"))'`,
		`node -e 'console.log(process.version)'`,
		`node -e 'const o={a:1}; console.log(o["a"])'`,
		`node -e 'const pkg=require("./package.json"); console.log(pkg["version"])'`,
		`ruby -e 'puts [1,2].send(:size)'`,
		`perl -ne 'print if /foo/' file`,
		`php -r 'echo strlen("x");'`,

		// python
		`python3 -c 'import os; getattr(os, "system")("ls")'`,
		`python3 -c 'import os; print(os.environ["HOME"], getattr(os, "sep"))'`,
		`python3 -c 'import sys; print(sys.modules["os"].sep)'`,
		`python3 -c 'import subprocess as sp; sp.run(["ls"])'`,
		`python3 -c 'with open("x") as f: print(f.read())'`,
		`python3 -c 'import argparse; p=argparse.ArgumentParser(); print(vars(p.parse_args()))'`,
		`python3 -c 'd={"a": 1}; k="a"; print(d[k], getattr(d, "get")(k))'`,
		`python3 -c 'print(globals())'`,
		`python3 -c 'import subprocess; print(subprocess.PIPE)'`,
		`python3 -c 'a = type("A", (), {})(); d = a.__dict__; print(d, getattr(a, "x", None))'`,

		// ruby
		`ruby -e 'x = [1,2]; puts x.public_send(:first)'`,
		`ruby -e 'puts method(:puts).arity'`,
		`ruby -e 'method = "GET"; puts method'`,
		`ruby -e 'Kernel.send(:system, "ls")'`,
		`ruby -e 'class A; def send(x); end; end'`,
		`ruby -e 'puts Object.const_get(:Math)::PI'`,

		// perl
		`perl -e 'my $f = sub { print "hi" }; $f->()'`,
		`perl -e 'eval { die "x" }; print $@'`,
		`perl -e 'eval "use Foo; 1" or print "no"'`,
		`perl -e '$x = 5 & $y; print $x'`,
		`perl -e 'sub foo {1} my $r = \&foo; &$r'`,
		`perl -e 'my %h = (a => 1); print $h{a}, $h{eval}'`,

		// node
		`node -e 'console.log(process.argv[2], process.env["HOME"])'`,
		`node -e 'const {exec} = require("child_process"); exec("ls", (e, o) => console.log(o))'`,
		`node -e 'setTimeout(() => console.log(1), 10)'`,
		`node -e 'const fs=require("fs"); const a=[1,2]; for (const i in a) console.log(a[i])'`,
		`node -e 'console.log(require.resolve("x"), Reflect.get({a: 1}, "a"))'`,
		`node -e 'global["eval"]("1")'`,
		`node -e 'console.log(Object.values({a: 1}), /require|eval/.test("x"))'`,

		// php
		`php -r '$f = function($x) { return $x * 2; }; echo $f(2);'`,
		`php -r 'echo implode(",", array_map("strtoupper", ["a"]));'`,
		`php -r '$a = [3,1]; usort($a, fn($x, $y) => $x <=> $y); print_r($a);'`,
		`php -r '$f = "strlen"; echo $f("abc");'`,
		`php -r 'if (true) (print "x");'`,
		`php -r '$y = "3"; echo (int)($y);'`,
		`php -r 'echo (function() { return 1; })();'`,
		`php -r 'echo json_encode(array_filter([1, 0, 2]));'`,

		// lua and awk
		`lua -e 'print(_G["print"], os.getenv("HOME"))'`,
		`lua -e 'local t = os.time(); print(t)'`,
		`perl -ne 'print if /eval/' file`,
		`perl -e '*{"main::foo"} = sub { 1 }; foo(); print 2 *{a => 1}{a}'`,
		`perl -e 'use POSIX qw(strftime); print strftime("%Y", localtime)'`,
		`awk '{ print $1 }' file`,
	}
	for _, cmd := range cmds {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			if d := e.Decide(Request{Command: cmd, Origin: "manual", Mode: ModeDeny}); !d.Allow || d.Dangerous {
				t.Errorf("got allow=%v: %s", d.Allow, d.Reason)
			}
		})
	}
}

// indirectFamilies are inline code of about n bytes that repeats one
// lookup: the reading must stay linear in the code.
var indirectFamilies = []struct {
	name string
	gen  func(n int) string
	want string // a rule expected; "" for none
}{
	{"python-getattr", func(n int) string { return repeatTo(n, "python3 -c 'import os; ", "getattr(os, k); ", "'") }, ruleInlineCode},
	{"python-lookups", func(n int) string {
		return repeatTo(n, "python3 -c 'x=1; ", `getattr(x, "real"); vars(x).get("a"); `, "'")
	}, ""},
	{"python-nested", func(n int) string { // nested as deep as the parser allows, then repeated
		return repeatTo(n, "python3 -c 'import os; ", strings.Repeat("getattr(", 400)+"os"+strings.Repeat(`, "sep")`, 400)+"; ", "'")
	}, ""},
	{"ruby-send", func(n int) string { return repeatTo(n, "ruby -e '", "send :size, ", "1'") }, ""},
	{"perl-eval", func(n int) string { return repeatTo(n, "perl -e '", "eval $x; ", "'") }, ruleInlineCode},
	{"perl-refs", func(n int) string { return repeatTo(n, "perl -e '", "&{$x}; $y->(); $z->$m; ", "'") }, ""},
	{"php-vars", func(n int) string { return repeatTo(n, "php -r '", `$f = "strlen"; $f("x"); `, "'") }, ""},
	{"php-calls", func(n int) string { return repeatTo(n, "php -r 'f", "()", ";'") }, ruleInlineCode},
	{"node-lookups", func(n int) string {
		return repeatTo(n, "node -e 'const cp=require(\"child_process\"); ", "cp[k]; ", "'")
	}, ruleInlineCode},
	{"node-data", func(n int) string { return repeatTo(n, "node -e 'const o={}; ", `o[k] = Reflect.get(o, "a"); `, "'") }, ""},
	{"lua-lookups", func(n int) string { return repeatTo(n, "lua -e '", `_G["print"]("x"); `, "'") }, ""},
}

// TestInlineIndirectCost checks that each family of lookups is judged as
// expected at the command limit (within the detector's bounds), and logs
// its time per byte there against that at 16 KiB (a quadratic reading
// would be 8 times it). The ratio is a measurement, not an assertion: a
// timed assertion fails on a loaded machine (docs/BENCHMARKS.md records
// it). Not parallel, for the timing.
func TestInlineIndirectCost(t *testing.T) {
	timed := func(cmd string) (time.Duration, []string) {
		best, rules := time.Duration(1<<62), []string(nil)
		for range 3 {
			start := time.Now()
			rules = rulesOf(cmd, generousBudget())
			best = min(best, time.Since(start))
		}
		return best, rules
	}
	e := newEngine(t, DefaultConfig())
	for _, fam := range indirectFamilies {
		small, large := fam.gen(16<<10), fam.gen(maxCommandLen)
		if len(large) > maxCommandLen {
			t.Fatalf("%s is %d bytes, past the command limit", fam.name, len(large))
		}
		ts, _ := timed(small)
		tl, rules := timed(large)
		if slices.Contains(rules, ruleTooComplex) || fam.want == "" && len(rules) > 0 || fam.want != "" && !slices.Contains(rules, fam.want) {
			t.Errorf("%s: fired %q, want %q", fam.name, rules, fam.want)
		}
		checkDecision(t, large, e.Decide(Request{Command: large, Origin: "manual", Mode: ModeDeny}))
		ratio := (float64(tl) / float64(len(large))) / (float64(ts) / float64(len(small)))
		t.Logf("%-16s %6d B %10v  %6d B %10v  per-byte ratio %.1f", fam.name, len(small), ts.Round(time.Microsecond),
			len(large), tl.Round(time.Microsecond), ratio)
	}
}
