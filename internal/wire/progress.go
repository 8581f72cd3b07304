package wire

import "encoding/json"

// ProgressTokenOf is the progressToken a request's params carry in _meta,
// nil when the request asks for no progress.
func ProgressTokenOf(params json.RawMessage) json.RawMessage {
	token := Member(Member(params, "_meta"), "progressToken")
	if len(token) == 0 || string(token) == "null" {
		return nil
	}
	return token
}

// WithRequestProgressToken returns a request's params with the
// progressToken in their _meta replaced: a relay asks the next hop for
// progress under a token of its own.
func WithRequestProgressToken(params, token json.RawMessage) (json.RawMessage, error) {
	meta, err := SetMember(Member(params, "_meta"), "progressToken", token)
	if err != nil {
		return nil, err
	}
	return SetMember(params, "_meta", meta)
}

// WithProgressToken returns a notifications/progress's params with its
// progressToken replaced: a relay hands progress back under the token its
// own caller gave.
func WithProgressToken(params, token json.RawMessage) (json.RawMessage, error) {
	return SetMember(params, "progressToken", token)
}
