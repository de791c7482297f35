package e2b

import (
	"bytes"
	"encoding/json"
)

// sandboxNetwork is POST /sandboxes' network: what the sandbox may reach
// (allowOut, denyOut: addresses, CIDRs or domains), whether its ports
// are public without a token, and the Host its proxied requests carry.
type sandboxNetwork struct {
	AllowOut           []string `json:"allowOut"`
	DenyOut            []string `json:"denyOut"`
	AllowPublicTraffic *bool    `json:"allowPublicTraffic"`
	MaskRequestHost    *string  `json:"maskRequestHost"`
}

// networkProblem says why moat serve cannot honour a request's network,
// "" if it can. Its sandboxes reach their loopback alone and none of
// their ports is routed, so what denies (denyOut, any list of it;
// allowPublicTraffic false) is already so, and what allows or reshapes
// traffic is refused rather than ignored.
func networkProblem(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var n sandboxNetwork
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		return "network: " + err.Error()
	}
	switch {
	case len(n.AllowOut) > 0:
		return "network.allowOut: moat serve's sandboxes have no network beyond their loopback yet"
	case n.AllowPublicTraffic != nil && *n.AllowPublicTraffic:
		return "network.allowPublicTraffic: moat serve routes no sandbox port but envd's"
	case n.MaskRequestHost != nil:
		return "network.maskRequestHost: moat serve routes no sandbox port but envd's"
	}
	return ""
}
