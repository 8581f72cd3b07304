//go:build !linux

package toolcatalog

import (
	"context"
	"net"
)

// listen opens the catalog's listener; off Linux, without a user timeout.
func listen(ctx context.Context, address string) (net.Listener, error) {
	var config net.ListenConfig
	return config.Listen(ctx, "tcp", address)
}
