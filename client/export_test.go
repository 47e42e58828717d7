package client

// OnRecord makes c call f with each record a walk of the jobstate stream
// reads, before it handles it.
func OnRecord(c *Client, f func(seq uint64)) { c.onRecord = f }
