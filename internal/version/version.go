// Package version holds st's version, set at build time with
// -ldflags "-X github.com/sophonz/st/internal/version.Version=...".
package version

// Version is st's version.
var Version = "0.1.0-dev"
