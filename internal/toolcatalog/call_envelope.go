package toolcatalog

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// Envelope is the uniform result of every executed call.
type Envelope struct {
	Output            string            `json:"output"`
	Error             string            `json:"error,omitempty"`
	Base64Image       string            `json:"base64_image,omitempty"`
	System            string            `json:"system,omitempty"`
	IsError           bool              `json:"isError"`
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent,omitempty"`
	// Message is the message to append to the conversation, in the shape
	// of the API the call came in (rest_shapes.go); none for a plain call.
	Message any `json:"message,omitempty"`
	// inputRequired is a 2026-07-28 server's "input_required" answer, for
	// a 2026-07-28 caller to answer (mcp_input.go).
	inputRequired *inputRequired
}

// inputRequired is what a 2026-07-28 server asked before it can answer a
// call: its inputRequests and requestState, as it sent them.
type inputRequired struct {
	requests json.RawMessage
	state    string
}

// contentPart is what the catalog reads of a result's content item: its
// type, and a text's text or an image's data and type.
type contentPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

func contentPartOf(item json.RawMessage) (contentPart, bool) {
	var part contentPart
	return part, json.Unmarshal(item, &part) == nil
}

// envelopeOf turns a tools/call result into the uniform envelope.
func envelopeOf(result mcpclient.CallResult) Envelope {
	env := Envelope{IsError: result.IsError, Content: result.Content, StructuredContent: result.StructuredContent}
	if env.Content == nil {
		env.Content = []json.RawMessage{}
	}
	var texts []string
	for _, item := range result.Content {
		part, ok := contentPartOf(item)
		if !ok {
			continue
		}
		switch part.Type {
		case "text":
			texts = append(texts, part.Text)
		case "image":
			if env.Base64Image == "" {
				env.Base64Image = part.Data
			}
		}
	}
	env.Output = strings.Join(texts, "\n")
	if env.IsError {
		env.Error = env.Output
		if env.Error == "" {
			env.Error = "the tool reported an error without a message"
		}
	}
	return env
}

// truncate cuts output past the result text limit, on a character
// boundary, and says so in the system note. The text items of content are
// cut to the same budget, so MCP clients and readers of content get no
// more than readers of output; a structured result past the limit is left
// out, since half of it would not parse.
func (c *Catalog) truncate(env *Envelope) {
	limit := c.opts.MaxResultText
	var notes []string
	if total := len(env.Output); total > limit {
		cut := runeCut(env.Output, limit)
		env.Output = env.Output[:cut]
		if env.IsError {
			env.Error = env.Output
		}
		env.Content = cutTextItems(env.Content, cut)
		notes = append(notes, fmt.Sprintf("Output truncated: %d of %d bytes shown.", cut, total))
	}
	if size := len(env.StructuredContent); size > limit {
		env.StructuredContent = nil
		notes = append(notes, fmt.Sprintf("Structured content of %d bytes left out (limit %d).", size, limit))
	}
	env.System = strings.Join(notes, " ")
}

// runeCut is the largest length no more than limit that does not split a
// character of s.
func runeCut(s string, limit int) int {
	if len(s) <= limit {
		return len(s)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return cut
}

// cutTextItems keeps budget bytes of text across the text items, in order
// (counting the newline output puts between them); text items past it are
// dropped, other items kept.
func cutTextItems(items []json.RawMessage, budget int) []json.RawMessage {
	kept := make([]json.RawMessage, 0, len(items))
	for _, item := range items {
		var fields map[string]json.RawMessage
		var text string
		if json.Unmarshal(item, &fields) != nil || string(fields["type"]) != `"text"` || json.Unmarshal(fields["text"], &text) != nil {
			kept = append(kept, item)
			continue
		}
		if budget <= 0 {
			continue
		}
		if len(text) > budget {
			fields["text"], _ = json.Marshal(text[:runeCut(text, budget)])
			item, _ = json.Marshal(fields)
		}
		budget -= len(text) + 1
		kept = append(kept, item)
	}
	return kept
}
