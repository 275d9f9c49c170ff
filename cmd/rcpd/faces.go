package main

import (
	"context"
	"io"

	"github.com/rcpgo/rcpgo/federation"
	"github.com/rcpgo/rcpgo/mcpbridge"
)

// The gateway and the MCP face are RCP clients of engines; their flag
// parsing and serving live with them, rcpd only names them.
func init() {
	commands["gateway"] = command{summary: "federate the engines of an rcp.json registry behind one RCP server", run: runGateway}
	commands["mcp"] = command{summary: "serve the MCP face of an RCP engine (stdio or streamable HTTP)", run: mcpbridge.Main}
	commands["mcpdesc"] = command{summary: "print the MCP Description (mcpdesc 0.7.0) of the MCP face", run: mcpbridge.DescMain}
}

func runGateway(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return federation.GatewayMain(ctx, args, stdout, stderr)
}
