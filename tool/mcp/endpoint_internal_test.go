package mcp

import "testing"

func TestHTTPEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url  string
		want endpoint
	}{
		{"http://127.0.0.1:8080/mcp", endpoint{Kind: "http", Host: "127.0.0.1", Port: 8080}},
		{"https://mcp.example.com/mcp", endpoint{Kind: "http", Host: "mcp.example.com", Port: 443}},
		{"http://mcp.example.com", endpoint{Kind: "http", Host: "mcp.example.com", Port: 80}},
		{"http://[::1]:9000/mcp", endpoint{Kind: "http", Host: "::1", Port: 9000}},
		{"://bad", endpoint{Kind: "http"}},
	}
	for _, tt := range tests {
		if got := httpEndpoint(tt.url); got != tt.want {
			t.Errorf("httpEndpoint(%q) = %+v, want %+v", tt.url, got, tt.want)
		}
	}
}
