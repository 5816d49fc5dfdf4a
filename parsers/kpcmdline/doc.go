// Package kpcmdline parses a kube-proxy command line, as /proc/PID/cmdline
// holds it (arguments separated by NUL bytes) or written out on one line as
// a shell would read it (with quotes and backslash escapes, and
// backslash-newline continuations).
//
// The result keeps argv, the binary and every flag in order with its
// position, spelled the way pflag (which kube-proxy uses) accepts them:
// --flag=value, --flag value, -v=2, -v 2, -v2, and boolean flags given alone
// (--masquerade-all) or with a value (--masquerade-all=false). Whether a
// flag takes the next argument as its value follows pflag: boolean flags
// never do. Which flags are boolean comes from the table [BoolFlags];
// meaning (which flag sets which configuration field, in which kube-proxy
// version) belongs to package kpconfig.
package kpcmdline
