package mcpbridge

import (
	"bytes"
	"encoding/json"

	"go.yaml.in/yaml/v3"
)

// Encode writes d as indented JSON or as YAML.
func Encode(d *Description, format string) ([]byte, error) {
	js, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return nil, err
	}
	if format != "yaml" {
		return append(js, '\n'), nil
	}
	var node yaml.Node
	if err := yaml.Unmarshal(js, &node); err != nil { // JSON is YAML: keeps key order
		return nil, err
	}
	clearStyle(&node)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// clearStyle turns the flow style that JSON input implies into block style.
func clearStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle | yaml.DoubleQuotedStyle
	for _, c := range n.Content {
		clearStyle(c)
	}
}
