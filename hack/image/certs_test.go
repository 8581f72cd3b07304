package main

import (
	"crypto/x509"
	"encoding/pem"
	"slices"
	"testing"
)

// The bundle is PEM that Go reads as a root pool: Mozilla's roots, the
// ones public TLS servers chain to among them, and none that NSS trusts only
// with a constraint a PEM file would drop.
func TestCABundle(t *testing.T) {
	b, err := caBundle()
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for rest := b; len(rest) > 0; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			t.Fatalf("not PEM after %d certificates: %q", len(subjects), rest[:min(len(rest), 40)])
		}
		if block.Type != "CERTIFICATE" {
			t.Fatalf("a %s block", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if !c.IsCA {
			t.Errorf("%s is not a CA", c.Subject)
		}
		subjects = append(subjects, c.Subject.CommonName)
	}
	if len(subjects) < 100 {
		t.Errorf("%d roots; Mozilla trusts over 100 for TLS", len(subjects))
	}
	for _, want := range []string{"ISRG Root X1", "DigiCert Global Root G2", "GTS Root R1"} {
		if !slices.Contains(subjects, want) {
			t.Errorf("no %q among the roots", want)
		}
	}
	// Izenpe.com is trusted by NSS only for certificates issued before a
	// date: a PEM bundle cannot say so.
	if slices.Contains(subjects, "Izenpe.com") {
		t.Error("a constrained root (Izenpe.com) is in the bundle")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatal("crypto/x509 reads no certificate from the bundle")
	}
}
