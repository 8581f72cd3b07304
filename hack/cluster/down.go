package main

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// down stops everything up started and removes what it made, in an order
// that works whatever state a crash left: the node's components first (so
// that nothing restarts a pod), then the pods' processes, containerd and
// its shims, the control plane; then mounts, the network and kernel
// settings, and last the folder. It goes on past a failed step and
// reports every failure; the folder is removed only when nothing is
// mounted under it any more.
func (c *cluster) down() error {
	var errs []error
	step := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	for _, name := range []string{"kubelet", "kube-proxy", "kube-scheduler", "kube-controller-manager"} {
		step("stopping "+name, c.stop(name, 10*time.Second))
	}
	step("killing the pods' processes", killPods())
	step("stopping containerd", c.stop("containerd", 10*time.Second))
	step("killing containerd's shims", c.killShims())
	step("stopping kube-apiserver", c.stop("kube-apiserver", 15*time.Second))
	step("stopping etcd", c.stop("etcd", 10*time.Second))
	unmounted := c.unmountAll()
	step("unmounting", unmounted)
	step("removing kube-proxy's and kubelet's iptables rules", removeKubeChains())
	step("removing the bridge", deleteBridge())
	step("removing CNI results", removeCNIResults(c.sandboxIDs()))
	step("restoring kernel settings", c.restoreSysctls())
	if unmounted == nil {
		step("removing "+c.dir, os.RemoveAll(c.dir))
	} else {
		errs = append(errs, fmt.Errorf("left %s in place: something is still mounted under it", c.dir))
	}
	return errors.Join(errs...)
}
