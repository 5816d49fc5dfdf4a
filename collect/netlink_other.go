//go:build !linux

package collect

import (
	"fmt"
	"io"
)

// errNoNetlink is returned off Linux.
var errNoNetlink = fmt.Errorf("netlink is only available on Linux")

// systemNetlink is unavailable off Linux.
type systemNetlink struct{}

func (systemNetlink) IPVS() ([]VirtualServer, error)         { return nil, errNoNetlink }
func (systemNetlink) NFTables(w io.Writer) ([]string, error) { return nil, errNoNetlink }
func (systemNetlink) NFTTables() ([]string, error)           { return nil, errNoNetlink }
