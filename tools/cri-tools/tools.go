//go:build tools

// Package tools pins crictl (sigs.k8s.io/cri-tools), which the engine
// tests build from this module to drive containerd's CRI as a kubelet
// would.
package tools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
