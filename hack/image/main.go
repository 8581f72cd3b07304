// Command image builds the operator's, the demo server's and a pause image
// as OCI archives, with no container engine and no base image pulled
// (make image): static Go binaries on a scratch base that gives them what
// distroless static nonroot gives a Go program (users, a CA bundle, /tmp),
// every byte fixed by the commit, so that two builds of one commit give the
// same digests. docs/development.md, "Images", describes the result.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

func main() {
	o := options{root: "."}
	flag.StringVar(&o.out, "out", "bin/images", "folder the archives and digests.txt are written to")
	flag.StringVar(&o.version, "version", "dev", "the version: stamped into the manager (main.version) and the tag of the operator's and demo server's images")
	flag.StringVar(&o.revision, "revision", "", "the git commit, for the org.opencontainers.image.revision label")
	flag.Int64Var(&o.epoch, "epoch", 0, "SOURCE_DATE_EPOCH: the time, in seconds since 1970, that every file and config carries")
	flag.StringVar(&o.goarch, "goarch", runtime.GOARCH, "the architecture the images are for")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}
