package ipvs

import (
	"fmt"
	"net"
	"testing"
)

// bigNode builds the table of a 10,000-service node: 7,000 ClusterIP
// services and 3,000 NodePorts on one node IP, each with 6 real servers.
func bigNode() *Dump {
	d := &Dump{Form: FormList, Version: "1.2.1", Size: 4096, Columns: ColumnsPlain}
	nodeIP := net.IP{192, 168, 49, 2}
	for i := range 10000 {
		var s *Service
		if i < 7000 {
			s = newServiceFromSpec(ProtoTCP, FamilyIPv4, net.IP{10, 96, byte(i >> 8), byte(i)}, 80)
		} else {
			s = newServiceFromSpec(ProtoTCP, FamilyIPv4, nodeIP, uint16(30000+i-7000))
		}
		s.SchedName = "rr"
		for j := range 6 {
			dst := &Destination{}
			dst.AddressFamily, dst.Address, dst.Port, dst.Weight = FamilyIPv4, net.IP{10, 244, byte(j), byte(i % 250)}, 8080, 1
			s.Destinations = append(s.Destinations, dst)
		}
		d.Services = append(d.Services, s)
	}
	Sort(d)
	return d
}

func benchParse(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d, err := Parse("bench", data)
		if err != nil {
			b.Fatal(err)
		}
		if len(d.Services) != 10000 {
			b.Fatal(fmt.Sprint(len(d.Services)))
		}
	}
}

func BenchmarkParseList10k(b *testing.B) { benchParse(b, FormatList(bigNode(), ListOptions{})) }
func BenchmarkParseSave10k(b *testing.B) { benchParse(b, FormatSave(bigNode())) }

func BenchmarkFormatList10k(b *testing.B) {
	d := bigNode()
	b.ReportAllocs()
	for b.Loop() {
		FormatList(d, ListOptions{})
	}
}
