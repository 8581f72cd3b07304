package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Multi round-trip requests (2026-07-28): a server that needs input from
// the client before it can answer a call answers "input_required" with
// inputRequests (key → {method, params}: elicitation/create,
// sampling/createMessage, roots/list) and a requestState; the client sends
// the call again with inputResponses (key → result) and that state. The
// operator is that client for the callers of the revisions before: it
// asks each request of a round through the call's OnRequest, the same way
// a legacy server's requests are asked (ask.go), and sends the call again,
// for at most maxInputRounds answers in all.

// maxInputRounds bounds the answers of one call (go-sdk's and mcp-go's
// clients stop at 10 too); the last is given to the caller as it is.
const maxInputRounds = 10

// InputRefused ends a call whose server's request the caller did not
// answer: it refused it, or could not be asked. Message says why, as the
// caller (or the catalog for it) said.
type InputRefused struct {
	Method  string
	Message string
}

func (e *InputRefused) Error() string {
	return fmt.Sprintf("the server asked for input (%s) and got none: %s", e.Method, e.Message)
}

// fulfil answers one round's inputRequests through onRequest, one after
// the other in key order (a person answers one question at a time).
func fulfil(ctx context.Context, requests json.RawMessage, onRequest func(context.Context, string, json.RawMessage) Answer) (map[string]json.RawMessage, error) {
	var asked map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if len(requests) > 0 {
		if err := json.Unmarshal(requests, &asked); err != nil {
			return nil, &Error{Kind: ErrMalformedResponse, Message: "the server's inputRequests could not be read", Err: err}
		}
	}
	keys := make([]string, 0, len(asked))
	for k := range asked {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	answers := make(map[string]json.RawMessage, len(asked))
	for _, k := range keys {
		r := asked[k]
		answer := onRequest(ctx, r.Method, r.Params)
		if len(answer.Error) > 0 && string(answer.Error) != "null" {
			var e struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(answer.Error, &e)
			return nil, &InputRefused{Method: shortened(r.Method), Message: strings.TrimSpace(e.Message)}
		}
		answers[k] = answer.Result
	}
	return answers, nil
}

// shortened is a server's method name as an error may quote it.
func shortened(method string) string {
	const most = 64
	if len(method) <= most {
		return method
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(method[cut]) {
		cut--
	}
	return method[:cut] + "…"
}

// backOff waits before a call is sent again to a server that shed load
// (an input_required with nothing to ask): longer each round, within ctx.
func backOff(ctx context.Context, round int) error {
	t := time.NewTimer(time.Duration(round) * 100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return &Error{Kind: ErrTimeout, Message: "the server kept shedding load (input_required with nothing to ask) past the call's time", Err: ctx.Err()}
	}
}
