// Package filter implements RCP/1 metadata filters (§8): a builder for Go
// callers, a validator for untrusted trees, and an evaluator over document
// metadata.
//
// # Wire form and AST
//
// A filter is a tree of {"and": [...]}, {"or": [...]}, {"not": {...}} and
// comparisons {"field": F, "op": OP, "value": V}. Validate turns untrusted
// input into a *Node tree that backends compile directly (they never
// re-parse JSON): leaves keep only field/op/value (other keys are dropped),
// numbers keep their exact JSON text, and exists always carries a boolean.
// Node.MarshalJSON writes the normalised wire form.
//
// # Validation order (first error wins)
//
//  1. Depth: at most MaxDepth (32) levels below the root; total nodes at most
//     MaxNodes (1024) (§15.5 DoS guard). Path: the node itself.
//  2. The node must be an object. Path: the node.
//  3. Exactly one of and/or/not, or a comparison (a node with "field" or
//     "op"); never both, never neither ("value" alone is not a comparison).
//     Path: the node.
//  4. and/or take a non-empty array (path "<node>.and" / "<node>.or");
//     children are checked left to right at "<node>.and[i]"; not's operand
//     is checked at "<node>.not".
//  5. Comparisons: "field" is a non-empty string (path: the node); "op" is
//     one of the ten operators ("<node>.op", -32602); "op" is advertised
//     (-32005, error.data.option = the operator, error.data.field =
//     "<node>.op"); "field" is advertised ("<node>.<field>").
//  6. "value" (path "<node>.value"): present except for exists; a non-empty
//     array of scalars for in/nin; a scalar otherwise; a boolean (or
//     absent/null, both meaning true) for exists. null is a scalar.
//  7. gt/gte/lt/lte only on fields typed int, float or date ("<node>.op");
//     fields advertised without a type are not restricted.
//  8. The value's JSON type suits the field type ("<node>.value"): keyword
//     and text take strings, int and float numbers, bool booleans, date an
//     RFC 3339 string or integer epoch milliseconds; geo, untyped and
//     unknown types take any scalar. null is accepted for every type.
//
// The Validator's Fields map uses "" for a field advertised without a type,
// as rcp.FilterCap.FieldTypes produces for the list form and for a null type.
//
// # Divergences from the reference SDKs
//
// The conformance vectors (shared/rcp/vectors/filter.jsonl) record what the
// Python and Node SDKs do. Where they contradict the spec, this package
// follows the spec:
//
//   - Empty and/or is -32602 at "<node>.and"/"<node>.or" (§8; references
//     accept it).
//   - An operator outside the advertised list is -32005 OptionUnsupported
//     (§8, and §12 "Choosing between overlapping codes", which is normative;
//     references return -32602, as §15.4 also says).
//   - A value whose JSON type does not suit the field type is -32602 (§8;
//     references check only scalar-vs-array shape).
//   - exists takes a boolean (§8 table, §4.6): other values are -32602
//     instead of being coerced by truthiness; null is read as absent (§4.6),
//     so it means the default true (references: false).
//   - Field names are looked up as plain map keys, so "constructor" or
//     "__proto__" are unadvertised like any other name (§8 MUST; the Node SDK
//     accepts them), and a non-string op is -32602 at ".op" (the Python SDK
//     raises TypeError).
//   - A field advertised with type "" counts as untyped (Node behaviour; the
//     Python SDK treats "" as a declared non-ordered type). This follows
//     rcp.FilterCap.FieldTypes, which maps list-form fields to "".
//
// # Evaluation semantics
//
// Node.Match evaluates a tree against a document's metadata map. Fields are
// looked up by exact key, then as a dotted path through nested objects. A
// null field value is the same as an absent field (§4.6).
//
//   - Missing field: eq/gt/gte/lt/lte/contains are false and ne is true;
//     eq null is true and ne null is false (null compares as "absent"); in is
//     true only when its list contains null, and nin is the negation of in;
//     exists false is true.
//   - Array-valued field (any Go slice or []any): eq, in, contains and the
//     ordered operators match when any element matches; ne and nin are the
//     negations of eq and in (no element matches). contains on a scalar
//     string field is a case-sensitive substring test; on an array it is
//     element membership; on another scalar it is equality.
//   - Comparison: strings compare by bytes (case-sensitive, §8), numbers
//     numerically and exactly (json.Number text, Go integers and floats),
//     booleans only for equality. Values of different JSON types never
//     match. Fields typed date compare as instants, so an RFC 3339 string
//     and epoch milliseconds denoting the same instant are equal, and
//     time.Time document values work too.
package filter
