package node

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's key material: one CA that signs the API server's
// serving certificate and every client certificate (X.509 client
// authentication, as kubeadm sets a cluster up), and the service-account
// signing key. Everything is made fresh per cluster.
type pki struct {
	dir    string
	CA     []byte // PEM
	CAFile string
	caKey  *ecdsa.PrivateKey
	caCert *x509.Certificate
	serial int64
	SAKey  string // service-account token signing key (private)
	SAPub  string
}

// credential is a certificate and key file pair.
type credential struct{ Cert, Key string }

func newPKI(dir string) (*pki, error) {
	p := &pki{dir: dir, CAFile: filepath.Join(dir, "ca.crt"), SAKey: filepath.Join(dir, "sa.key"),
		SAPub: filepath.Join(dir, "sa.pub"), serial: 1}
	var err error
	if p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: "nfrouter-node-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &p.caKey.PublicKey, p.caKey)
	if err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("pki: CA certificate: %w", err)
	}
	p.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: service-account key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("pki: service-account key: %w", err)
	}
	for path, b := range map[string][]byte{
		p.CAFile: p.CA,
		p.SAKey:  ecKeyPEM(saKey),
		p.SAPub:  pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: saPub}),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
	}
	return p, nil
}

// serving issues a server certificate for ips and names, written as
// <name>.crt and <name>.key.
func (p *pki) serving(name string, ips []net.IP, dnsNames []string) (credential, error) {
	return p.issue(name, pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, ips, dnsNames)
}

// client issues a client certificate: the API server takes the common name
// as the user and the organizations as its groups.
func (p *pki) client(name, user string, groups ...string) (credential, error) {
	return p.issue(name, pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (p *pki) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dnsNames []string) (credential, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return credential{}, fmt.Errorf("pki: %s key: %w", name, err)
	}
	p.serial++
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: subject,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: ips, DNSNames: dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return credential{}, fmt.Errorf("pki: %s certificate: %w", name, err)
	}
	c := credential{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key")}
	if err := os.WriteFile(c.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return credential{}, fmt.Errorf("pki: %w", err)
	}
	if err := os.WriteFile(c.Key, ecKeyPEM(key), 0o600); err != nil {
		return credential{}, fmt.Errorf("pki: %w", err)
	}
	return c, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // only for curves x509 does not know
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}
