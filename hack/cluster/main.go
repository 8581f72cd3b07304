// Command cluster runs a one-node Kubernetes cluster with real pods on this
// machine, for make e2e: no Docker engine, no registry, nothing downloaded
// but Go modules and Debian packages.
//
//	cluster build        build the cluster's binaries once (cached by version); print their folder
//	cluster up           start it; print the admin kubeconfig's path
//	cluster down         stop every process it started and remove its state (safe to repeat, and after a crash)
//	cluster import FILE  import image archives into the running cluster's containerd
//	cluster status       print the components that run, one a line
//	cluster image ...    pack a static binary as an image archive ctr imports (see image.go)
//
// Everything it starts (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd, kubelet, kube-proxy) runs from binaries built
// from source at one Kubernetes version, with its state, logs and pidfile
// under one folder (--dir), and is stopped by PID. Pods get their own
// network namespaces on a bridge, Services work through kube-proxy and
// names through CoreDNS, as in any cluster. docs/development.md, "A cluster
// with real pods", says what it needs and why each setting is there.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: cluster build | up | down | status | import FILE... | image [flags]")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	command, rest := args[0], args[1:]
	if command == "image" {
		return imageCommand(rest)
	}
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	cache := fs.String("cache", defaultCache(), "folder the built binaries are cached in, by version")
	dir := fs.String("dir", "", "folder of the running cluster's state, logs and pidfiles (default: <cache>/run)")
	images := fs.String("images", "bin/images", "up: every *.tar in this folder is imported into containerd")
	if err := fs.Parse(rest); err != nil {
		return err
	}
	if fs.NArg() != 0 && command != "import" {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *dir == "" {
		*dir = filepath.Join(*cache, "run")
	}
	c, err := newCluster(*cache, *dir)
	if err != nil {
		return err
	}
	if (command == "up" || command == "down") && os.Geteuid() != 0 {
		return fmt.Errorf("%s needs root: the cluster runs containerd and the kubelet, a bridge and iptables rules", command)
	}
	switch command {
	case "build":
		bins, err := build(ctx, *cache)
		if err != nil {
			return err
		}
		fmt.Println(bins.dir)
		return nil
	case "up":
		// One cluster at a time: a running one is refused, not cleaned
		// up (which up does with the remains of a crashed one).
		if running := c.runningPIDs(); len(running) > 0 {
			return fmt.Errorf("a cluster runs from %s (%s): run down first", c.dir, strings.Join(running, ", "))
		}
		bins, err := build(ctx, *cache)
		if err != nil {
			return err
		}
		var refused *refusal
		if err := c.up(ctx, bins, *images); errors.As(err, &refused) {
			return err
		} else if err != nil {
			// Nothing half-started is left behind: up either returns
			// a working cluster or none.
			logf("up failed, stopping what it started: %v", err)
			if downErr := c.down(); downErr != nil {
				logf("down: %v", downErr)
			}
			return err
		}
		fmt.Println(c.kubeconfig())
		return nil
	case "down":
		return c.down()
	case "status":
		for _, r := range c.runningPIDs() {
			fmt.Println(r)
		}
		return nil
	case "import":
		if c.running("containerd") == 0 {
			return errors.New("the cluster is not up")
		}
		return c.importImages(ctx, fs.Args())
	default:
		return fmt.Errorf("unknown command %q", command)
	}
}

// defaultCache is where hack/envtest-assets.sh keeps its binaries too.
func defaultCache() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = "/root"
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "mcp-operator", "cluster")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "cluster: "+format+"\n", args...)
}
