"""Interop probe: the reference Python RCP client against an rcpgo gateway.

usage: PYTHONPATH=<rcp>/sdk/python python3 interop.py http://127.0.0.1:PORT/rcp
       PYTHONPATH=<rcp>/sdk/python python3 interop.py stdio CMD [ARGS...]
Prints one JSON object with what it saw; exits non-zero on a failed expectation.
"""
import json
import sys

import rcp

if sys.argv[1] == "stdio":
    c = rcp.connect_stdio(sys.argv[2:])
else:
    c = rcp.connect_http(sys.argv[1])
out = {"server": c.server, "capabilities": sorted(c.capabilities)}
res = c.search("federated search fusion of ranked results in Paris", k=5)
out["hits"] = [{"id": h["id"], "engine": h.get("meta", {}).get("engine"),
                "engineRank": h.get("meta", {}).get("engineRank")} for h in res["hits"]]
out["notes"] = res["usage"].get("notes", [])
cat = c.catalog()
out["catalog"] = [{"id": e["id"], "server": e["server"]["name"],
                   "caps": sorted(e["capabilities"]), "endpoint": e.get("endpoint")}
                  for e in cat["engines"]]
# Dynamic discovery (§16.1): connect straight to an exposed endpoint.
direct = next(e["endpoint"]["url"] for e in out["catalog"] if e["endpoint"])
d = rcp.connect_http(direct)
out["direct"] = {"url": direct, "server": d.server["name"], "hits": len(d.retrieve("paris", k=2))}
out["embed_dim"] = len(c.embed(["paris"])[0])
out["rerank"] = c.rerank("paris seine", ["the seine", "paris seine"])
try:
    c.search("federated", k=3, opts={"mode": "no-such-mode"})
    out["bad_mode"] = "accepted"
except rcp.RcpError as e:
    out["bad_mode"] = str(e)
c.shutdown()
print(json.dumps(out, indent=1))
assert out["hits"] and all(h["engine"] for h in out["hits"]), "hits must carry meta.engine"
assert {e["id"] for e in out["catalog"]} == {"alpha", "beta", "gamma"}, out["catalog"]
assert "-32005" in out["bad_mode"], out["bad_mode"]
