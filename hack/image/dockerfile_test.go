package main

import (
	"archive/tar"
	"bytes"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"testing"
)

// distroless is the Dockerfile's base, gcr.io/distroless/static:nonroot
// (Debian 12) at the digest the Dockerfile pins, as distroless builds it
// (static/static.bzl and common/BUILD.bazel in
// GoogleContainerTools/distroless): its config, the files of it a static
// Go program uses, which the scratch image holds the same way, and what
// else it holds, which the scratch image leaves out. Moving the
// Dockerfile's base fails TestDockerfileDescribesTheImage until this is
// checked again.
var distroless = struct {
	ref     string
	user    string
	workdir string
	env     []string
	files   []baseEntry
	omitted []omission
}{
	ref:     "gcr.io/distroless/static:nonroot@sha256:f7f8f729987ad0fdf6b05eeeae94b26e6a0f613bdf46feea7fc40f7bd72953e6",
	user:    "65532",
	workdir: "/home/nonroot",
	env: []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt",
	},
	files: []baseEntry{
		{"/etc", fs.ModeDir | 0o755, 0},
		{"/etc/passwd", 0o644, 0},        // root, nobody, nonroot
		{"/etc/group", 0o644, 0},         // root, nobody, tty, staff, nonroot
		{"/etc/nsswitch.conf", 0o644, 0}, // hosts: files dns
		{"/etc/ssl", fs.ModeDir | 0o755, 0},
		{"/etc/ssl/certs", fs.ModeDir | 0o755, 0},
		{"/etc/ssl/certs/ca-certificates.crt", 0o644, 0}, // Debian's ca-certificates: Mozilla's roots
		{"/home", fs.ModeDir | 0o755, 0},
		{"/home/nonroot", fs.ModeDir | 0o700, 65532},
		{"/root", fs.ModeDir | 0o700, 0},
		{"/tmp", fs.ModeDir | fs.ModeSticky | 0o777, 0},
	},
	omitted: []omission{
		{[]string{"/etc/os-release", "/usr/lib/os-release", "/etc/debian_version", "/var/lib/dpkg", "/usr/share/doc"},
			"base-files, os-release and the package records",
			"they name Debian and its packages, for scanners; the scratch image has no Debian package to report (scanners read the Go binaries' module lists from their build info)"},
		{[]string{"/usr/share/zoneinfo"}, "tzdata",
			"the manager and the bridge load no time zone; the demo server embeds Go's time/tzdata"},
		{[]string{"/etc/services", "/etc/protocols", "/etc/rpc", "/etc/ethertypes"}, "netbase",
			"Go reads /etc/services only to look up a port by name (with a built-in table for the common ones) and /etc/protocols only for raw IP sockets; the binaries use numeric ports and TCP"},
		{[]string{"/etc/mime.types"}, "media-types",
			"Go reads it only in mime.TypeByExtension, which the binaries do not call"},
		{[]string{"/bin", "/sbin", "/lib", "/usr/share", "/var"}, "the rest of base-files' directory tree",
			"nothing runs a program by a relative name (the entrypoint is absolute; there is no shell), and the runtime mounts /proc, /dev and /sys"},
	},
}

// baseEntry is a file or directory of the base, owned by uid (the same gid).
type baseEntry struct {
	path string
	mode fs.FileMode
	uid  int
}

// omission is what the base holds and the scratch image does not.
type omission struct {
	paths []string
	from  string
	why   string
}

// The operator's image (assembled from stand-ins for the binaries: its
// layout and config do not depend on what they hold) is the image the
// Dockerfile describes.
func TestDockerfileDescribesTheImage(t *testing.T) {
	o := testOptions(t)
	spec := operatorSpec(o)
	img, err := assemble(spec, stubBinaries(spec), o)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := writeArchive(&buf, img, spec, o); err != nil {
		t.Fatal(err)
	}
	compareWithDockerfile(t, readOCIArchive(t, buf.Bytes()), o)
}

// compareWithDockerfile checks a, the operator's image built for o,
// against what docker build --build-arg VERSION=... --build-arg
// REVISION=... makes of the Dockerfile: config (entrypoint, user,
// workdir, env, labels), every file with its type, mode and owner, and the
// binaries' go build (package, -ldflags, -trimpath, CGO_ENABLED=0).
func compareWithDockerfile(t *testing.T, a *readArchive, o options) {
	t.Helper()
	src, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	stages, err := parseDockerfile(string(src))
	if err != nil {
		t.Fatal(err)
	}
	want, err := finalImage(stages, distroless.user, distroless.workdir, distroless.env,
		map[string]string{"VERSION": o.version, "REVISION": o.revision})
	if err != nil {
		t.Fatal(err)
	}
	if want.base != distroless.ref {
		t.Fatalf("the Dockerfile's base is %s; this comparison knows %s: check what the new base holds (distroless above, base.go) and update both", want.base, distroless.ref)
	}

	cfg := a.config.Config
	if !slices.Equal(cfg.Entrypoint, want.entrypoint) {
		t.Errorf("entrypoint %q, the Dockerfile's %q", cfg.Entrypoint, want.entrypoint)
	}
	if cfg.User != want.user {
		t.Errorf("user %q, the Dockerfile's %q", cfg.User, want.user)
	}
	if cfg.WorkingDir != want.workdir {
		t.Errorf("workdir %q, the Dockerfile's %q", cfg.WorkingDir, want.workdir)
	}
	if !slices.Equal(cfg.Env, want.env) {
		t.Errorf("env %q, the Dockerfile's %q", cfg.Env, want.env)
	}
	if !maps.Equal(cfg.Labels, want.labels) {
		t.Errorf("labels %v, the Dockerfile's %v", cfg.Labels, want.labels)
	}
	if a.config.OS != "linux" {
		t.Errorf("os %q", a.config.OS)
	}

	// Files: the base's, the copied binaries (COPY keeps go build's 0755,
	// owned by root) and the directories COPY makes for them.
	type entry struct {
		mode     fs.FileMode
		uid, gid int
	}
	wantFiles := map[string]entry{}
	for _, f := range distroless.files {
		wantFiles[f.path] = entry{f.mode, f.uid, f.uid}
	}
	for dest := range want.copies {
		wantFiles[dest] = entry{0o755, 0, 0}
		for p := path.Dir(dest); p != "/"; p = path.Dir(p) {
			if _, ok := wantFiles[p]; !ok {
				wantFiles[p] = entry{fs.ModeDir | 0o755, 0, 0}
			}
		}
	}
	gotFiles := map[string]entry{}
	for p, f := range a.files {
		mode := fs.FileMode(f.hdr.Mode).Perm()
		if f.hdr.Mode&0o1000 != 0 {
			mode |= fs.ModeSticky
		}
		switch f.hdr.Typeflag {
		case tar.TypeDir:
			mode |= fs.ModeDir
		case tar.TypeReg:
		default:
			t.Errorf("%s: type %c; the image holds directories and regular files only", p, f.hdr.Typeflag)
		}
		gotFiles[p] = entry{mode, f.hdr.Uid, f.hdr.Gid}
	}
	for _, p := range slices.Sorted(maps.Keys(wantFiles)) {
		got, ok := gotFiles[p]
		switch {
		case !ok:
			t.Errorf("%s: the Dockerfile's image has it (%v), this one does not", p, wantFiles[p].mode)
		case got != wantFiles[p]:
			t.Errorf("%s: %v %d:%d, the Dockerfile's image %v %d:%d", p, got.mode, got.uid, got.gid, wantFiles[p].mode, wantFiles[p].uid, wantFiles[p].gid)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(gotFiles)) {
		if _, ok := wantFiles[p]; !ok {
			t.Errorf("%s: this image has it, the Dockerfile's does not", p)
		}
	}
	for _, om := range distroless.omitted {
		for _, p := range om.paths {
			if _, ok := gotFiles[p]; ok {
				t.Errorf("%s is listed as left out (%s) but the image has it: update the list and docs/development.md", p, om.from)
			}
		}
	}

	// The user resolves as in distroless: nonroot, whose home exists and
	// is its own.
	uid, _, _ := strings.Cut(want.user, ":")
	var home string
	for _, line := range strings.Split(string(a.files["/etc/passwd"].data), "\n") {
		if f := strings.Split(line, ":"); len(f) == 7 && f[2] == uid {
			if f[0] != "nonroot" || f[3] != uid {
				t.Errorf("/etc/passwd: %s", line)
			}
			home = f[5]
		}
	}
	if h, ok := a.files[home]; !ok || h.hdr.Uid != 65532 {
		t.Errorf("user %s: home %q missing or not its own", uid, home)
	}
	if !strings.Contains(string(a.files["/etc/group"].data), "\nnonroot:x:65532:\n") {
		t.Errorf("/etc/group has no nonroot group 65532:\n%s", a.files["/etc/group"].data)
	}

	// The binaries: built as the Dockerfile builds them.
	binaries := map[string]binary{}
	for _, b := range operatorSpec(o).binaries {
		binaries[b.path] = b
	}
	for dest, b := range want.copies {
		mine, ok := binaries[dest]
		if !ok {
			t.Errorf("%s: the Dockerfile copies it, hack/image builds no binary there", dest)
			continue
		}
		if b.pkg != mine.pkg || b.ldflags != mine.ldflags {
			t.Errorf("%s: the Dockerfile builds ./%s with -ldflags=%q, hack/image ./%s with -ldflags=%q", dest, b.pkg, b.ldflags, mine.pkg, mine.ldflags)
		}
		if !b.trimpath || b.env["CGO_ENABLED"] != "0" || b.env["GOOS"] != "linux" {
			t.Errorf("%s: the Dockerfile's build is not static and trimmed for linux (-trimpath %v, env %v)", dest, b.trimpath, b.env)
		}
	}
	if len(want.copies) != len(binaries) {
		t.Errorf("the Dockerfile copies %d binaries, hack/image builds %d", len(want.copies), len(binaries))
	}
}

// The parser reads what the comparison relies on.
func TestParseDockerfile(t *testing.T) {
	stages, err := parseDockerfile(`# a comment
FROM golang AS builder
ARG V=dev
WORKDIR /w
RUN CGO_ENABLED=0 GOOS=linux \
    # a comment inside a continuation
    go build -trimpath -ldflags="-s -w -X main.version=${V}" -o app ./cmd/app && \
    go build -trimpath -ldflags='-s' -o /abs/other ./cmd/other
FROM base@sha256:00
ARG V=dev
LABEL a="x y" b=${V}
WORKDIR /
COPY --from=builder /w/app .
COPY --from=builder /abs/other /usr/bin/
USER 1:1
ENTRYPOINT ["/app", "--flag"]
`)
	if err != nil {
		t.Fatal(err)
	}
	img, err := finalImage(stages, "0", "/home", []string{"PATH=/bin"}, map[string]string{"V": "v9"})
	if err != nil {
		t.Fatal(err)
	}
	if img.base != "base@sha256:00" || img.user != "1:1" || img.workdir != "/" ||
		!slices.Equal(img.entrypoint, []string{"/app", "--flag"}) || !slices.Equal(img.env, []string{"PATH=/bin"}) ||
		!maps.Equal(img.labels, map[string]string{"a": "x y", "b": "v9"}) {
		t.Errorf("final image %+v", img)
	}
	app, other := img.copies["/app"], img.copies["/usr/bin/other"]
	if app.pkg != "cmd/app" || app.ldflags != "-s -w -X main.version=v9" || !app.trimpath || app.env["CGO_ENABLED"] != "0" {
		t.Errorf("/app from %+v", app)
	}
	if other.pkg != "cmd/other" || other.ldflags != "-s" {
		t.Errorf("/usr/bin/other from %+v", other)
	}
	if len(img.copies) != 2 {
		t.Errorf("copies %v", img.copies)
	}

	// What the comparison cannot judge fails it rather than passing by.
	for _, bad := range []string{
		"ARG X=1\nFROM a\n",                                                     // a global ARG
		"FROM a\nENTRYPOINT /app\n",                                             // the shell form
		"FROM a\nCOPY --chmod=0700 x /x\n",                                      // a COPY flag
		"FROM a\nHEALTHCHECK CMD [\"/app\"]\n",                                  // an instruction
		"FROM a AS b\nRUN go build -race -o x .\nFROM c\nCOPY --from=b /x /x\n", // a go build flag
	} {
		stages, err := parseDockerfile(bad)
		if err == nil {
			_, err = finalImage(stages, "", "/", nil, nil)
		}
		if err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
