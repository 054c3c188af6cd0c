"""What a tool's rewritten schema must still promise its MCP server, and the call a hosted API's double
makes from the schema it received.

A rewrite may drop a keyword a backend cannot read (and must then say so in a lossy record); it may not
drop a name the server requires or change what type a property holds. `lost(original, received)` names
each such loss, object by object along `properties`, `items` and the branches of a union that both
sides keep. `minimal_call(received)` is the call a model makes that writes only what the received schema
requires: if the rewrite lost a required name or a type, the MCP server gets a call its own schema
refuses, which is what the user would feel."""


def _types(s):
    t = s.get("type") if isinstance(s, dict) else None
    return {t} if isinstance(t, str) else set(t) if isinstance(t, list) else None


def _resolve(s, root, depth=0):
    """`s` with a local `$ref` (`#/$defs/X`, `#/definitions/X`) followed, a few levels at most."""
    while isinstance(s, dict) and isinstance(s.get("$ref"), str) and s["$ref"].startswith("#/") and depth < 8:
        node = root
        for seg in s["$ref"][2:].split("/"):
            seg = seg.replace("~1", "/").replace("~0", "~")
            node = node.get(seg) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            return s
        s, depth = {**node, **{k: v for k, v in s.items() if k != "$ref"}}, depth + 1
    return s


def lost(original, received, at="", roots=None, optional=False):
    """[(JSON pointer, what was lost)]: required names the received schema no longer requires, and
    properties whose type it changed to one the original does not allow (narrowing `number` to
    `integer` is allowed; so is `null` beside an optional property's type, as strict modes write an
    optional property and toolfit removes the null from the call)."""
    roots = roots or (original, received)
    o, r = _resolve(original, roots[0]), _resolve(received, roots[1])
    if not isinstance(o, dict) or not isinstance(r, dict):
        return []
    out = []
    ot, rt = _types(o), _types(r)
    allowed = (ot or set()) | ({"integer"} if "number" in (ot or ()) else set()) | ({"null"} if optional else set())
    if ot is not None and rt is not None and not rt <= allowed:
        out.append((at, f"type {sorted(ot)} became {sorted(rt)}"))
    if ot is not None and rt is None and "anyOf" not in r and "oneOf" not in r and "$ref" not in r:
        out.append((at, f"type {sorted(ot)} removed"))
    gone = [n for n in o.get("required") or [] if n not in (r.get("required") or [])]
    if gone:
        out.append((at, f"required {gone} no longer required"))
    op, rp = o.get("properties") or {}, r.get("properties") or {}
    for name, sub in op.items() if isinstance(op, dict) and isinstance(rp, dict) else ():
        if name in rp:
            out += lost(sub, rp[name], f"{at}/properties/{name}", roots, name not in (o.get("required") or []))
        elif name in (o.get("required") or []):
            out.append((f"{at}/properties/{name}", "a required property removed"))
    if isinstance(o.get("items"), dict) and isinstance(r.get("items"), dict):
        out += lost(o["items"], r["items"], f"{at}/items", roots)
    for k in ("anyOf", "oneOf"):
        if isinstance(o.get(k), list) and isinstance(r.get(k), list) and len(o[k]) == len(r[k]):
            for i, (a, b) in enumerate(zip(o[k], r[k])):
                out += lost(a, b, f"{at}/{k}/{i}", roots)
    return out


def minimal_call(schema, root=None, depth=0):
    """The smallest instance of `schema` a model writes when it writes only what is required: an enum's
    or const's first value, a default or example where the schema gives one, else a value of its type
    ("UTC" for a string: the time tool's timezone, a valid IANA name)."""
    root = root if root is not None else schema
    s = _resolve(schema, root)
    if not isinstance(s, dict) or depth > 8:
        return {}
    if "const" in s:
        return s["const"]
    for k in ("enum", "examples"):
        if isinstance(s.get(k), list) and s[k]:
            return s[k][0]
    if "default" in s:
        return s["default"]
    for k in ("anyOf", "oneOf"):
        if isinstance(s.get(k), list) and s[k]:
            return minimal_call(s[k][0], root, depth + 1)
    t = _types(s) or ({"object"} if "properties" in s else set())
    t = next((x for x in ("object", "string", "integer", "number", "boolean", "array", "null") if x in t), None)
    if t == "object" or t is None and "required" in s:
        props = s.get("properties") or {}
        return {n: minimal_call(props.get(n, {}), root, depth + 1) for n in s.get("required") or []}
    return {"string": "UTC", "integer": 0, "number": 0, "boolean": False, "array": [], "null": None}.get(t, {})


def self_test():
    """The rules say no where they must: returns [(name, ok)]."""
    time = {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}
    return [
        ("the same schema has lost nothing", lost(time, time) == []),
        ("a dropped required name is lost", lost(time, {**time, "required": []}) != []),
        ("a changed type is lost", lost(time, {**time, "properties": {"timezone": {"type": "integer"}}}) != []),
        ("a removed required property is lost", lost(time, {"type": "object", "properties": {}, "required": []}) != []),
        ("a description or pattern removed is not this check's loss", lost({**time, "properties": {"timezone": {"type": "string", "pattern": "^x"}}}, time) == []),
        ("an optional property may become nullable; a required one may not",
         lost({**time, "required": []}, {**time, "required": [], "properties": {"timezone": {"type": ["string", "null"]}}}) == []
         and lost(time, {**time, "properties": {"timezone": {"type": ["string", "null"]}}}) != []),
        ("the minimal call writes the required name", minimal_call(time) == {"timezone": "UTC"}),
        ("without required, the minimal call is empty", minimal_call({**time, "required": []}) == {}),
    ]
