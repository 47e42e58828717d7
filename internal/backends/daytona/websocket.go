package daytona

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha1" // #nosec G505 -- RFC 6455 fixes SHA-1 for the handshake; it protects nothing.
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/sandrun/sandrun/internal/backends"

	"github.com/sandrun/sandrun/internal/backends/httpsandbox"
)

// The client end of a WebSocket (RFC 6455), as much as following a log
// stream needs: it reads the server's messages, answers pings and closes.
// The toolbox streams logs only this way.

// wsGUID is the handshake's fixed key suffix.
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// maxFrame bounds one frame's payload.
const maxFrame = 16 << 20

// Frame opcodes.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// errClosed is the server's normal close (1000 or 1001, or no code).
var errClosed = errors.New("websocket closed")

// wsConn is an open WebSocket connection.
type wsConn struct {
	rwc  io.ReadWriteCloser
	r    *bufio.Reader
	wmu  sync.Mutex
	stop func() bool // stops closing rwc when ctx ends
}

// dialWS opens a WebSocket to u (an http or https URL) with the client's
// credentials. The connection is closed when ctx ends.
func dialWS(ctx context.Context, c *httpsandbox.Client, op string, u *url.URL) (*wsConn, error) {
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce)
	key := base64.StdEncoding.EncodeToString(nonce)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	c.Authorize(req.Header)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		return nil, fmt.Errorf("%s: %w: %w", op, backends.ErrUnavailable, err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		defer func() { _ = resp.Body.Close() }()
		return nil, c.AnswerError(op, false, resp)
	}
	rwc, ok := resp.Body.(io.ReadWriteCloser)
	if !ok || resp.Header.Get("Sec-WebSocket-Accept") != acceptKey(key) {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%s: the server's WebSocket handshake is wrong", op)
	}
	ws := &wsConn{rwc: rwc, r: bufio.NewReaderSize(rwc, 64<<10)}
	ws.stop = context.AfterFunc(ctx, func() { _ = rwc.Close() })
	return ws, nil
}

// acceptKey is the Sec-WebSocket-Accept that answers key.
func acceptKey(key string) string {
	h := sha1.Sum([]byte(key + wsGUID)) // #nosec G401 -- the handshake's fixed digest.
	return base64.StdEncoding.EncodeToString(h[:])
}

// next returns the next message's payload. It answers pings on the way,
// and returns errClosed when the server closes normally.
func (ws *wsConn) next() ([]byte, error) {
	var msg []byte
	for {
		fin, op, payload, err := ws.readFrame()
		if err != nil {
			return nil, err
		}
		switch op {
		case opPing:
			if err := ws.write(opPong, payload); err != nil {
				return nil, err
			}
			continue
		case opPong:
			continue
		case opClose:
			if len(payload) >= 2 {
				if code := binary.BigEndian.Uint16(payload); code != 1000 && code != 1001 {
					return nil, fmt.Errorf("websocket closed by the server with code %d", code)
				}
			}
			_ = ws.write(opClose, payload)
			return nil, errClosed
		case opText, opBinary, opContinuation:
			msg = append(msg, payload...)
			if len(msg) > maxFrame {
				return nil, fmt.Errorf("websocket message over %d bytes", maxFrame)
			}
		default:
			return nil, fmt.Errorf("websocket opcode %#x", op)
		}
		if fin {
			return msg, nil
		}
	}
}

// readFrame reads one frame, unmasking it if needed.
func (ws *wsConn) readFrame() (fin bool, op byte, payload []byte, err error) {
	var h [2]byte
	if _, err = io.ReadFull(ws.r, h[:]); err != nil {
		return false, 0, nil, err
	}
	fin, op = h[0]&0x80 != 0, h[0]&0x0F
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var ext [2]byte
		if _, err = io.ReadFull(ws.r, ext[:]); err != nil {
			return false, 0, nil, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err = io.ReadFull(ws.r, ext[:]); err != nil {
			return false, 0, nil, err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	if n > maxFrame {
		return false, 0, nil, fmt.Errorf("websocket frame of %d bytes", n)
	}
	var mask [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err = io.ReadFull(ws.r, mask[:]); err != nil {
			return false, 0, nil, err
		}
	}
	payload = make([]byte, n)
	if _, err = io.ReadFull(ws.r, payload); err != nil {
		return false, 0, nil, err
	}
	if masked {
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
	}
	return fin, op, payload, nil
}

// write sends one frame, masked as a client must.
func (ws *wsConn) write(op byte, payload []byte) error {
	ws.wmu.Lock()
	defer ws.wmu.Unlock()
	frame := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		frame = append(frame, 0x80|byte(n))
	case n <= 0xFFFF:
		frame = append(frame, 0x80|126)
		frame = binary.BigEndian.AppendUint16(frame, uint16(n))
	default:
		frame = append(frame, 0x80|127)
		frame = binary.BigEndian.AppendUint64(frame, uint64(n))
	}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	frame = append(frame, mask[:]...)
	for i, b := range payload {
		frame = append(frame, b^mask[i%4])
	}
	_, err := ws.rwc.Write(frame)
	return err
}

// close says goodbye (code 1000) and closes the connection.
func (ws *wsConn) close() {
	_ = ws.write(opClose, []byte{0x03, 0xE8})
	ws.stop()
	_ = ws.rwc.Close()
}
