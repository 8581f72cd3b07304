package toolcatalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// The shapes a model API gives a tool call in, which POST …/execute takes
// as they come and answers in kind: the message to append to the
// conversation, in the same API's shape. Each shape is read with the keys
// that API sends; a key it does not have is refused, not ignored, so a
// call in one shape is never read as another.

// callShape is the API a call came shaped for.
type callShape string

const (
	// shapePlain is {"name", "arguments": {...}}: no message.
	shapePlain callShape = "plain"
	// shapeChat is a Chat Completions tool call: {"id", "type": "function",
	// "function": {"name", "arguments": "<JSON text>"}}.
	shapeChat callShape = "chat"
	// shapeResponses is a Responses API function_call item: {"type":
	// "function_call", "call_id", "name", "arguments": "<JSON text>"}.
	shapeResponses callShape = "responses"
	// shapeAnthropic is a Messages API tool_use block: {"type": "tool_use",
	// "id", "name", "input": {...}}.
	shapeAnthropic callShape = "anthropic"
	// shapeGemini is a Gemini functionCall part: {"functionCall": {"id",
	// "name", "args": {...}}}.
	shapeGemini callShape = "gemini"
)

// acceptedShapes is what a caller whose body is none of them is told.
const acceptedShapes = `{"name", "arguments"}; a Chat Completions tool call {"id", "type": "function", "function": {"name", "arguments"}}; ` +
	`a Responses function_call item {"type": "function_call", "call_id", "name", "arguments"}; ` +
	`an Anthropic tool_use block {"type": "tool_use", "id", "name", "input"}; ` +
	`or a Gemini part {"functionCall": {"name", "args"}}`

// shapeKeys are the keys each shape may have.
// caller, in Responses and Anthropic alike, says who made the call (the
// model itself, or code it ran): the SDKs hand a block over with it, and
// the answer is the same whoever called. parsed_arguments is what
// openai's parse() and stream() helpers add: the arguments, decoded; the
// arguments themselves are read.
var shapeKeys = map[callShape][]string{
	shapePlain:     {"name", "arguments"},
	shapeChat:      {"id", "type", "function", "index"},
	shapeResponses: {"type", "id", "call_id", "name", "arguments", "status", "caller", "parsed_arguments"},
	shapeAnthropic: {"type", "id", "name", "input", "cache_control", "caller"},
	shapeGemini:    {"functionCall", "thoughtSignature"},
}

// shapeOf tells a body's shape by its keys and type.
func shapeOf(fields map[string]json.RawMessage) (callShape, error) {
	var typ string
	if raw, ok := fields["type"]; ok && json.Unmarshal(raw, &typ) != nil {
		return "", badShape(`"type" is not a string`)
	}
	_, hasFunction := fields["function"]
	_, hasFunctionCall := fields["functionCall"]
	var shape callShape
	switch {
	case hasFunctionCall:
		shape = shapeGemini
	case hasFunction && (typ == "" || typ == "function"):
		shape = shapeChat
	case typ == "function_call":
		shape = shapeResponses
	case typ == "tool_use":
		shape = shapeAnthropic
	case typ == "":
		shape = shapePlain
	default:
		return "", badShape(fmt.Sprintf("a call of type %q", typ))
	}
	allowed := shapeKeys[shape]
	var unknown []string
	for k := range fields {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return "", &requestError{code: http.StatusBadRequest, message: fmt.Sprintf("the body is read as %s, which has no %s; execute takes %s",
			shapeNames[shape], quoteAll(unknown), acceptedShapes)}
	}
	return shape, nil
}

var shapeNames = map[callShape]string{
	shapePlain:     `{"name", "arguments"}`,
	shapeChat:      "a Chat Completions tool call",
	shapeResponses: "a Responses function_call item",
	shapeAnthropic: "an Anthropic tool_use block",
	shapeGemini:    "a Gemini functionCall part",
}

func badShape(what string) error {
	return &requestError{code: http.StatusBadRequest, message: "the body is " + what + ", which execute does not take: it takes " + acceptedShapes}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteAll(keys []string) string {
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

// decodeShaped reads a body of the shape: the tool, its arguments (a JSON
// object, absent or null read as {}) and the call's id. With an error it
// returns what it read of the call (its shape, id and name), so that the
// refusal is answered in the call's shape.
func decodeShaped(shape callShape, fields map[string]json.RawMessage) (call, error) {
	c := call{shape: shape}
	var args json.RawMessage
	var err error
	switch shape {
	case shapePlain:
		err = stringField(fields, "name", &c.name)
		args = fields["arguments"]
	case shapeChat:
		fn, fnErr := nestedFields(fields, "function", "name", "arguments", "parsed_arguments")
		err = firstErr(stringField(fields, "id", &c.callID), fnErr)
		if err == nil {
			err = stringField(fn, "name", &c.name)
		}
		if err == nil {
			err = requiredID(c.callID, "id")
		}
		if err == nil {
			args, err = textArguments(fn["arguments"], "function.arguments")
		}
	case shapeResponses:
		err = firstErr(stringField(fields, "call_id", &c.callID), stringField(fields, "name", &c.name), requiredID(c.callID, "call_id"))
		if err == nil {
			args, err = textArguments(fields["arguments"], "arguments")
		}
	case shapeAnthropic:
		err = firstErr(stringField(fields, "id", &c.callID), stringField(fields, "name", &c.name), requiredID(c.callID, "id"))
		args = fields["input"]
	case shapeGemini:
		fc, fcErr := nestedFields(fields, "functionCall", "id", "name", "args")
		err = fcErr
		if err == nil {
			err = firstErr(stringField(fc, "id", &c.callID), stringField(fc, "name", &c.name))
		}
		args = fc["args"]
	}
	if err != nil {
		return c, err
	}
	if c.name == "" {
		return c, &requestError{code: http.StatusBadRequest, message: "the call names no tool; execute takes " + acceptedShapes}
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	// An object, checked without decoding it: validation decodes it next.
	if args[0] != '{' || !json.Valid(args) {
		return c, &requestError{code: http.StatusBadRequest, message: "arguments must be a JSON object"}
	}
	c.arguments = args
	return c, nil
}

// nestedFields reads the object a shape nests its call in (Chat
// Completions' function, Gemini's functionCall), with its keys exactly as
// written: a key it does not have is refused, not ignored.
func nestedFields(fields map[string]json.RawMessage, key string, allowed ...string) (map[string]json.RawMessage, error) {
	var nested map[string]json.RawMessage
	if json.Unmarshal(fields[key], &nested) != nil || nested == nil {
		return nil, &requestError{code: http.StatusBadRequest, message: fmt.Sprintf("%q is not an object with %s", key, quoteAll(allowed))}
	}
	var unknown []string
	for k := range nested {
		if !contains(allowed, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, &requestError{code: http.StatusBadRequest, message: fmt.Sprintf("%q has no %s: it has %s", key, quoteAll(unknown), quoteAll(allowed))}
	}
	return nested, nil
}

// requiredID refuses a call without the id its answer must name: the API
// that sent it refuses an answer that names none.
func requiredID(id, key string) error {
	if id == "" {
		return &requestError{code: http.StatusBadRequest, message: fmt.Sprintf("the call has no %q, which its answer must name", key)}
	}
	return nil
}

// stringField reads a string field of a body, if it is there.
func stringField(fields map[string]json.RawMessage, key string, into *string) error {
	if raw, ok := fields[key]; ok && json.Unmarshal(raw, into) != nil {
		return &requestError{code: http.StatusBadRequest, message: fmt.Sprintf("%q is not a string", key)}
	}
	return nil
}

// textArguments are arguments a model sends as JSON text (OpenAI's
// shapes); an object given as it is is taken too.
func textArguments(raw json.RawMessage, key string) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return raw, nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		return nil, &requestError{code: http.StatusBadRequest, message: key + " is not a valid JSON string"}
	}
	return json.RawMessage(text), nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// The messages a shaped call is answered with, ready to append to the
// conversation in the same API.
type (
	// ToolMessage is a Chat Completions tool message.
	ToolMessage struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	}
	// functionCallOutput is a Responses API function_call_output item.
	functionCallOutput struct {
		Type   string `json:"type"`
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
	// toolResult is an Anthropic tool_result block.
	toolResult struct {
		Type      string `json:"type"`
		ToolUseID string `json:"tool_use_id"`
		IsError   bool   `json:"is_error,omitempty"`
		Content   []any  `json:"content"`
	}
	anthropicText struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	anthropicImage struct {
		Type   string `json:"type"`
		Source struct {
			Type      string `json:"type"`
			MediaType string `json:"media_type"`
			Data      string `json:"data"`
		} `json:"source"`
	}
	// functionResponsePart is a Gemini functionResponse part; the
	// response holds output, or error for a failure, as Gemini's docs
	// name them.
	functionResponsePart struct {
		FunctionResponse struct {
			ID       string            `json:"id,omitempty"`
			Name     string            `json:"name"`
			Response map[string]string `json:"response"`
		} `json:"functionResponse"`
	}
)

// messageOf is the message a shaped call is answered with: the result of
// env, or failure's text when the call failed; nil for a plain call.
func (c *call) messageOf(env *Envelope, failure string) any {
	text, isError := env.Output, env.IsError
	switch {
	case failure != "":
		text, isError = failure, true
	case isError && text == "":
		text = env.Error
	}
	if env.System != "" && failure == "" {
		text = strings.TrimPrefix(text+"\n"+env.System, "\n")
	}
	switch c.shape {
	case shapeChat:
		return &ToolMessage{Role: "tool", ToolCallID: c.callID, Content: text}
	case shapeResponses:
		return &functionCallOutput{Type: "function_call_output", CallID: c.callID, Output: text}
	case shapeAnthropic:
		r := &toolResult{Type: "tool_result", ToolUseID: c.callID, IsError: isError}
		if failure != "" {
			r.Content = []any{anthropicText{Type: "text", Text: failure}}
		} else {
			r.Content = anthropicBlocks(env)
		}
		return r
	case shapeGemini:
		p := &functionResponsePart{}
		p.FunctionResponse.ID, p.FunctionResponse.Name = c.callID, c.name
		key := "output"
		if isError {
			key = "error"
		}
		p.FunctionResponse.Response = map[string]string{key: text}
		return p
	}
	return nil
}

// anthropicImageTypes are the image types the Messages API takes.
var anthropicImageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// anthropicBlocks are a result's content as Anthropic content blocks:
// text as text, images as base64 image blocks, anything else as its JSON
// text; the catalog's note last.
func anthropicBlocks(env *Envelope) []any {
	blocks := []any{}
	for _, item := range env.Content {
		part, _ := contentPartOf(item)
		switch {
		case part.Type == "text" && part.Text == "":
			// The Messages API refuses an empty text block.
		case part.Type == "text":
			blocks = append(blocks, anthropicText{Type: "text", Text: part.Text})
		case part.Type == "image" && anthropicImageTypes[part.MimeType]:
			img := anthropicImage{Type: "image"}
			img.Source.Type, img.Source.MediaType, img.Source.Data = "base64", part.MimeType, part.Data
			blocks = append(blocks, img)
		case part.Type == "image":
			blocks = append(blocks, anthropicText{Type: "text", Text: fmt.Sprintf("[an image of type %q, which this API does not take]", part.MimeType)})
		default:
			blocks = append(blocks, anthropicText{Type: "text", Text: string(item)})
		}
	}
	if len(env.Content) == 0 && env.IsError && env.Error != "" {
		blocks = append(blocks, anthropicText{Type: "text", Text: env.Error})
	}
	if env.System != "" {
		blocks = append(blocks, anthropicText{Type: "text", Text: env.System})
	}
	return blocks
}
