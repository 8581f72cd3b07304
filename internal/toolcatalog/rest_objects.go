package toolcatalog

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/toolmesh/mcp-operator/api/v1alpha1"
)

// The objects routes serve MCPServers and ToolCollections as the cache
// holds them, to viewers who may get them: what `kubectl get -o json`
// shows them, read from the replica's cache rather than the API server.
// The console reads them; so may any client. Lists leave status.tools out
// (a list of servers is about the servers; their tools are on each one's
// page); every answer leaves metadata.managedFields out.

// objectKind is one kind the objects routes serve.
type objectKind struct {
	kind     string
	resource string
	newList  func() client.ObjectList
	newOne   func() client.Object
	// items are a list's objects.
	items func(client.ObjectList) []client.Object
	// trim drops status.tools from an object of a list.
	trim func(client.Object)
}

var (
	serverObjects = objectKind{
		kind: "MCPServer", resource: mcpServersResource,
		newList: func() client.ObjectList { return &mcpv1alpha1.MCPServerList{} },
		newOne:  func() client.Object { return &mcpv1alpha1.MCPServer{} },
		items: func(l client.ObjectList) []client.Object {
			list := l.(*mcpv1alpha1.MCPServerList)
			out := make([]client.Object, len(list.Items))
			for i := range list.Items {
				out[i] = &list.Items[i]
			}
			return out
		},
		trim: func(o client.Object) { o.(*mcpv1alpha1.MCPServer).Status.Tools = nil },
	}
	collectionObjects = objectKind{
		kind: "ToolCollection", resource: toolCollectionsResource,
		newList: func() client.ObjectList { return &mcpv1alpha1.ToolCollectionList{} },
		newOne:  func() client.Object { return &mcpv1alpha1.ToolCollection{} },
		items: func(l client.ObjectList) []client.Object {
			list := l.(*mcpv1alpha1.ToolCollectionList)
			out := make([]client.Object, len(list.Items))
			for i := range list.Items {
				out[i] = &list.Items[i]
			}
			return out
		},
		trim: func(o client.Object) { o.(*mcpv1alpha1.ToolCollection).Status.Tools = nil },
	}
)

// objectsBody is a list's answer.
type objectsBody struct {
	Items []client.Object `json:"items"`
}

// accessBody says what the caller may do with a collection.
type accessBody struct {
	Execute bool `json:"execute"`
}

// serveObjectList answers GET /v1/mcpservers and /v1/toolcollections
// (?namespace= narrows to one namespace): the objects the caller may get,
// sorted by namespace and name.
func (c *Catalog) serveObjectList(kind objectKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		namespace := r.URL.Query().Get("namespace")
		list := kind.newList()
		if err := c.reader.List(r.Context(), list, client.InNamespace(namespace)); err != nil {
			writeError(w, http.StatusServiceUnavailable, "the catalog cannot read its cache yet; retry")
			return
		}
		items, err := c.visibleObjects(r.Context(), kind, namespace, kind.items(list))
		if err != nil {
			writeAuthError(w, err)
			return
		}
		for _, o := range items {
			kind.trim(o)
			prepareObject(kind, o)
		}
		slices.SortFunc(items, func(a, b client.Object) int {
			return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
		})
		serveTagged(w, r, objectsBody{Items: items})
	}
}

// visibleObjects keeps the objects the caller may get. A caller who may
// list the kind (in every namespace, or in the one asked for) sees all,
// as kubectl would show them, for one permission check; anyone else
// sees the objects they may get one by one.
func (c *Catalog) visibleObjects(ctx context.Context, kind objectKind, namespace string, items []client.Object) ([]client.Object, error) {
	who := callerFrom(ctx)
	unavailable := &authError{code: http.StatusServiceUnavailable, message: "permissions could not be checked with the API server; retry"}
	all, err := c.authz.allowed(ctx, who, "list", kind.resource, namespace, "")
	if err != nil {
		return nil, unavailable
	}
	if all {
		return items, nil
	}
	listable := map[string]bool{}
	kept := items[:0]
	for _, o := range items {
		ns := o.GetNamespace()
		may, seen := listable[ns]
		if !seen {
			if may, err = c.authz.allowed(ctx, who, "list", kind.resource, ns, ""); err != nil {
				return nil, unavailable
			}
			listable[ns] = may
		}
		if !may {
			if may, err = c.authz.allowed(ctx, who, verbGet, kind.resource, ns, o.GetName()); err != nil {
				return nil, unavailable
			}
		}
		if may {
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// serveObject answers GET /v1/namespaces/{ns}/mcpservers/{name} and
// .../toolcollections/{name}: the object, once the caller may get it.
func (c *Catalog) serveObject(kind objectKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		o, ok := c.readableObject(w, r, kind)
		if !ok {
			return
		}
		prepareObject(kind, o)
		serveTagged(w, r, o)
	}
}

// readableObject is the object a route names, once the caller may get it;
// otherwise it answers why not. Permission comes first, so that whether
// an object exists is told only to who may get it.
func (c *Catalog) readableObject(w http.ResponseWriter, r *http.Request, kind objectKind) (client.Object, bool) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if err := c.authz.require(r.Context(), verbGet, kind.resource, ns, name); err != nil {
		writeAuthError(w, err)
		return nil, false
	}
	o := kind.newOne()
	switch err := c.reader.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: name}, o); {
	case apierrors.IsNotFound(err):
		writeError(w, http.StatusNotFound, strings.ToLower(kind.kind)+" "+ns+"/"+name+" not found")
		return nil, false
	case err != nil:
		writeError(w, http.StatusServiceUnavailable, "the catalog cannot read its cache yet; retry")
		return nil, false
	}
	return o, true
}

// serveAccess answers GET .../toolcollections/{name}/access: whether the
// caller may call the collection's tools, so that a page offers only
// what will work. It decides nothing: every call is authorized again.
func (c *Catalog) serveAccess(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	if err := c.authz.require(r.Context(), verbGet, toolCollectionsResource, ns, name); err != nil {
		writeAuthError(w, err)
		return
	}
	execute, err := c.authz.allowed(r.Context(), callerFrom(r.Context()), verbExecute, toolCollectionsResource, ns, name)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "permissions could not be checked with the API server; retry")
		return
	}
	serveTagged(w, r, accessBody{Execute: execute})
}

// prepareObject sets the kind (the cache's objects have none) and drops
// managedFields: bookkeeping of the API server, no use to a viewer.
func prepareObject(kind objectKind, o client.Object) {
	o.GetObjectKind().SetGroupVersionKind(mcpv1alpha1.GroupVersion.WithKind(kind.kind))
	o.SetManagedFields(nil)
}

// serveTagged answers body as JSON with an ETag of its bytes, and 304 to
// a request that already has them: a page polling for changes costs a
// hash when nothing changed, and no transfer.
func serveTagged(w http.ResponseWriter, r *http.Request, body any) {
	data, err := json.Marshal(body)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal error")
		return
	}
	sum := sha256.Sum256(data)
	tag := `"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", tag)
	w.Header().Set("Cache-Control", "no-cache")
	if etagMatches(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(data, '\n'))
}
