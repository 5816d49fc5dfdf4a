package model

// SetParallelServices sets the number of Services from which
// BuildServicePorts builds on every core, returning what puts it back.
func SetParallelServices(n int) (restore func()) {
	old := parallelServices
	parallelServices = n
	return func() { parallelServices = old }
}
