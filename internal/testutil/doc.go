// Package testutil is the home of the module's test helpers, one package
// each: shared (the project's shared data beside the checkout), schematest
// (messages against the RCP JSON Schema), within (bounded waits), syncbuf
// (a buffer safe for concurrent writes), childtest (a program run as a
// test's child until it logs its address), gobuild (the module's commands
// built for tests that run them), bolttest (bbolt transaction
// counts), pdftest and onnxtest (fixtures made at test time), weaviatetest
// (Weaviate nodes on loopback) and fedtest (toy engines for federation).
// Nothing outside tests imports them, but fedtest, whose toy engines also
// serve the gateway demo (rcpd gateway --demo).
package testutil
