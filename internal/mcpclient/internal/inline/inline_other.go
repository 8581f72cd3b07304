//go:build !unix || aix

package inline

import "net"

// Supported says the system can peek at a kept connection: here it
// cannot, so sessions keep net/http's transport, which notices a server's
// close of an idle connection itself.
const Supported = false

func alive(net.Conn) bool { return false }
