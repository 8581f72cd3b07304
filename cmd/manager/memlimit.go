package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/go-logr/logr"
)

// memoryLimitEnv names the variable the Deployment fills, through the
// downward API's resourceFieldRef, with the manager container's
// limits.memory in bytes. A container without a memory limit gets the
// node's allocatable memory there instead, and the limit follows that.
const memoryLimitEnv = "MCP_MEMORY_LIMIT"

// memoryLimit says which soft memory limit (runtime/debug.SetMemoryLimit)
// the manager should set, and which variable it comes from. With GOMEMLIMIT
// set (even to "off"), the Go runtime applied it at start, so the limit is
// 0 (set nothing). Otherwise MCP_MEMORY_LIMIT,
// the container's memory limit in bytes, gives a limit of 90% of it: the
// runtime's limit counts only the memory the runtime manages, not the
// binary's mapped pages or the kernel memory the container is charged for
// (socket buffers, page cache), and it is soft, so the heap may pass it.
// With neither variable set the limit is 0. A value of MCP_MEMORY_LIMIT
// that is not a positive integer is an error.
func memoryLimit(getenv func(string) string) (limit int64, err error) {
	value := getenv(memoryLimitEnv)
	if getenv("GOMEMLIMIT") != "" || value == "" {
		return 0, nil
	}
	container, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a number of bytes", memoryLimitEnv, value)
	}
	if container <= 0 {
		return 0, fmt.Errorf("%s=%q is not a positive number of bytes", memoryLimitEnv, value)
	}
	// A tenth is left over: container*9/10 without overflowing.
	return container - container/10, nil
}

// applyMemoryLimit sets the Go runtime's soft memory limit as memoryLimit
// says, and logs the limit it set; an invalid MCP_MEMORY_LIMIT is logged
// as an error and leaves the limit as it was. Near the limit the garbage
// collector runs more often and freed memory goes back to the operating
// system promptly, so that memory the heap held at a burst's peak does not
// stay resident, pushing the container towards its OOM kill.
func applyMemoryLimit(log logr.Logger) {
	limit, err := memoryLimit(os.Getenv)
	if err != nil {
		log.Error(err, "Setting the heap limit from the container's memory limit")
		return
	}
	if limit == 0 {
		return
	}
	debug.SetMemoryLimit(limit)
	log.Info("Heap limit set from the container's memory limit", "limit", limit, "containerLimit", os.Getenv(memoryLimitEnv))
}
