package main

// What each image holds and how it runs. The operator's image is the one
// the Dockerfile describes too (dockerfile_test.go compares them).

const (
	operatorRepository = "ghcr.io/toolmesh/mcp-operator"
	demoRepository     = "ghcr.io/toolmesh/demo-mcp-server"
	// The pause image is containerd 1.6's default sandbox_image
	// (`containerd config default | grep sandbox_image`): a cluster with no
	// registry runs pods only when it is imported under this name.
	pauseRepository = "registry.k8s.io/pause"
	pauseTag        = "3.6"

	sourceURL = "https://github.com/toolmesh/mcp-operator"
	license   = "Apache-2.0" // LICENSE
	// nonroot is the user and group the operator's and demo server's
	// images run as: distroless's nonroot, 65532.
	nonroot = "65532:65532"
	// pauseUser is the user the upstream pause image runs as.
	pauseUser = "65535:65535"
)

// binary is a Go program an image holds.
type binary struct {
	pkg     string // the main package, relative to the module's root
	path    string // where the image holds it
	ldflags string // as the Makefile's build target and the Dockerfile give them
}

// imageSpec is one image: its archive's name, its reference, what it holds
// and its config.
type imageSpec struct {
	name       string // the archive is <out>/<name>.tar
	repository string
	tag        string
	binaries   []binary
	base       bool // the base layer (base.go) below the binaries
	entrypoint []string
	user       string
	workdir    string
	env        []string
	labels     map[string]string
}

func (s imageSpec) ref() string { return s.repository + ":" + s.tag }

// imageSpecs are the images one run builds, in order.
func imageSpecs(o options) []imageSpec {
	return []imageSpec{operatorSpec(o), demoSpec(o), pauseSpec()}
}

// operatorSpec is the manager with mcp-bridge beside it, where the init
// container of stdio workloads runs it (controller.BridgeInImage).
func operatorSpec(o options) imageSpec {
	return imageSpec{
		name:       "mcp-operator",
		repository: operatorRepository,
		tag:        o.version,
		binaries: []binary{
			{pkg: "cmd/manager", path: "/manager", ldflags: "-s -w -X main.version=" + o.version},
			{pkg: "cmd/mcp-bridge", path: "/usr/local/bin/mcp-bridge", ldflags: "-s -w"},
		},
		base:       true,
		entrypoint: []string{"/manager"},
		user:       nonroot,
		workdir:    "/",
		env:        baseEnv,
		labels:     labels(o, "mcp-operator"),
	}
}

// demoSpec is the demo MCP server (HTTP, or stdio with --stdio) for the
// end-to-end tests' workloads and agents.
func demoSpec(o options) imageSpec {
	return imageSpec{
		name:       "demo-mcp-server",
		repository: demoRepository,
		tag:        o.version,
		binaries: []binary{
			{pkg: "cmd/demo-mcp-server", path: "/demo-mcp-server", ldflags: "-s -w"},
		},
		base:       true,
		entrypoint: []string{"/demo-mcp-server"},
		user:       nonroot,
		workdir:    "/",
		env:        baseEnv,
		labels:     labels(o, "demo-mcp-server"),
	}
}

// pauseSpec is a pod sandbox image: a process that sleeps until SIGTERM or
// SIGINT, as registry.k8s.io/pause does, so that a cluster can run pods
// without pulling. Nothing in it depends on the version.
func pauseSpec() imageSpec {
	return imageSpec{
		name:       "pause",
		repository: pauseRepository,
		tag:        pauseTag,
		binaries: []binary{
			{pkg: "hack/image/pause", path: "/pause", ldflags: "-s -w"},
		},
		entrypoint: []string{"/pause"},
		user:       pauseUser,
		labels: map[string]string{
			"org.opencontainers.image.title":    "pause",
			"org.opencontainers.image.source":   sourceURL,
			"org.opencontainers.image.licenses": license,
		},
	}
}

func labels(o options, title string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    title,
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.licenses": license,
	}
}
