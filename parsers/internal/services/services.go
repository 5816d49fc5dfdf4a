// Package services maps the service names that tools print in place of
// port numbers when they list without -n (ipvsadm -L, iptables -L) back
// to the ports. The names are those of the services database of common
// Linux distributions (netbase's /etc/services, which follows IANA's
// registry) for the ports Kubernetes clusters commonly serve; the
// machine's own /etc/services is not read, since the machine that reads
// a listing is not the one that printed it.
package services

// ports are the well-known services by name, as getservbyport names them
// (aliases included).
var ports = map[string]uint16{
	"ftp-data": 20, "ftp": 21, "ssh": 22, "telnet": 23, "smtp": 25, "domain": 53,
	"tftp": 69, "http": 80, "www": 80, "kerberos": 88, "pop3": 110, "sunrpc": 111,
	"ntp": 123, "netbios-ns": 137, "netbios-dgm": 138, "netbios-ssn": 139, "imap2": 143, "imap": 143,
	"snmp": 161, "snmp-trap": 162, "bgp": 179, "ldap": 389, "https": 443, "microsoft-ds": 445,
	"submissions": 465, "submission": 587, "ldaps": 636, "rsync": 873, "ftps": 990, "imaps": 993,
	"pop3s": 995, "socks": 1080, "openvpn": 1194, "ms-sql-s": 1433, "ms-sql-m": 1434,
	"radius": 1812, "radius-acct": 1813, "nfs": 2049, "zookeeper": 2181, "etcd-client": 2379,
	"etcd-server": 2380, "mysql": 3306, "svn": 3690, "sip": 5060, "sip-tls": 5061,
	"postgresql": 5432, "amqps": 5671, "amqp": 5672, "redis": 6379, "sun-sr-https": 6443,
	"http-alt": 8080, "webcache": 8080, "pcsync-https": 8443, "websm": 9090,
	"zabbix-agent": 10050, "zabbix-trapper": 10051, "memcache": 11211, "mongodb": 27017,
}

// Port returns the port of a well-known service name, and whether the
// name is one.
func Port(name string) (uint16, bool) {
	p, ok := ports[name]
	return p, ok
}
