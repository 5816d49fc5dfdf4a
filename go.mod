module github.com/proxyscan/proxyscan

go 1.26

require github.com/rogpeppe/go-internal v1.16.0

require golang.org/x/tools v0.26.0 // indirect
