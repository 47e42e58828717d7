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
		stdout, stderr, all := c.p.out.streams()
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
	for offset := 0; ; {
		data, ended, changed := c.p.out.since(offset)
		for len(data) > 0 {
			n := min(len(data), 64<<10)
			if wsWrite(brw.Writer, opText, data[:n]) != nil {
				return
			}
			data, offset = data[n:], offset+n
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
