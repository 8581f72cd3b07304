package controller

import (
	"context"
	"encoding/hex"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
	"github.com/toolmesh/mcp-operator/internal/mcpclient"
)

// discovery is what one discovery read from a server.
type discovery struct {
	tools mcpclient.ToolList
	info  mcpclient.ServerInfo
	// prompts, resources and templates are the server's other listings,
	// nil for one it does not offer, or that failed (failed says which).
	prompts, resources, templates *mcpclient.SurfaceList
	failed                        []string
}

// listSurfaces reads the prompts, resources and resource templates the
// server offers, after its tools. None of them decides whether the server
// is Ready, which its tools do: a listing the server answers "method not
// found" (many servers that offer resources lack resources/templates/list)
// counts as not offered, and any other failure is named in failed, so that
// publish keeps what status said of that listing until it works again.
func (d *discovery) listSurfaces(ctx context.Context, s *mcpclient.Session, limits mcpclient.Limits) {
	caps := d.info.Capabilities
	d.prompts = d.listOffered(ctx, "prompts", caps.Prompts, s.ListPrompts, limits)
	d.resources = d.listOffered(ctx, "resources", caps.Resources, s.ListResources, limits)
	d.templates = d.listOffered(ctx, "resource templates", caps.Resources, s.ListResourceTemplates, limits)
}

func (d *discovery) listOffered(ctx context.Context, what string, offered bool, list func(context.Context, mcpclient.Limits) (mcpclient.SurfaceList, error), limits mcpclient.Limits) *mcpclient.SurfaceList {
	if !offered {
		return nil
	}
	l, err := list(ctx, limits)
	if code, _, ok := mcpclient.RPCErrorOf(err); ok && code == mcp.METHOD_NOT_FOUND {
		return nil
	}
	if err != nil {
		logf.FromContext(ctx).Info("A server's listing failed; status keeps what it last said of it", "listing", what, "error", err.Error())
		d.failed = append(d.failed, what)
		return nil
	}
	return &l
}

// keptOr is a listing's summary: as read, or, when reading it failed, as
// status had it.
func (d *discovery) keptOr(what string, l *mcpclient.SurfaceList, before *mcpv1alpha1.SurfaceSummary) *mcpv1alpha1.SurfaceSummary {
	if slices.Contains(d.failed, what) {
		return before
	}
	return summaryOf(l)
}

// summaryOf is a listing as status counts it.
func summaryOf(l *mcpclient.SurfaceList) *mcpv1alpha1.SurfaceSummary {
	if l == nil {
		return nil
	}
	return &mcpv1alpha1.SurfaceSummary{Count: int32(len(l.Items)), Hash: hex.EncodeToString(l.Digest[:]), Truncated: l.Truncated}
}
