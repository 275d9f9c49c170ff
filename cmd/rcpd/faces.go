package main

import (
	"github.com/rcpgo/rcpgo/cmd/rcpd/internal/gatewaycmd"
	"github.com/rcpgo/rcpgo/cmd/rcpd/internal/mcpcmd"
)

// The gateway and the MCP face are RCP clients of engines; rcpd only names
// their commands.
func init() {
	commands["gateway"] = command{summary: "federate the engines of an rcp.json registry behind one RCP server", run: gatewaycmd.Main}
	commands["mcp"] = command{summary: "serve the MCP face of an RCP engine (stdio or streamable HTTP)", run: mcpcmd.Main}
	commands["mcpdesc"] = command{summary: "print the MCP Description (mcpdesc 0.7.0) of the MCP face", run: mcpcmd.DescMain}
}
