package main

import "flag"

// flagValue returns the value of a registered flag, or "".
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
