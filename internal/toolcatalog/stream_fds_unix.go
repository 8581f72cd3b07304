//go:build unix

package toolcatalog

import "syscall"

// fileDescriptors is how many files the process may open: its soft
// RLIMIT_NOFILE, which Go raises to the hard limit at start; 0 if unknown.
func fileDescriptors() uint64 {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return 0
	}
	return limit.Cur
}
