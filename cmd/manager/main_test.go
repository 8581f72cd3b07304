package main

import (
	"net/netip"
	"reflect"
	"testing"
)

func TestParseCIDRs(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		want    []netip.Prefix
		invalid bool
	}{
		{"a list with spaces", "10.0.0.0/8, fd00::/8", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}, false},
		{"host bits are masked", "169.254.169.254/16", []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}, false},
		{"empty denies nothing", "", nil, false},
		{"a bare address is refused", "10.0.0.1", nil, true},
		{"garbage is refused", "ten/8", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCIDRs(tt.value)
			if (err != nil) != tt.invalid {
				t.Fatalf("error %v, want invalid=%v", err, tt.invalid)
			}
			if !tt.invalid && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
