module github.com/proxyscan/proxyscan

go 1.26

require (
	github.com/google/go-cmp v0.7.0
	github.com/moby/ipvs v1.1.0
	github.com/rogpeppe/go-internal v1.16.0
)

require (
	github.com/sirupsen/logrus v1.9.0 // indirect
	github.com/vishvananda/netlink v1.1.0 // indirect
	github.com/vishvananda/netns v0.0.2 // indirect
	golang.org/x/sys v0.26.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
