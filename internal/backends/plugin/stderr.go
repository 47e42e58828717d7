package plugin

import (
	"bufio"
	"bytes"
	"errors"
	"log/slog"
)

// A plugin's stderr is its log. The host logs it line by line, within
// these bounds per plugin process, and drains the rest so that a chatty
// plugin never blocks on a full pipe. It never reaches job output.
const (
	maxLogLine  = 4 << 10  // Longer lines are cut.
	maxLogBytes = 64 << 10 // Lines past this budget are dropped.
)

// logStderr copies the plugin's stderr to log until the end of it.
func (p *process) logStderr(log *slog.Logger) {
	defer close(p.logged)
	r := bufio.NewReaderSize(p.stderr, maxLogLine)
	budget, warned := maxLogBytes, false
	inLine := false // Within an over-long line, whose start was logged.
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 && !inLine {
			if budget > 0 {
				budget -= len(line)
				log.Info("plugin log", "line", string(bytes.TrimRight(line, "\r\n")))
			} else if !warned {
				warned = true
				log.Warn("plugin log: over budget, the rest is dropped", "budget_bytes", maxLogBytes)
			}
		}
		inLine = errors.Is(err, bufio.ErrBufferFull)
		if err != nil && !inLine {
			return
		}
	}
}
