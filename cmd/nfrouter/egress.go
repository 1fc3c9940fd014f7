package main

// podEgressPart masquerades pod traffic leaving the cluster's pod CIDRs
// (--enable-pod-egress). Not yet: nil.
func podEgressPart(w wiring) nftPart {
	w.log.Warn("--enable-pod-egress: the masquerade rule is not programmed by this build yet")
	return nil
}
