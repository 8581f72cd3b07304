package controller

import (
	"context"
	"encoding/hex"
	"errors"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// discovery is what one discovery read from a server.
type discovery struct {
	tools mcpclient.ToolList
	info  mcpclient.ServerInfo
	// prompts, resources and templates are the server's other listings,
	// nil for one it does not offer.
	prompts, resources, templates *mcpclient.SurfaceList
}

// listSurfaces reads the prompts, resources and resource templates the
// server offers, after its tools. A listing the server answers with a
// JSON-RPC error is left out, as if not offered: many servers that offer
// resources answer resources/templates/list with "method not found", and
// their tools are no less usable. Any other failure (the server did not
// answer, or answered what is not MCP) fails the discovery, as a failed
// tools listing does.
func (d *discovery) listSurfaces(ctx context.Context, s *mcpclient.Session, limits mcpclient.Limits) error {
	caps := d.info.Capabilities
	var err error
	if d.prompts, err = listOffered(ctx, caps.Prompts, s.ListPrompts, limits); err != nil {
		return err
	}
	if d.resources, err = listOffered(ctx, caps.Resources, s.ListResources, limits); err != nil {
		return err
	}
	d.templates, err = listOffered(ctx, caps.Resources, s.ListResourceTemplates, limits)
	return err
}

func listOffered(ctx context.Context, offered bool, list func(context.Context, mcpclient.Limits) (mcpclient.SurfaceList, error), limits mcpclient.Limits) (*mcpclient.SurfaceList, error) {
	if !offered {
		return nil, nil
	}
	l, err := list(ctx, limits)
	var refused *mcpclient.Error
	switch {
	case errors.As(err, &refused) && refused.RPCCode != 0:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &l, nil
}

// summaryOf is a listing as status counts it.
func summaryOf(l *mcpclient.SurfaceList) *mcpv1alpha1.SurfaceSummary {
	if l == nil {
		return nil
	}
	return &mcpv1alpha1.SurfaceSummary{Count: int32(len(l.Items)), Hash: hex.EncodeToString(l.Digest[:]), Truncated: l.Truncated}
}
