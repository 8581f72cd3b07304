package toolcatalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
	"github.com/toolmesh/mcp-operator/internal/menu"
	"github.com/toolmesh/mcp-operator/internal/reach"
)

// upstreamError is a failure reaching the server, with its status code.
type upstreamError struct {
	code int
	kind string
	err  error
}

func (e *upstreamError) Error() string { return e.err.Error() }

// callUpstream calls the tool on its server over the pooled session. A
// request that certainly never reached the server (refused, or a session
// the server forgot) is sent once more on a fresh session; any other
// failure is not retried, since the tool may have run.
func (c *Catalog) callUpstream(ctx context.Context, entry *menu.Entry, arguments json.RawMessage) (Envelope, error) {
	var srv mcpv1alpha1.MCPServer
	if err := c.reader.Get(ctx, types.NamespacedName{Namespace: entry.Namespace, Name: entry.Server}, &srv); err != nil {
		return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: "NotFound",
			err: fmt.Errorf("MCPServer %s/%s is gone", entry.Namespace, entry.Server)}
	}
	target, err := reach.Read(ctx, c.reader, &srv, c.opts.Egress)
	if err != nil {
		var spec *reach.SpecError
		if errors.As(err, &spec) {
			return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: spec.Reason, err: err}
		}
		return Envelope{}, &upstreamError{code: http.StatusBadGateway, kind: "Internal", err: errors.New("reading the server's configuration failed")}
	}
	var result mcpclient.CallResult
	err = c.pool.Do(ctx, entry.Namespace+"/"+entry.Server, target, func(s *mcpclient.Session) error {
		var err error
		result, err = s.CallTool(ctx, entry.Tool.OriginalName, arguments)
		return err
	})
	if err == nil {
		return envelopeOf(result), nil
	}
	if code, message, ok := mcpclient.RPCErrorOf(err); ok {
		// The server answered: the call failed as a tool call, which the
		// agent reads as an observation.
		return Envelope{IsError: true, Error: fmt.Sprintf("%s (JSON-RPC error %d)", message, code), Content: []json.RawMessage{}}, nil
	}
	code := http.StatusBadGateway
	if mcpclient.KindOf(err) == mcpclient.ErrTimeout {
		code = http.StatusGatewayTimeout
	}
	return Envelope{}, &upstreamError{code: code, kind: string(mcpclient.KindOf(err)), err: err}
}

// notReady is the answer for a tool whose server is not Ready: the tool
// left the menu, and the agent learns why and that it will come back.
func (c *Catalog) notReady(ctx context.Context, entry *menu.Entry) error {
	why := "its state is not known yet"
	var srv mcpv1alpha1.MCPServer
	if err := c.reader.Get(ctx, types.NamespacedName{Namespace: entry.Namespace, Name: entry.Server}, &srv); err == nil {
		if ready := meta.FindStatusCondition(srv.Status.Conditions, mcpv1alpha1.ConditionReady); ready != nil {
			why = ready.Reason + ": " + ready.Message
		}
	}
	return &upstreamError{code: http.StatusBadGateway, kind: "NotReady",
		err: fmt.Errorf("MCPServer %s/%s is not Ready (%s); %s returns to the menu when it recovers", entry.Namespace, entry.Server, why, entry.Name)}
}
