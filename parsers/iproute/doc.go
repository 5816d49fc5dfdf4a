// Package iproute parses the route listing of iproute2's `ip route` and
// `ip -6 route` (also `ip route show table all`): one [Route] per line,
// with its type, destination (or default), gateway, device, protocol,
// scope, preferred source, metric, table and every other attribute in the
// order printed, keeping the raw line and its position. [Format] prints
// routes back as iproute2 does.
package iproute
