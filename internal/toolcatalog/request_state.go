package toolcatalog

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// A 2026-07-28 server asks for input by answering a call "input_required"
// with a requestState, which the client sends back with its answers. The
// server binds that state to whoever it thinks asked, but through the
// catalog every caller is the catalog to it. So the catalog hands the
// caller its own sealed state instead: the server's, bound to the caller,
// the endpoint, the tool and its arguments, for stateTTL, under a key of
// the replica's own that never leaves it. The state names that replica's
// pod, and the call sent again with it is forwarded there when another
// replica gets it (relay_forward.go); a replica that restarted has a new
// key, and such a state is refused, saying to call again.

// statePrefix starts every state the catalog issues: then the pod that
// sealed it, the payload and its MAC, each base64url.
const statePrefix = "mcpop1."

// stateTTL is how long a caller has to send a call again with its answers.
const stateTTL = 30 * time.Minute

// stateKeys seals and opens requestStates.
type stateKeys struct {
	key  []byte
	self string // the pod name sealed states name
}

func newStateKeys(self string) *stateKeys {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	if self == "" {
		self = "local"
	}
	return &stateKeys{key: key, self: self}
}

// sealedState is what a sealed state carries.
type sealedState struct {
	// State is the server's requestState; Parked, instead, names the call
	// of a server of an older revision that waits on this replica for the
	// caller's answers (mcp_park.go).
	State  string `json:"s,omitempty"`
	Parked string `json:"p,omitempty"`
	// Binding is the digest of what the call sent again must match.
	Binding string `json:"b"`
	Expires int64  `json:"e"`
}

// stateBinding is what a state is bound to: the caller, the endpoint, the
// tool as the caller named it and the server tool it stands for (so that a
// menu changed meanwhile does not send the answers to another server), and
// its arguments (as JSON values, so that a client that encodes them again
// otherwise still matches).
func stateBinding(identity, endpoint, tool, serverTool string, arguments json.RawMessage) string {
	h := sha256.New()
	for _, part := range []string{identity, endpoint, tool, serverTool} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(canonicalArguments(arguments))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// canonicalArguments are the arguments decoded and encoded again: keys in
// order, no spacing, numbers as written; none and null are {}.
func canonicalArguments(arguments json.RawMessage) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(arguments))
	d.UseNumber()
	if len(bytes.TrimSpace(arguments)) == 0 || d.Decode(&v) != nil || v == nil {
		return []byte("{}")
	}
	out, _ := json.Marshal(v)
	return out
}

// seal makes the caller's requestState from the server's.
func (k *stateKeys) seal(state, binding string, now time.Time) string {
	return k.sealed(sealedState{State: state, Binding: binding}, now)
}

// sealParked makes the caller's requestState of a parked call.
func (k *stateKeys) sealParked(id, binding string, now time.Time) string {
	return k.sealed(sealedState{Parked: id, Binding: binding}, now)
}

func (k *stateKeys) sealed(s sealedState, now time.Time) string {
	s.Expires = now.Add(stateTTL).Unix()
	payload, _ := json.Marshal(s)
	encoded := base64.RawURLEncoding.EncodeToString(payload)
	return statePrefix + k.self + "." + encoded + "." + k.mac(encoded)
}

func (k *stateKeys) mac(encoded string) string {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte(k.self + "." + encoded))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Why a state is refused; the caller starts the call again.
var (
	errStateForeign   = errors.New("requestState was not issued by mcp-operator")
	errStateElsewhere = errors.New("requestState was issued by a replica that is gone; call the tool again")
	errStateInvalid   = errors.New("requestState is not valid for this call: it was altered, or was issued for another caller, tool or arguments; call the tool again")
	errStateExpired   = errors.New("requestState has expired; call the tool again")
)

// stateOwner is the pod a state of the catalog's names, and its payload
// and MAC; ok is false for any other string. The pod's name may hold dots;
// the payload and MAC, base64url, hold none.
func stateOwner(state string) (owner, encoded, mac string, ok bool) {
	rest, found := strings.CutPrefix(state, statePrefix)
	if !found {
		return "", "", "", false
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return "", "", "", false
	}
	rest, mac = rest[:i], rest[i+1:]
	if i = strings.LastIndexByte(rest, '.'); i <= 0 {
		return "", "", "", false
	}
	return rest[:i], rest[i+1:], mac, true
}

// open checks a state this replica sealed against the call sent again
// with it and returns what it holds: the server's state, or the parked
// call it names.
func (k *stateKeys) open(state, binding string, now time.Time) (sealedState, error) {
	owner, encoded, mac, ok := stateOwner(state)
	switch {
	case !ok:
		return sealedState{}, errStateForeign
	case owner != k.self:
		return sealedState{}, errStateElsewhere
	case !hmac.Equal([]byte(mac), []byte(k.mac(encoded))):
		return sealedState{}, errStateInvalid
	}
	payload, err := base64.RawURLEncoding.DecodeString(encoded)
	var sealed sealedState
	if err != nil || json.Unmarshal(payload, &sealed) != nil {
		return sealedState{}, errStateInvalid
	}
	switch {
	case !hmac.Equal([]byte(sealed.Binding), []byte(binding)):
		return sealedState{}, errStateInvalid
	case now.Unix() > sealed.Expires:
		return sealedState{}, errStateExpired
	}
	return sealed, nil
}
