package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// caBundle is the CA bundle the images carry: Mozilla's NSS roots trusted
// for TLS server authentication, as golang.org/x/crypto/x509roots/fallback
// (pinned in go.mod, checked by go.sum) ships them, PEM-encoded in the
// bundle's order. The build machine's /etc/ssl/certs would make the image
// depend on which machine built it and when its ca-certificates package
// was last updated; the module is the same bytes everywhere and is
// refreshed deliberately, by moving its version. A root that NSS trusts
// only with a constraint a PEM file cannot carry (a distrust-after date)
// is left out: a PEM bundle would trust it without the constraint.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		if _, err := x509.ParseCertificate(root.Certificate); err != nil {
			return nil, fmt.Errorf("a root of the CA bundle: %w", err)
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate}); err != nil {
			return nil, err
		}
	}
	if buf.Len() == 0 {
		return nil, errors.New("the CA bundle has no roots")
	}
	return buf.Bytes(), nil
}
