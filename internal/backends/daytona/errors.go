package daytona

import (
	"encoding/json"
	"strings"
)

// answerMessage digs the message out of an error answer: NestJS's
// {"message": "..." or [...]} on the control plane, {"error": "..."} on
// the toolbox; "" when neither is there (the client shows the text).
func answerMessage(data []byte) string {
	var m struct {
		Message json.RawMessage `json:"message"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &m) != nil {
		return ""
	}
	for _, raw := range []json.RawMessage{m.Message, m.Error} {
		var s string
		var list []string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			return strings.Join(list, "; ")
		}
	}
	return ""
}
