package vercel

import (
	"encoding/json"
	"strings"
)

// answerMessage digs the message out of an error answer,
// {"error": {"code": ..., "message": ...}}; "" when it is not there (the
// client shows the text).
func answerMessage(data []byte) string {
	var m struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &m) == nil && (m.Error.Code != "" || m.Error.Message != "") {
		return strings.TrimPrefix(m.Error.Code+": "+m.Error.Message, ": ")
	}
	return ""
}
