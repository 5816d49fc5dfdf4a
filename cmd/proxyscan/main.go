// Command proxyscan makes kube-proxy's data plane inspectable offline.
package main

import (
	"os"

	"github.com/proxyscan/proxyscan/cmd"
)

func main() { os.Exit(cmd.Main(os.Args[1:])) }
