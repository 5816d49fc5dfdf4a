module github.com/proxyscan/proxyscan

go 1.26

require (
	github.com/google/go-cmp v0.7.0
	github.com/google/nftables v0.3.0
	github.com/rogpeppe/go-internal v1.16.0
)

require (
	github.com/mdlayher/netlink v1.7.3-0.20250113171957-fbb4dce95f42 // indirect
	github.com/mdlayher/socket v0.5.0 // indirect
	golang.org/x/net v0.33.0 // indirect
	golang.org/x/sync v0.8.0 // indirect
	golang.org/x/sys v0.28.0 // indirect
	golang.org/x/tools v0.26.0 // indirect
)
