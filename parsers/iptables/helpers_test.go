package iptables

import (
	"os"

	"github.com/rogpeppe/go-internal/txtar"
)

func writeArchive(file string, a *txtar.Archive) error {
	return os.WriteFile(file, txtar.Format(a), 0o644)
}
