package policy

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/syntax"
)

// The detector's work on one command is bounded twice, and neither bound
// lets anything through: past either one the command is refused with
// too-complex, a fail-closed rule that no allowlist admits.
//
//   - Bounds on what the detector tracks (brace expansion words, values of
//     a variable, alternative expansions, inputs of xargs and find -exec,
//     function calls, nesting; see the max* constants): reaching one adds a
//     too-complex finding naming it (detector.limit) and the walk goes on,
//     so the Decision still lists every other rule the command hits.
//   - A budget of counted work per decision (budget): steps (statements
//     and syntax nodes walked, words expanded, scripts parsed, findings),
//     bytes (source parsed or lexed, text built by expansion, findings)
//     and time: the CPU time of the thread the decision runs on, locked
//     to it, so that a busy machine (a descheduled worker, a neighbour's
//     load) never turns a benign command into a denial, as wall-clock
//     time did. The detector charges its work before doing it
//     (detector.charge); past the budget it stops at once, keeping the
//     findings made so far, and adds too-complex. What it allocates stays
//     within a small factor of what it has charged (under 4 on the
//     adversarial families of adversarial_gen_test.go).

// Budget of one decision.
const (
	budgetSteps   = 1 << 19               // steps of counted work
	budgetBytes   = 40 << 20              // bytes of source parsed and text built
	budgetTimeout = 90 * time.Millisecond // CPU time of the deciding thread
	// clockEvery is how many steps pass between two reads of the clock.
	clockEvery = 1 << 10
	// parseClockMin is the size of a script from which the clock is read
	// after parsing it.
	parseClockMin = 2 << 10
	// parseBytes is what parsing one byte of script costs, in budget
	// bytes: the parser's tree and tokens for both dialects.
	parseBytes = 64
	// findingBytes is what recording one finding costs besides its
	// detail text.
	findingBytes = 128
	// envBytes is what copying one variable, function or file of the
	// shell state costs.
	envBytes = 128
)

// budget is how much work the detector may do on one command.
type budget struct {
	steps   int
	bytes   int
	timeout time.Duration
	now     func() time.Time // the clock the timeout is measured on
	// lockThread locks the decision to its OS thread, for a clock that
	// measures the thread (threadCPU).
	lockThread bool
}

// threadCPU is the CPU time the calling OS thread has used, as a time. A
// caller must hold its goroutine on the thread (runtime.LockOSThread).
// Where the clock cannot be read it falls back to wall-clock time.
func threadCPU() time.Time {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return time.Now()
	}
	return time.Unix(0, ts.Nano())
}

// defaultBudget is the budget of every Decide.
func defaultBudget() budget {
	return budget{steps: budgetSteps, bytes: budgetBytes, timeout: budgetTimeout * raceSlowdown, now: threadCPU, lockThread: true}
}

// meter counts the work done against a budget. Its counters never exceed
// the budget's: a charge that would is refused.
type meter struct {
	limit     budget
	steps     int
	bytes     int
	deadline  time.Time // zero until the clock is first read
	nextClock int       // steps at which the clock is read next
}

// newMeter starts a meter. It does not read the clock: reading the
// thread's CPU clock is a system call that costs as much as judging a
// short command, and most commands are judged before their first clock
// reading is due. The deadline is set at that first reading (see tick),
// which comes after at most clockEvery steps, or before parsing a script
// long enough to take time (parseClockMin): the work left out of the
// timeout is bounded and small.
func newMeter(b budget) meter {
	return meter{limit: b, nextClock: clockEvery}
}

// tick reads the clock: the first reading sets the deadline, a later one
// past it stops the detector.
func (m *meter) tick() {
	now := m.limit.now()
	if m.deadline.IsZero() {
		m.deadline = now.Add(m.limit.timeout)
		return
	}
	if now.After(m.deadline) {
		panic(overBudget{fmt.Sprintf("judging it takes more than %v of CPU time", m.limit.timeout)})
	}
}

// overBudget is the panic value that stops the detector when its budget is
// spent; detectWith recovers it into a too-complex finding. It never
// leaves the package.
type overBudget struct{ detail string }

// charge records steps and bytes of work about to be done. Past the
// budget, or past the deadline, it stops the detector (see overBudget).
func (d *detector) charge(steps, bytes int) {
	m := &d.meter
	if m.limit.now == nil { // a detector built without one gets the default budget, on the wall clock (its thread is not locked)
		b := defaultBudget()
		b.now, b.lockThread = time.Now, false
		*m = newMeter(b)
	}
	switch {
	case steps > m.limit.steps-m.steps:
		panic(overBudget{fmt.Sprintf("judging it takes more than %d steps", m.limit.steps)})
	case bytes > m.limit.bytes-m.bytes:
		panic(overBudget{"judging it takes more than " + sizeOf(m.limit.bytes)})
	}
	m.steps += steps
	m.bytes += bytes
	if m.steps >= m.nextClock {
		m.nextClock = m.steps + clockEvery
		m.tick()
	}
}

// clock stops the detector past the deadline, for work that is not
// counted in steps (parsing, comparing the dialects' trees).
func (d *detector) clock() {
	d.charge(0, 0)
	d.meter.tick()
}

// stop ends the walk with a too-complex finding for a bound past which
// going on would not be worth it (too many nested scripts).
func (d *detector) stop(detail string) { panic(overBudget{detail}) }

// recovered turns what stopped the detector into its last finding:
// too-complex for a spent budget, unparsable for an internal error.
func recovered(r any, cmd string) finding {
	if ob, ok := r.(overBudget); ok {
		return finding{rule: ruleTooComplex, detail: ob.detail, text: cmd}
	}
	return finding{rule: ruleUnparsable, detail: internalError, text: cmd}
}

// limit records that a bound on what the detector tracks was reached at sp
// in frame f: the command is refused with too-complex, detail naming the
// bound. Each bound is reported once per command.
func (d *detector) limit(f *frame, detail string, sp span) {
	if d.limits[detail] {
		return
	}
	if d.limits == nil {
		d.limits = make(map[string]bool)
	}
	d.limits[detail] = true
	d.add(f, ruleTooComplex, detail, "", sp)
}

// limit is detector.limit in the walker's frame.
func (w *walker) limit(detail string, sp span) { w.d.limit(w.f, detail, sp) }

// What value.bounded reports when it cuts a value.
var (
	overValues   = fmt.Sprintf("a variable with more than %d values", maxValues)
	overValueLen = fmt.Sprintf("a value longer than %d KiB", maxValueLen>>10)
)

// leave ends the walk of statement s: a limit one of its assignments
// reached is reported at it.
func (w *walker) leave(s *syntax.Stmt) {
	w.depth--
	if w.env.over != "" {
		w.limit(w.env.over, stmtSpan(s))
		w.env.over = ""
	}
}

// envSize is what copying e for a nested script costs, in steps.
func envSize(e *env) int { return 1 + len(e.vars) + len(e.funcs) + len(e.files) }

// argBytes is what one expanded word costs besides its text.
const argBytes = 192

// overAlts is the limit on the alternative expansions of one word.
var overAlts = fmt.Sprintf("a word with more than %d alternative expansions", maxAlts)

func wordSpan(word *syntax.Word) span {
	return span{int(word.Pos().Offset()), int(word.End().Offset())}
}

// cut keeps at most maxAlts alternatives of a word being expanded; past
// that the word is too complex.
func (x *expander) cut(next []*partial) []*partial {
	if len(next) <= maxAlts {
		return next
	}
	x.w.limit(overAlts, x.sp)
	next = next[:maxAlts]
	next[maxAlts-1].unknown(taintUnknown)
	return next
}

// braces reports whether word, split into brace expressions as split,
// may be brace-expanded: it makes at most maxFields words. It charges the
// expansion first: mvdan.cc/sh builds each word by copying the parts of
// every brace expression before it, which costs words × expressions × parts.
func (w *walker) braces(word, split *syntax.Word) bool {
	n, exprs, parts := braceWords(split.Parts, maxFields)
	if n > maxFields {
		w.limit(fmt.Sprintf("brace expansion produces more than %d words", maxFields), wordSpan(word))
		return false
	}
	w.d.charge(n*(exprs+1), n*(exprs+1)*parts*16)
	return true
}

// braceWords counts the words brace expansion makes of parts (at most
// limit+1: it stops counting past limit), the brace expressions and the
// word parts in them.
func braceWords(parts []syntax.WordPart, limit int) (words, exprs, nparts int) {
	words, nparts = 1, len(parts)
	for _, p := range parts {
		br, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		exprs++
		n := 0
		if br.Sequence {
			n = seqLen(br, limit)
		} else {
			for _, e := range br.Elems {
				k, x, y := braceWords(e.Parts, limit)
				n, exprs, nparts = min(n+k, limit+1), exprs+x, nparts+y
			}
		}
		words = min(words*max(n, 1), limit+1)
	}
	return words, exprs, nparts
}

// seqLen is how many words a sequence expression {A..B[..STEP]} makes, as
// mvdan.cc/sh/expand counts them, at most limit+1.
func seqLen(br *syntax.BraceExp, limit int) int {
	if len(br.Elems) < 2 {
		return 1
	}
	from, err1 := strconv.ParseInt(br.Elems[0].Lit(), 10, 64)
	to, err2 := strconv.ParseInt(br.Elems[1].Lit(), 10, 64)
	if err1 != nil || err2 != nil {
		a, b := br.Elems[0].Lit(), br.Elems[1].Lit()
		if a == "" || b == "" {
			return limit + 1
		}
		from, to = int64(a[0]), int64(b[0])
	}
	step := int64(1)
	if len(br.Elems) > 2 {
		if s, _ := strconv.ParseInt(br.Elems[2].Lit(), 10, 64); s != 0 {
			step = s
		}
	}
	if step < 0 {
		step = -step
	}
	span := uint64(to - from)
	if from > to {
		span = uint64(from - to)
	}
	if step <= 0 || span/uint64(step) >= uint64(limit) {
		return limit + 1
	}
	return int(span/uint64(step)) + 1
}

// callKey names a function call for the recursion check: a call with the
// same arguments as one being walked adds nothing; one with other
// arguments is walked again (within maxCalls).
func callKey(c *command) string {
	var sb strings.Builder
	sb.WriteString(c.name)
	for _, a := range c.args {
		sb.WriteByte(0)
		if !a.lit {
			sb.WriteString("\x00?") // unknown: every unknown argument is alike
			continue
		}
		sb.WriteString(a.val)
	}
	return sb.String()
}

// overInputs is the limit on the inputs xargs, find -exec and parallel
// substitute into the command they run.
var overInputs = fmt.Sprintf("more than %d inputs of xargs, find -exec or parallel", maxInputs)

// stmtKind is kindOf for a statement, the most frequent node: one of 16
// strings made once, so a script's statements allocate nothing.
func stmtKind(n *syntax.Stmt) string {
	return stmtKinds[boolInt(n.Negated)<<3|boolInt(n.Background)<<2|boolInt(n.Coprocess)<<1|boolInt(n.Disown)]
}

var stmtKinds = func() (out [16]string) {
	for i := range out {
		out[i] = "Stmt!" + strconv.FormatBool(i&8 != 0) + "&" + strconv.FormatBool(i&4 != 0) +
			"|&" + strconv.FormatBool(i&2 != 0) + "&|" + strconv.FormatBool(i&1 != 0)
	}
	return out
}()

// sizeOf shows a number of bytes in MiB or KiB.
func sizeOf(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d KiB", n>>10)
}
