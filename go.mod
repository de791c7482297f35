module github.com/moat-sandbox/moat

go 1.26.8

require github.com/opencontainers/runtime-spec v1.3.0

require golang.org/x/sys v0.50.0
