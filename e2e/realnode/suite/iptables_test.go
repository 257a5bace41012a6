package suite

import (
	"net"
	"testing"
)

// TestDockersRule: the rules Docker adds for kind's network and node container are left out of the
// host iptables comparison; a rule of anyone else's (a KUBE- or CNI- chain leaking into the host) is kept.
func TestDockersRule(t *testing.T) {
	_, kind, err := net.ParseCIDR("172.18.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	subnets := []*net.IPNet{kind}
	for line, want := range map[string]bool{
		"-A DOCKER -d 127.0.0.1/32 ! -i br-0123456789ab -p tcp -m tcp --dport 41011 -j DNAT --to-destination 172.18.0.2:6443": true,
		"-A POSTROUTING -s 172.18.0.2/32 -d 172.18.0.2/32 -p tcp -m tcp --dport 6443 -j MASQUERADE":                           true,
		"-A FORWARD -o br-0123456789ab -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT":                                  true,
		":DOCKER-ISOLATION-STAGE-2 - ":                                         true,
		"-A POSTROUTING -s 10.244.0.0/16 -j CNI-1234":                          false,
		"-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -j KUBE-SVC-NPX46M4PTMTKRN6Y": false,
		"-A OUTPUT -d 172.19.0.5/32 -j ACCEPT":                                 false,
	} {
		if got := dockersRule(line, subnets); got != want {
			t.Errorf("dockersRule(%q) = %v, want %v", line, got, want)
		}
	}
}
