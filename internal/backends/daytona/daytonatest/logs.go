package daytonatest

import (
	"net/http"
	"strings"
)

// commandLogs answers the command's log: JSON, or over a WebSocket, the
// marked log so far and, with follow=true, the rest as it comes until
// the command has ended.
func (f *Fake) commandLogs(w http.ResponseWriter, r *http.Request) {
	c := f.command(w, r)
	if c == nil {
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		stdout, stderr, all := c.p.Output()
		writeJSON(w, http.StatusOK, map[string]string{"output": string(all), "stdout": string(stdout), "stderr": string(stderr)})
		return
	}
	// Counted before the hijack, while Close still waits for the request.
	f.wg.Add(1)
	defer f.wg.Done()
	conn, brw, err := wsAccept(w, r)
	if err != nil {
		return
	}
	defer func() { _ = conn.Close() }()
	gone := make(chan struct{})
	f.wg.Go(func() {
		defer close(gone)
		wsDrain(brw.Reader)
	})
	follow := r.URL.Query().Get("follow") == "true"
	f.mu.Lock()
	stall := f.stallFollows
	f.mu.Unlock()
	if !follow {
		stall = -1
	}
	for i, sent := 0, 0; ; {
		chunks, ended, changed := c.p.Since(i)
		i += len(chunks)
		for data := markedLog(chunks); len(data) > 0; {
			n := min(len(data), 64<<10)
			if stall >= 0 && sent+n > stall {
				// Silent from here on, until the client leaves.
				if n = stall - sent; n > 0 {
					_ = wsWrite(brw.Writer, opText, data[:n])
				}
				select {
				case <-gone:
				case <-f.closing:
				}
				return
			}
			if wsWrite(brw.Writer, opText, data[:n]) != nil {
				return
			}
			sent += n
			data = data[n:]
		}
		if ended || !follow {
			_ = wsWrite(brw.Writer, opClose, []byte{0x03, 0xE8})
			return
		}
		select {
		case <-changed:
		case <-gone:
			return
		case <-f.closing:
			return
		}
	}
}
