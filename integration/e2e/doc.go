// Package e2e runs upstream's sig-network end-to-end suites (e2e.test from
// k8s.io/kubernetes/test/e2e) against the node tier, with nfrouter as the only
// network agent: it builds the images the suites' pods run (agnhost with a
// Debian shell userland, tagged as the e2e framework names it), picks the
// cases (focus and skip patterns per suite), runs e2e.test and turns its JUnit
// report into the results table of the README.
//
// It is harness code: it runs apt-get, dpkg and e2e.test. Nothing in the
// product imports it.
package e2e
