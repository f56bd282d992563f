package reports

// PeerFindings classifies each violation (and each notable difference)
// found by make peers, keyed "impl/case". They are written by hand after
// reading the run's timeline and record; a violation without an entry is
// reported as not yet classified.
var PeerFindings = map[string]Finding{}
