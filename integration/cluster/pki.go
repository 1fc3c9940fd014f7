package cluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a test cluster's key material: one CA that signs the serving and
// client certificates it issues, and the service-account signing key, as
// files in one directory. Everything is made fresh per cluster: nothing is
// shared between runs.
type PKI struct {
	dir    string
	CA     []byte // PEM
	CAFile string
	SAKey  string // service-account token signing key (private)
	SAPub  string
	caKey  *ecdsa.PrivateKey
	caCert *x509.Certificate
	serial int64
}

// Credential is a certificate and key file pair.
type Credential struct{ Cert, Key string }

// NewPKI makes a CA and a service-account key and writes them to dir.
func NewPKI(dir string) (*PKI, error) {
	p := &PKI{dir: dir, CAFile: filepath.Join(dir, "ca.crt"), SAKey: filepath.Join(dir, "sa.key"),
		SAPub: filepath.Join(dir, "sa.pub"), serial: 1}
	var err error
	if p.caKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		return nil, fmt.Errorf("pki: CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: "nfrouter-test-ca"},
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
	for path, b := range map[string][]byte{
		p.CAFile: p.CA,
		p.SAKey:  ecKeyPEM(saKey),
		p.SAPub:  pubKeyPEM(&saKey.PublicKey),
	} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
	}
	return p, nil
}

// Serving issues a server certificate for ips and dnsNames, written as
// <name>.crt and <name>.key.
func (p *PKI) Serving(name string, ips []net.IP, dnsNames []string) (Credential, error) {
	return p.issue(name, pkix.Name{CommonName: name}, x509.ExtKeyUsageServerAuth, ips, dnsNames)
}

// Client issues a client certificate: the API server takes the common name
// as the user and the organizations as its groups.
func (p *PKI) Client(name, user string, groups ...string) (Credential, error) {
	return p.issue(name, pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth, nil, nil)
}

func (p *PKI) issue(name string, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dnsNames []string) (Credential, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Credential{}, fmt.Errorf("pki: %s key: %w", name, err)
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
		return Credential{}, fmt.Errorf("pki: %s certificate: %w", name, err)
	}
	c := Credential{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key")}
	if err := os.WriteFile(c.Cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return Credential{}, fmt.Errorf("pki: %w", err)
	}
	if err := os.WriteFile(c.Key, ecKeyPEM(key), 0o600); err != nil {
		return Credential{}, fmt.Errorf("pki: %w", err)
	}
	return c, nil
}

// pki is the bed's key material: a PKI, kube-apiserver's serving
// certificate for 127.0.0.1, and static bearer tokens (the bed's clients
// authenticate with tokens, not certificates).
type pki struct {
	*PKI
	ServingCert string
	ServingKey  string
	TokenFile   string // static tokens (--token-auth-file)
	AdminToken  string // system:masters
	KCMToken    string // system:kube-controller-manager
}

func newPKI(dir string) (*pki, error) {
	base, err := NewPKI(dir)
	if err != nil {
		return nil, err
	}
	serving, err := base.Serving("apiserver", []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost", "kubernetes.default.svc"})
	if err != nil {
		return nil, err
	}
	p := &pki{PKI: base, ServingCert: serving.Cert, ServingKey: serving.Key, TokenFile: filepath.Join(dir, "tokens.csv"),
		AdminToken: randomToken(), KCMToken: randomToken()}
	tokens := fmt.Sprintf("%s,admin,admin-uid,\"system:masters\"\n%s,system:kube-controller-manager,kcm-uid\n", p.AdminToken, p.KCMToken)
	if err := os.WriteFile(p.TokenFile, []byte(tokens), 0o600); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	return p, nil
}

func ecKeyPEM(k *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		panic(err) // only for curves x509 does not know
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func pubKeyPEM(k *ecdsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails on Linux
	return hex.EncodeToString(b)
}
