package e2b

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// sandboxNetwork is POST /sandboxes' network: what the sandbox may reach
// (allowOut: addresses, CIDRs or domains; denyOut: addresses or CIDRs),
// whether its ports are public without a token, and the Host its
// proxied requests carry.
type sandboxNetwork struct {
	AllowOut           []string `json:"allowOut"`
	DenyOut            []string `json:"denyOut"`
	AllowPublicTraffic *bool    `json:"allowPublicTraffic"`
	MaskRequestHost    *string  `json:"maskRequestHost"`
}

// egress is a sandbox's network as moat gives it: its loopback alone
// (the zero value, what a pool's sandboxes have), or the user-space
// network (internal/usernet), reaching all the host reaches or, with an
// allowlist, only what that names (dev.moat.net-allow's entries).
type egress struct {
	user  bool
	allow []string // nil with user: all of the network
}

// pooled says whether a pool's sandbox, booted with loopback alone, has
// this network.
func (e egress) pooled() bool { return !e.user }

// String is how the log names the network.
func (e egress) String() string {
	switch {
	case !e.user:
		return "loopback only"
	case e.allow == nil:
		return "all of the network"
	}
	return "allowlist " + strings.Join(e.allow, ",")
}

// decodeNetwork reads a create's network; absent or null is the zero
// value.
func decodeNetwork(raw json.RawMessage) (sandboxNetwork, error) {
	var n sandboxNetwork
	if len(raw) > 0 && string(raw) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&n); err != nil {
			return sandboxNetwork{}, err
		}
	}
	return n, nil
}

// sandboxEgress maps a create's allow_internet_access and network onto
// moat's network, or says why it cannot (a 400).
//
// E2B's rules (its openapi.yml and SDKs): traffic goes out unless denyOut
// denies it; allow_internet_access false is denyOut 0.0.0.0/0 (all);
// allowOut's entries take precedence over denyOut's. moat's egress is an
// allowlist, so:
//
//   - a request that denies all (denyOut holds 0.0.0.0/0, or
//     allow_internet_access is false) reaches what allowOut lists and
//     nothing else: loopback alone when it lists nothing;
//   - allow_internet_access true with no denyOut is all of the network
//     (allowOut adds nothing to it), and so is allowOut 0.0.0.0/0;
//   - a denyOut of only some addresses beside allow_internet_access true
//     (all but those) is an allowlist's opposite, and refused;
//   - without allow_internet_access the sandbox gets moat's default,
//     not E2B's: it denies all, so it reaches what allowOut lists (a
//     denyOut beside only denies what is denied already). The SDKs send
//     the field only when the caller sets it.
//
// allowOut's entries are dev.moat.net-allow's: E2B's addresses, CIDRs,
// names and *.names, and moat's ADDR:PORT, NAME:PORT too.
func sandboxEgress(allowInternet *bool, raw json.RawMessage) (egress, string) {
	n, err := decodeNetwork(raw)
	if err != nil {
		return egress{}, "network: " + err.Error()
	}
	denyAll := allowInternet == nil || !*allowInternet
	for _, d := range n.DenyOut {
		p, err := parsePrefix(d)
		if err != nil {
			return egress{}, fmt.Sprintf("network.denyOut: %q is not an IP address or CIDR (denyOut takes no domain names)", d)
		}
		denyAll = denyAll || p.Bits() == 0
	}
	allowAll := false
	for _, a := range n.AllowOut {
		if p, err := parsePrefix(a); err == nil && p.Bits() == 0 {
			allowAll = true
		}
	}
	if len(n.AllowOut) > 0 {
		if _, err := netstack.ParseEgress(strings.Join(n.AllowOut, ","), nil); err != nil {
			return egress{}, "network.allowOut: " + strings.TrimPrefix(err.Error(), netstack.EgressAnnotation+": ")
		}
	}
	switch {
	case allowAll:
		return egress{user: true}, ""
	case !denyAll && len(n.DenyOut) > 0:
		return egress{}, fmt.Sprintf("network.denyOut: moat's egress is an allowlist: it cannot deny %s and let the rest out; "+
			"deny all (0.0.0.0/0) and list what may be reached in allowOut", strings.Join(n.DenyOut, ", "))
	case !denyAll:
		return egress{user: true}, ""
	case len(n.AllowOut) == 0:
		return egress{}, ""
	}
	return egress{user: true, allow: slices.Clone(n.AllowOut)}, ""
}

// parsePrefix reads an address or a CIDR, as denyOut holds them.
func parsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	return netip.ParsePrefix(s)
}

// statsTimeout bounds the wait for a sandbox's stats, which a scrape of
// the metrics or a kill asks for.
const statsTimeout = time.Second

// egressDenied is how many attempts to leave sb its allowlist refused so
// far, as its sentry counts them; 0 for a sandbox without an allowlist,
// or one whose sentry does not answer within statsTimeout (a sentry that
// died: its refusals are lost, and the metric's total falls back).
func (sb *sandbox) egressDenied(ctx context.Context) uint64 {
	if !sb.allowlisted.Load() {
		return 0
	}
	st, err := sb.inst.stats(ctx)
	if err != nil {
		return 0
	}
	return st.EgressDenied
}

// networkUpdate is PUT /sandboxes/{id}/network's body, as the SDKs'
// updateNetwork sends it: a create's network fields and its
// allow_internet_access.
type networkUpdate struct {
	AllowInternetAccess *bool           `json:"allow_internet_access"`
	AllowOut            []string        `json:"allowOut"`
	DenyOut             []string        `json:"denyOut"`
	Rules               json.RawMessage `json:"rules"`
	EgressProxy         json.RawMessage `json:"egressProxy"`
}

// updateNetwork answers PUT /sandboxes/{id}/network: the sandbox's
// network becomes what a create with the same fields would have given it,
// for the connections, datagrams and DNS queries that follow (204): moat
// usernet's list first, then the sentry's, both sides of the sandbox's
// user-space network. A sandbox created with one may be given any list,
// or all of the network; one with loopback alone (any create without
// internet access or allowOut, and every pooled one) has none to widen,
// and stays so: a change that would open it is 409. Names an old
// allowlist let the guest resolve must be resolved again.
func (s *Server) updateNetwork(w http.ResponseWriter, r *http.Request) {
	var req networkUpdate
	if err := decodeBody(r, &req); err != nil {
		apiError(w, http.StatusBadRequest, "request body: %v", err)
		return
	}
	switch {
	case len(req.Rules) > 0 && string(req.Rules) != "null" && string(req.Rules) != "{}":
		apiError(w, http.StatusBadRequest, "rules: moat serve has no per-host egress rules")
		return
	case len(req.EgressProxy) > 0 && string(req.EgressProxy) != "null":
		apiError(w, http.StatusBadRequest, "egressProxy: moat serve has no egress proxy")
		return
	}
	raw, err := json.Marshal(sandboxNetwork{AllowOut: req.AllowOut, DenyOut: req.DenyOut})
	if err != nil {
		apiError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	network, problem := sandboxEgress(req.AllowInternetAccess, raw)
	if problem != "" {
		apiError(w, http.StatusBadRequest, "%s", problem)
		return
	}
	sb := s.pathSandbox(w, r)
	if sb == nil {
		return
	}
	created := sb.created
	switch {
	case !created.user && network.user:
		apiError(w, http.StatusConflict, "sandbox %s was created with loopback alone: its network cannot be opened", sb.id)
		return
	case !created.user:
		w.WriteHeader(http.StatusNoContent) // loopback alone, as asked
		return
	}
	// moat usernet first, then the sentry: between the two, what the
	// sandbox may reach is the narrower of the old list and the new.
	e := &control.Egress{All: network.user && network.allow == nil, Allow: network.allow}
	if err := sb.inst.usernetPolicy(r.Context(), e); err != nil {
		apiError(w, http.StatusInternalServerError, "sandbox %s: %v", sb.id, err)
		return
	}
	if !e.All && network.user {
		// The sentry's list names the network's resolver too, as at boot.
		e = &control.Egress{Allow: strings.Split(usernet.SentryAllow(strings.Join(network.allow, ",")), ",")}
	}
	if _, err := sb.inst.call(r.Context(), control.Request{Op: control.OpEgress, Egress: e}); err != nil {
		apiError(w, http.StatusInternalServerError, "sandbox %s: %v", sb.id, err)
		return
	}
	if !e.All {
		sb.allowlisted.Store(true)
	}
	s.cfg.Log("sandbox %s: network now %s", sb.id, network)
	w.WriteHeader(http.StatusNoContent)
}
