package main

import "io/fs"

// The base layer of the operator's and demo server's images: what
// distroless static nonroot (the Dockerfile's base) gives a static Go
// program, written here instead of pulled. dockerfile_test.go lists what
// that base holds beyond this and why none of it matters to these programs
// (docs/development.md, "Images", repeats it).

// baseEnv is distroless static's environment.
var baseEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE=" + caBundlePath,
}

// caBundlePath is where Go's crypto/x509 (and OpenSSL) look for roots.
const caBundlePath = "/etc/ssl/certs/ca-certificates.crt"

// passwd and group are distroless's: root, nobody and nonroot (65532),
// with no login shell (there is no shell).
const passwd = `root:x:0:0:root:/root:/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin
nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
`

const group = `root:x:0:
nobody:x:65534:
tty:x:5:
staff:x:50:
nonroot:x:65532:
`

// nsswitch is distroless's /etc/nsswitch.conf without its comments. Go's
// resolver reads its hosts line: /etc/hosts, then DNS (the order Go also
// assumes without the file; the file keeps it so for anything that reads
// it, as in distroless).
const nsswitch = `passwd:         compat
group:          compat
shadow:         compat
gshadow:        files

hosts:          files dns
networks:       files

protocols:      db files
services:       db files
ethers:         db files
rpc:            db files

netgroup:       nis
`

// baseFiles are the base layer's entries.
func baseFiles() ([]file, error) {
	certs, err := caBundle()
	if err != nil {
		return nil, err
	}
	home := dir("/home/nonroot", 0o700)
	home.uid, home.gid = 65532, 65532
	return []file{
		dir("/etc", 0o755),
		regular("/etc/passwd", 0o644, []byte(passwd)),
		regular("/etc/group", 0o644, []byte(group)),
		regular("/etc/nsswitch.conf", 0o644, []byte(nsswitch)),
		dir("/etc/ssl", 0o755),
		dir("/etc/ssl/certs", 0o755),
		regular(caBundlePath, 0o644, certs),
		dir("/home", 0o755),
		home,
		dir("/root", 0o700),
		// Go's os.TempDir and anything that writes a temporary file.
		{path: "/tmp", mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}, nil
}
