package native

import goruntime "runtime"

// Transports of the tool RPC.
const (
	// TransportUnix is a Unix domain socket in the run's private dir (the
	// default on Linux and macOS).
	TransportUnix = "unix"
	// TransportTCP is loopback TCP on an ephemeral port (the default on
	// Windows, selectable everywhere).
	TransportTCP = "tcp"
)

// DefaultTransport is the platform's transport.
func DefaultTransport() string {
	if goruntime.GOOS == "windows" {
		return TransportTCP
	}
	return TransportUnix
}
