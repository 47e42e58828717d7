//go:build unix

package policy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandrun/sandrun/internal/testenv"
)

// dialectCorpus holds commands that dash and bash read differently, and a
// few they read alike, for TestDialectDifferential. Programs are named
// relatively only: the harness runs them with PATH holding nothing but
// recording stubs (stubPrograms), so that no real program runs.
var dialectCorpus = []string{
	// &> and &>>: one command to bash, `true &` and `rm …` to dash.
	"true &>/dev/null rm -rf /usr",
	"true &>>/dev/null rm -rf /usr",
	"ls &> out.txt",
	"ls &>> out.txt; cat out.txt",
	// $'…' and $"…": dash reads $ and then an ordinary string.
	`echo $'\' ; rm -rf /usr ; echo \' ' # '`,
	`$'rm' -rf /usr`,
	`echo $"hello"; ls`,
	`printf '%s\n' $'a\tb'; ls`,
	// (( )): arithmetic to bash, nested subshells to dash.
	"((rm -rf /usr))",
	"(( $(rm -rf /usr) ))",
	"(( 1 > 0 )) && ls",
	"for ((i=0; i<2; i++)); do ls; done",
	"echo $[1+2]; ls",
	// Arithmetic on a variable runs its array subscript in bash.
	"x='a[$(myprog injected)]'; echo $((x))",
	"x='a[$(rm -rf /usr)]'; [[ x -eq 1 ]]",
	// [[ ]]: a test to bash, a program named [[ to dash.
	"[[ -f nothere ]] && rm -rf /usr",
	"[[ -f nothere ]] || ls",
	// Keywords and builtins dash does not have.
	"function f { ls; }; f",
	"select x in a b; do ls; done",
	"coproc ls; wait",
	"declare -x X=1; ls",
	"typeset x=1; ls",
	"let x=1; ls",
	"x+=1; ls",
	"time ls",
	"time -p ls",
	"time ls >out.txt 2>&1; cat out.txt",
	// Redirections and substitutions.
	"cat <<< word",
	"cat <<< word; rm -rf /usr",
	"ls |& cat",
	"ls >& out.txt; cat out.txt",
	"cat <(ls) >(cat)",
	"diff <(ls a) <(ls b)",
	"exec {fd}>out.txt; ls >&$fd",
	// Expansions.
	"echo {a,b}; mkdir -p d/{x,y}",
	"{rm,-rf,/usr}",
	"rm -rf /{usr,nothere}",
	"echo ${x:0:1}; ls",
	"x=abc; echo ${x/a/b}; ls",
	"a=(one two); ls ${a[1]}",
	"echo ${!x}; ls",
	"ls ~+",
	// Case fall-through.
	"case x in x) ls;& y) cat;; esac",
	"case x in x) ls;;& x) cat;; esac",
	// Aliases: dash expands them in a script, bash does not.
	"alias ll='ls -l'\nll",
	"alias zap='rm -rf /usr'\nzap",
	// Declarations as POSIX and bash both read them.
	"export X=$(date); ls \"$X\"",
	"f() { local d=build; ls \"$d\"; }; f",
	"readonly R=x; ls $R",
	// The same to both.
	"ls -la",
	"date; cat out.txt || true",
	"if [ -f x ]; then ls; else cat; fi",
	"set -- a b; ls \"$@\"",
	"X=1 ls",
	"! ls",
	"ls & wait",
	"cat <<EOF\n$(ls)\nEOF",
	"f() { rm -rf \"$1\"; }; f /usr",
	"cd .. && ls",
	"echo 'rm -rf /usr' | cat",
	"ls | xargs rm -f",
	"find . -name x -exec rm {} +",
}

// stubPrograms are the programs the corpus may run. Each is a dash script
// that records its argv and exits 0. Besides ordinary programs they include
// the names dash runs as programs where bash has syntax ([[, function,
// coproc, …).
var stubPrograms = []string{
	"rm", "ls", "cat", "touch", "mkdir", "cp", "mv", "chmod", "date", "make", "grep", "sed",
	"head", "tail", "wc", "sort", "diff", "find", "xargs", "myprog", "sudo", "env", "sh", "bash",
	"[[", "function", "select", "coproc", "declare", "typeset", "let", "time", "zap", "ll",
}

// stubScript records the stub's name and arguments, separated by \037, in
// a file of its own (named by its pid) under $STUBLOG. dash builtins only.
const stubScript = `#!%s
[ -n "$STUBLOG" ] || exit 97
printf '%%s\037' "${0##*/}" "$@" >"$STUBLOG/$$"
exit 0
`

// TestDialectDifferential runs each corpus command under the real dash and
// bash, with PATH holding only recording stubs, and checks the detector
// against what ran: for each command and shell, either the detector
// (judging as that shell) denies it, or every program that ran is one it
// judged, with those arguments. In particular no command whose dash run
// ran rm -r on an absolute path is approved as sh.
func TestDialectDifferential(t *testing.T) {
	t.Parallel()
	dash, bash := realShell(t, "dash"), realShell(t, "bash")
	h := newStubHarness(t, dash)
	e := newEngine(t, DefaultConfig())
	var approved, denied int
	for _, cmd := range dialectCorpus {
		for _, sh := range []struct {
			path  string
			shell Shell
		}{{dash, ShellSh}, {bash, ShellBash}} {
			ran, out := h.run(t, sh.path, cmd)
			d := e.Decide(Request{Command: cmd, Origin: "manual", Mode: ModeDeny, Shell: sh.shell})
			if sh.shell == ShellSh {
				for _, argv := range ran {
					if destructive(argv) && d.Allow {
						t.Errorf("dash ran %q for %q, and the detector approves it as sh", argv, cmd)
					}
				}
			}
			if !d.Allow {
				denied++
				continue
			}
			approved++
			var seen [][]arg
			detectIn(cmd, sh.shell, func(words []arg) { seen = append(seen, slices.Clone(words)) })
			for _, argv := range ran {
				if !slices.ContainsFunc(seen, func(s []arg) bool { return matchArgv(s, argv, h.home) }) {
					t.Errorf("%s ran %q for %q, which the detector approves as %s without judging it (judged: %s); output: %s",
						filepath.Base(sh.path), argv, cmd, sh.shell, showSeen(seen), out)
				}
			}
		}
	}
	t.Logf("%d commands, each under dash and bash: %d runs approved (every program that ran was judged), %d denied",
		len(dialectCorpus), approved, denied)
}

// realShell returns the path of a shell the test needs. Without it the
// test fails under CI and is skipped elsewhere.
func realShell(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	testenv.Missing(t, "%s not found (Debian package %q): %v", name, name, err)
	return ""
}

// stubHarness is a directory of recording stubs and a home directory.
type stubHarness struct {
	base, bin, home string
	cred            *syscall.Credential // run as nobody when the test runs as root
}

func newStubHarness(t *testing.T, dash string) *stubHarness {
	t.Helper()
	base, err := os.MkdirTemp("", "dialectdiff")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	h := &stubHarness{base: base, bin: filepath.Join(base, "bin"), home: filepath.Join(base, "home")}
	for _, dir := range []string{h.bin, h.home} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := fmt.Sprintf(stubScript, dash)
	for _, name := range stubPrograms {
		if err := os.WriteFile(filepath.Join(h.bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The stubs stand in for every program; the commands name programs
	// relatively. As a second guard, the shells run as nobody when the
	// test runs as root, so that a real rm could not delete system files.
	if os.Geteuid() == 0 {
		h.cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		if err := os.Chmod(base, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(h.home, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// run runs cmd under the shell at sh in a fresh working directory and
// returns the argv of every stub that ran, and what the shell printed.
func (h *stubHarness) run(t *testing.T, sh, cmd string) ([][]string, string) {
	t.Helper()
	for _, bad := range []string{"/bin/", "/sbin/", "command -p", "hash ", "PATH", "STUBLOG", "busybox", "enable "} {
		if strings.Contains(cmd, bad) {
			t.Fatalf("corpus command %q contains %q: it could run a real program", cmd, bad)
		}
	}
	dir, err := os.MkdirTemp(h.base, "run")
	if err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "log")
	work := filepath.Join(dir, "work")
	for _, d := range []string{logDir, work} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, sh, "-c", cmd)
	c.Dir = work
	c.Env = []string{"PATH=" + h.bin, "HOME=" + h.home, "STUBLOG=" + logDir, "LC_ALL=C"}
	c.WaitDelay = 5 * time.Second
	if h.cred != nil {
		c.SysProcAttr = &syscall.SysProcAttr{Credential: h.cred}
	}
	out, _ := c.CombinedOutput() // many corpus commands fail in one shell or the other
	if ctx.Err() != nil {
		t.Fatalf("%s -c %q timed out", sh, cmd)
	}
	entries, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var ran [][]string
	for _, ent := range entries {
		data, err := os.ReadFile(filepath.Join(logDir, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		ran = append(ran, strings.Split(strings.TrimSuffix(string(data), "\037"), "\037"))
	}
	return ran, string(out)
}

// destructive reports whether argv is rm -r on an absolute path.
func destructive(argv []string) bool {
	if len(argv) == 0 || argv[0] != "rm" {
		return false
	}
	recursive, absolute := false, false
	for _, a := range argv[1:] {
		switch {
		case strings.HasPrefix(a, "--recursive"), strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.ContainsAny(a, "rR"):
			recursive = true
		case strings.HasPrefix(a, "/"):
			absolute = true
		}
	}
	return recursive && absolute
}

// matchArgv reports whether a command line the detector judged stands for
// the argv of a program that ran: the same program and words, a word the
// detector could not resolve standing for any number of words, a glob for
// what it matched, a tilde form for its expansion.
func matchArgv(seen []arg, argv []string, home string) bool {
	if len(seen) == 0 || len(argv) == 0 {
		return false
	}
	name, ok := programName(seen[0])
	if !ok || name != argv[0] {
		return false
	}
	return matchWords(seen[1:], argv[1:], home)
}

func matchWords(seen []arg, argv []string, home string) bool {
	if len(seen) == 0 {
		return len(argv) == 0
	}
	if !seen[0].lit {
		for i := 0; i <= len(argv); i++ {
			if matchWords(seen[1:], argv[i:], home) {
				return true
			}
		}
		return false
	}
	if len(argv) == 0 {
		return false
	}
	want := strings.ReplaceAll(seen[0].val, homeMarker, home)
	if want == "~" || strings.HasPrefix(want, "~/") {
		want = home + want[1:]
	}
	// ~+, ~- and ~user expand to directories the detector does not know
	// (it judges them as home directories, which fails closed).
	tilde := strings.HasPrefix(want, "~")
	if globbed, _ := path.Match(want, argv[0]); want != argv[0] && !globbed && !tilde {
		return false
	}
	return matchWords(seen[1:], argv[1:], home)
}

func showSeen(seen [][]arg) string {
	parts := make([]string, len(seen))
	for i, words := range seen {
		vals := make([]string, len(words))
		for j, a := range words {
			vals[j] = a.val
			if !a.lit {
				vals[j] = "<unknown>"
			}
		}
		parts[i] = strings.Join(vals, " ")
	}
	return strings.Join(parts, " | ")
}
