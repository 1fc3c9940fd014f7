package cni

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
)

// DefaultConflist is written when there is no config yet: kube-router's
// 10-kuberouter.conflist, bridge kube-bridge with host-local IPAM (ranges
// filled in by Render) and portmap for hostPorts.
const DefaultConflist = `{
  "cniVersion": "0.3.1",
  "name": "mynet",
  "plugins": [
    {
      "name": "kubernetes",
      "type": "bridge",
      "bridge": "kube-bridge",
      "isDefaultGateway": true,
      "hairpinMode": true,
      "ipam": {"type": "host-local"}
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true},
      "snat": true
    }
  ]
}`

// Render returns config (empty: DefaultConflist) with the IPAM of its bridge
// plugin set to hand out addresses from cidrs: host-local ranges, one range
// set per CIDR (IPv4 and IPv6 for dual stack), replacing any subnet or ranges
// it had. Everything else in config is kept. The output is indented JSON with
// sorted keys, so the same input gives the same bytes.
func Render(config []byte, cidrs []netip.Prefix) ([]byte, error) {
	if len(cidrs) == 0 {
		return nil, errors.New("cni config: no pod CIDR")
	}
	if len(bytes.TrimSpace(config)) == 0 {
		config = []byte(DefaultConflist)
	}
	var doc map[string]any
	if err := json.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("cni config: %w", err)
	}
	bridge, err := bridgePlugin(doc)
	if err != nil {
		return nil, err
	}
	ipam, _ := bridge["ipam"].(map[string]any)
	if ipam == nil {
		ipam = map[string]any{}
		bridge["ipam"] = ipam
	}
	if _, ok := ipam["type"]; !ok {
		ipam["type"] = "host-local"
	}
	delete(ipam, "subnet")
	ranges := make([]any, 0, len(cidrs))
	for _, c := range cidrs {
		ranges = append(ranges, []any{map[string]any{"subnet": c.Masked().String()}})
	}
	ipam["ranges"] = ranges
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("cni config: %w", err)
	}
	return append(out, '\n'), nil
}

// bridgePlugin finds the bridge plugin's object: in "plugins" of a conflist,
// or the config itself when it is a single-plugin .conf.
func bridgePlugin(doc map[string]any) (map[string]any, error) {
	if plugins, ok := doc["plugins"].([]any); ok {
		for _, p := range plugins {
			if m, ok := p.(map[string]any); ok && m["type"] == "bridge" {
				return m, nil
			}
		}
		return nil, errors.New("cni config: no plugin of type bridge in plugins")
	}
	if doc["type"] == "bridge" {
		return doc, nil
	}
	return nil, errors.New("cni config: neither a conflist with a bridge plugin nor a bridge plugin config")
}
