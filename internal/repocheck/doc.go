// Package repocheck holds tests of the repository's shape that no single
// package owns: that the SDK module (rcp/) needs nothing beyond the
// standard library, and that the frames the SDK's own tests exchange
// validate against the normative RCP schema, which the SDK cannot check
// itself without depending on a validator; that rcpd links no plotting
// library; and that no function is longer than the guide allows.
package repocheck
