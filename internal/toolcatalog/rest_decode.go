package toolcatalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// call is a decoded execute request.
type call struct {
	name      string
	arguments json.RawMessage
	// shape is the API the call came shaped for, and callID the id it
	// gave the call: the answer's message is in that shape, for that id
	// (rest_shapes.go).
	shape  callShape
	callID string
}

// requestError is a bad request, with the status code it answers.
type requestError struct {
	code    int
	message string
	details []string
	// retryAfter, in seconds, is sent as Retry-After when set.
	retryAfter int
}

func (e *requestError) Error() string { return e.message }

// decodeCall reads an execute body in any of the shapes rest_shapes.go
// names.
func decodeCall(body []byte) (call, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return call{}, &requestError{code: http.StatusBadRequest, message: "the body is not valid JSON: " + err.Error()}
	}
	if _, err := dec.Token(); err != io.EOF {
		return call{}, &requestError{code: http.StatusBadRequest, message: "the body holds more than one JSON value"}
	}
	if fields == nil {
		return call{}, badShape("not a JSON object")
	}
	shape, err := shapeOf(fields)
	if err != nil {
		return call{}, err
	}
	return decodeShaped(shape, fields)
}

func readBody(w http.ResponseWriter, req *http.Request, limit int64) ([]byte, error) {
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(w, req.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, &requestError{code: http.StatusRequestEntityTooLarge, message: fmt.Sprintf("the request body is over %d bytes", limit)}
	case err != nil:
		return nil, &requestError{code: http.StatusBadRequest, message: "the request body could not be read"}
	}
	return buf.Bytes(), nil
}
