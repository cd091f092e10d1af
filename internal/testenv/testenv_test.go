package testenv

import "testing"

func TestRequired(t *testing.T) {
	tests := []struct {
		ci, require string
		want        bool
	}{
		{"", "", false},
		{"true", "", true},
		{"1", "", true},
		{"false", "", false},
		{"0", "", false},
		{"", "1", true},
		{"false", "1", true},
		{"", "0", false},
	}
	for _, tt := range tests {
		t.Setenv("CI", tt.ci)
		t.Setenv("TURNKIT_REQUIRE_BACKENDS", tt.require)
		if got := Required(); got != tt.want {
			t.Errorf("Required() with CI=%q TURNKIT_REQUIRE_BACKENDS=%q = %v, want %v", tt.ci, tt.require, got, tt.want)
		}
	}
}
