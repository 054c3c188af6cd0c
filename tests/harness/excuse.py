"""When a judge's failure is excused by what toolfit reported, and when it is not.

A backend that accepts an invalid instance of a rewritten schema is silent loss unless toolfit recorded
the loss that lets it through. A lossy record somewhere in the schema is not enough: the record must name the keyword the instance
violates, judged by a reference validator (the `jsonschema` package, draft-aware) on the schema as the
client sent it, and govern the place in the instance where it is violated. A record's path is a place
in the schema as the pass saw it (after merges and splits), so it is compared by the instance places it
governs: `properties/a` is the member `a`, `items` any element, `allOf/0` the same place, `$defs/X`
wherever the definition is used. Records that replace a whole subtree (a nesting cut, a schema
replaced, a ref to another document) excuse every violation at or under their place.

A refusal with objects closed is excused as "only for an undeclared key" only where the instance
really has a key its schema does not declare there (the closed rewrite refuses it by
additionalProperties).
"""
import re

import jsonschema

# records whose change covers everything under their path
WHOLE = {"bounds_exceeded", "ref_external", "refs_unresolved", "schema_replaced", "recursion_cut",
         "ref_siblings_dropped", "property_unspellable", "root_union_merged", "optional_nullable"}
# keywords toolfit spells as others: `false` as `not: {}`, unevaluated* as additional* where it can,
# and the older drafts' keywords in their 2020-12 spelling (dependencies, additionalItems, items as a
# list, draft-04's boolean exclusive bounds beside minimum/maximum)
SAME_AS = {"false": ("not",), "maximum": ("exclusiveMaximum",), "minimum": ("exclusiveMinimum",), "unevaluatedProperties": ("additionalProperties",), "unevaluatedItems": ("items", "additionalItems"),
           "dependencies": ("dependentRequired", "dependentSchemas"), "additionalItems": ("items",), "items": ("prefixItems",)}
# the keyword a kind is about, where its detail does not name it
KIND_KEYWORDS = {"not_dropped": {"not"}, "oneof_as_anyof": {"oneOf"}, "pattern_removed": {"pattern"}}
NAMED = re.compile(r"\b(?:removed|clamped|dropped) ([A-Za-z$]+)")
KEYWORD = re.compile(r"\b(minLength|maxLength|minItems|maxItems|minProperties|maxProperties|minimum|maximum|"
                     r"exclusiveMinimum|exclusiveMaximum|multipleOf|format|pattern|patternProperties|"
                     r"propertyNames|uniqueItems|contains|minContains|maxContains|if|then|else|not|"
                     r"dependentRequired|dependentSchemas|dependencies|unevaluatedProperties|"
                     r"unevaluatedItems|additionalProperties|additionalItems|prefixItems|items|const|enum)\b")


def record_keywords(r):
    """The keywords a record says it changed: its kind's own, and those its detail names."""
    words = set(KIND_KEYWORDS.get(r["kind"], ()))
    detail = r.get("detail", "")
    words |= set(NAMED.findall(detail))
    if r["kind"] in ("keyword_removed", "repetition_clamped", "pattern_removed"):
        # a removed value's own keywords went with it
        words |= set(KEYWORD.findall(detail))
    return words


def _segments(pointer):
    return [x.replace("~1", "/").replace("~0", "~") for x in pointer.split("/")[1:]] if pointer else []


IN_PLACE = {"allOf", "anyOf", "oneOf", "dependentSchemas"}  # followed by an index or a name
SAME = {"not", "if", "then", "else", "$ref"}
ANY_MEMBER = {"additionalProperties", "unevaluatedProperties", "propertyNames", "additionalItems", "unevaluatedItems", "contains"}


def governs(schema_pointer):
    """The instance places a schema place applies to, as segments: a name, "*" (any one) or "**" (any
    path: a definition applies wherever it is used)."""
    out, segs, i = [], _segments(schema_pointer), 0
    while i < len(segs):
        k = segs[i]
        if k in ("properties", "prefixItems") and i + 1 < len(segs):
            out.append(segs[i + 1])
            i += 2
        elif k == "patternProperties" and i + 1 < len(segs):
            out.append("*")
            i += 2
        elif k == "items":
            if i + 1 < len(segs) and segs[i + 1].isdigit():  # draft-07 items as a list
                out.append(segs[i + 1])
                i += 1
            else:
                out.append("*")
            i += 1
        elif k in ANY_MEMBER:
            out.append("*")
            i += 1
        elif k in ("$defs", "definitions") and i + 1 < len(segs):
            out = ["**"]
            i += 2
        elif k in IN_PLACE:
            i += 2
        else:  # not, if/then/else, unknown keywords: the same place
            i += 1
    return out


def _match(pattern, path, prefix=False):
    """Whether instance `path` (segments) is one of `pattern`'s places (or, with `prefix`, under one)."""
    if not pattern:
        return prefix or not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, path[k:], prefix) for k in range(len(path) + 1))
    return bool(path) and (head == "*" or head == str(path[0])) and _match(rest, path[1:], prefix)


def _pointers(doc):
    """id(node) -> JSON pointer, for every object and array in `doc`."""
    out, stack = {}, [(doc, "")]
    while stack:
        node, at = stack.pop()
        if isinstance(node, dict):
            out[id(node)] = at
            stack += [(v, f"{at}/{k.replace('~', '~0').replace('/', '~1')}") for k, v in node.items()]
        elif isinstance(node, list):
            out[id(node)] = at
            stack += [(v, f"{at}/{i}") for i, v in enumerate(node)]
    return out


ONE = {"additionalProperties", "items", "contains", "not", "if", "then", "else", "propertyNames",
       "unevaluatedProperties", "unevaluatedItems", "additionalItems", "contentSchema"}
MANY = {"properties", "patternProperties", "dependentSchemas", "$defs", "definitions", "dependencies"}
LISTS = {"allOf", "anyOf", "oneOf", "prefixItems", "items"}


def _subschemas(s, f):
    """`s` with `f` applied to it and to every subschema (schema positions only: never to `const`,
    `enum` or `default` data)."""
    s = f(s)
    if not isinstance(s, dict):
        return s
    out = dict(s)
    for k, v in s.items():
        if k in ONE and not isinstance(v, list):
            out[k] = _subschemas(v, f)
        elif k in MANY and isinstance(v, dict):
            out[k] = {n: (_subschemas(x, f) if not isinstance(x, list) else x) for n, x in v.items()}
        elif k in LISTS and isinstance(v, list):
            out[k] = [_subschemas(x, f) for x in v]
    return out


def _no_false(s):
    """`s` with each `false` subschema spelled `{"not": {}}` (the same meaning): the reference validator
    then says where it failed (its error for a `false` property names no instance place)."""
    return _subschemas(s, lambda x: {"not": {}} if x is False else x)


def _as_grammar_reads(s, strict):
    """`s` as a grammar spells it: an object schema lists its properties and no others unless it says
    `additionalProperties` (llama.cpp's default, which toolfit's closed objects rely on), and a
    `patternProperties` key is not spelled. `strict` (xgrammar's strict mode, as vLLM runs it): every
    object without `additionalProperties` is closed, and an array with `prefixItems` and no `items`."""
    def one(x):
        if not isinstance(x, dict):
            return x
        x = {k: v for k, v in x.items() if k != "patternProperties"}
        if ("properties" in x or strict) and "additionalProperties" not in x:
            x["additionalProperties"] = False
        if strict and "prefixItems" in x and "items" not in x:
            x["items"] = False
        return x
    return _subschemas(s, one)


def _validator(schema):
    """A reference validator for `schema` (its draft, `false` subschemas spelled `{"not": {}}`)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(_no_false(schema))


def _words_places(e):
    """(the keywords an error is about, [the instance places it stands at]): the keyword that failed and
    the applicators it failed under (a `type` inside a `dependentSchemas` member is a violation of
    dependentSchemas too; a `false` schema fails with no keyword: "false" names it), at the instance
    place and at the place the failing schema governs (a `false` property's error stands at the object)."""
    words = {str(x) for x in e.absolute_schema_path} | ({e.validator} if e.validator else {"false"})
    words |= {w for k in list(words) for w in SAME_AS.get(k, ())}
    return words, [[str(x) for x in e.absolute_path], governs("".join(f"/{x}" for x in e.absolute_schema_path))]


def violations(schema, instance):
    """(instance place as segments, the keywords it violates) for each error of `instance` against `schema`, nested ones
    (the branches of anyOf/oneOf) included; None when the reference validator cannot judge it (a ref
    to another document)."""
    try:
        out, stack = [], list(_validator(schema).iter_errors(instance))
        while stack:
            e = stack.pop()
            words, places = _words_places(e)
            out += [(p, words) for p in places]
            stack += list(e.context or ())
        return out
    except Exception:  # an unresolvable ref (remote metaschemas), a schema the package refuses
        return None


def _record_for(e, lossy):
    """The lossy record at an error's keyword and place, or None."""
    words, places = _words_places(e)
    for at in places:
        for r in lossy:
            if (r["kind"] in WHOLE or words & record_keywords(r)) and _match(governs(r["path"]), at, prefix=True):
                return r
            # a property removed whole (its name cannot be spelled) leaves its object's `required` too
            if r["kind"] == "property_unspellable" and "required" in words and _match(governs(_parent_object(r["path"])), at):
                return r
    return None


def branches(e):
    """The errors of a failed union (anyOf, oneOf), grouped by the branch they failed in."""
    out = {}
    for c in e.context or ():
        out.setdefault(c.schema_path[0] if c.schema_path else None, []).append(c)
    return list(out.values())


def _error_excused(e, lossy):
    """The records that excuse one error, or None. An error of a union (anyOf, oneOf) with branches that
    failed is excused by a record at its own keyword and place (a union rewritten as a whole), or by one
    branch whose every error is excused: a value that still fails every branch as the client wrote it is
    not let through by a keyword removed in one of them."""
    own = _record_for(e, lossy)
    if own is not None:
        return [own]
    if e.validator == "oneOf" and not e.context:
        # valid under more than one branch: the branches overlap where they were disjoint only by a
        # keyword a record says was removed in them (a record in a branch governs the union's place)
        at = [str(x) for x in e.absolute_path]
        hit = next((r for r in lossy if _match(governs(r["path"]), at, prefix=True)), None)
        return [hit] if hit is not None else None
    if e.validator in ("anyOf", "oneOf") and e.context:
        for errors in branches(e):
            got = [_error_excused(c, lossy) for c in errors]
            if all(g is not None for g in got):
                return [r for g in got for r in g]
    return None


def _without_bad_pattern(s):
    """`s` without a `pattern` Python's `re` cannot compile."""
    if isinstance(s, dict) and isinstance(s.get("pattern"), str):
        try:
            re.compile(s["pattern"])
        except re.error:
            return {k: v for k, v in s.items() if k != "pattern"}
    return s


# records that say the client's schema could not be judged as sent (a ref to another document)
UNJUDGED = {"ref_external", "refs_unresolved", "schema_replaced"}


def excused(records, schema, instance):
    """The lossy record that explains why `instance` (invalid against `schema`) got through, or None.
    Every violation must be excused, each by a record at its keyword and place. Where the reference
    validator cannot judge, only a record that toolfit could not read the schema either (an external or
    unresolved ref, the schema replaced) excuses."""
    lossy = [r for r in records if r["lossy"]]
    used = []
    try:
        errors = list(_validator(schema).iter_errors(instance))
    except re.error:
        # a pattern Python cannot compile (`\p{..}`): judged without it, what else the instance violates
        # must be excused as always, and the pattern only by a record about a pattern
        pattern = next((r for r in lossy if r["kind"] in UNJUDGED or "pattern" in record_keywords(r)), None)
        try:
            errors = list(_validator(_subschemas(schema, _without_bad_pattern)).iter_errors(instance))
        except Exception:
            return pattern
        if pattern is None:
            return None
        used.append(pattern)
    except Exception:  # an unresolvable ref (remote metaschemas), a schema the package refuses
        return next((r for r in lossy if r["kind"] in UNJUDGED), None)
    if not errors and not used:
        return None
    for e in errors:
        got = _error_excused(e, lossy)
        if got is None:
            return None
        used += got
    return used[0] if used else None


def _parent_object(pointer):
    """The object a `/.../properties/NAME` place declares its member in."""
    head, sep, _ = pointer.rpartition("/properties/")
    return head if sep else pointer


def undeclared_key(closed_schema, instance, strict=False):
    """Whether `instance` has a key that `closed_schema` (toolfit's rewrite with objects closed) does not
    name in `properties` where it stands, read as the grammar reads it (a key matched only by a
    `patternProperties` pattern counts as undeclared): refused there by additionalProperties."""
    found = violations(_as_grammar_reads(closed_schema, strict), instance)
    words = {"additionalProperties", "unevaluatedProperties"} | ({"items", "prefixItems"} if strict else set())
    return bool(found) and any(w & words for _, w in found)


def zero_fraction(instance):
    """Whether `instance` holds a number written with a fraction that is zero (1.0, -2.0): a grammar
    spells an integer, or a const/enum number, one way."""
    if isinstance(instance, float):
        return instance.is_integer()
    if isinstance(instance, dict):
        return any(zero_fraction(v) for v in instance.values())
    if isinstance(instance, list):
        return any(zero_fraction(v) for v in instance)
    return False


def _data_holds(schema, test):
    """Whether some const or enum of `schema` holds data that passes `test`."""
    found = []
    def see(x):
        if isinstance(x, dict) and any(test(x.get(k)) for k in ("const", "enum")):
            found.append(x)
        return x
    _subschemas(schema, see)
    return bool(found)


def number_data(schema):
    """Whether `schema` has a const or enum number written with a zero fraction (-2.0): a grammar spells it
    that one way, so the same number written otherwise (-2) cannot match."""
    return _data_holds(schema, zero_fraction)


def _has_object(v):
    return isinstance(v, dict) or (isinstance(v, list) and any(_has_object(x) for x in v))


def object_data(schema, instance):
    """Whether `schema` has a const or enum holding an object and `instance` holds one: a grammar spells
    such a value with its members in the schema's order, so another order cannot be written."""
    return _has_object(instance) and _data_holds(schema, _has_object)


def self_test():
    """The rules say no where they must: returns [(name, ok)]."""
    s = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2}, "b": {"type": "integer", "multipleOf": 3}}}
    removed_mult = [{"kind": "keyword_removed", "path": "/properties/b", "lossy": True, "detail": "removed multipleOf: 3"}]
    at_root = [{"kind": "not_dropped", "path": "", "lossy": True, "detail": "removed not: {}"}]
    whole = [{"kind": "schema_replaced", "path": "", "lossy": True, "detail": "replaced"}]
    closed = {"type": "object", "properties": {"a": {}}, "additionalProperties": False}
    union = {"anyOf": [{"type": "string"}, {"type": "integer", "multipleOf": 3}]}
    letters = {"type": "string", "pattern": "^\\p{Letter}+$", "maxLength": 2}
    pat_removed = [{"kind": "pattern_removed", "path": "", "lossy": True, "detail": "pattern removed"}]
    two_of = {"oneOf": [{"type": "integer"}, {"type": "integer", "multipleOf": 3}]}
    union_mult = [{"kind": "keyword_removed", "path": "/anyOf/1", "lossy": True, "detail": "removed multipleOf: 3"}]
    external = {"type": "object", "properties": {"b": {"$ref": "https://example.invalid/b.json"}}}
    ext_record = [{"kind": "ref_external", "path": "/properties/b", "lossy": True, "detail": "a ref to another document"}]
    removed_elsewhere = [{"kind": "keyword_removed", "path": "/properties/a", "lossy": True, "detail": "removed multipleOf: 3"}]
    merged = [{"kind": "keyword_removed", "path": "/anyOf/0", "lossy": True, "detail": "removed minimum: 20; maximum: 30"}]
    nested = {"type": "object", "required": ['a"b'], "properties": {'a"b': {}, "o": {"type": "object", "required": ["x", "y"]}}}
    unspellable = [{"kind": "property_unspellable", "path": '/properties/a"b', "lossy": True, "detail": 'property "a\\"b" cannot be written'}]
    return [
        ("a removed multipleOf at another property does not excuse", excused(removed_elsewhere, s, {"b": 4}) is None),
        ("a record on a split branch excuses its keyword at the same place", excused(merged, {"allOf": [{"maximum": 30}]}, 35) is not None),
        ("places: a definition applies wherever it is used", _match(governs("/$defs/X/properties/y"), ["a", "0", "y"])),
        ("places: properties/a/items is any element of a", _match(governs("/properties/a/items"), ["a", "3"]) and not _match(governs("/properties/a/items"), ["b", "3"])),
        ("a removed multipleOf excuses a value that is no multiple", excused(removed_mult, s, {"b": 4}) is not None),
        ("a removed multipleOf does not excuse a string too long", excused(removed_mult, s, {"a": "xyz"}) is None),
        ("a record at the root about `not` does not excuse a violation elsewhere", excused(at_root, s, {"a": "xyz"}) is None),
        ("a removed keyword excuses only its own keyword", excused(removed_mult, s, {"b": "x"}) is None),
        ("every violation needs its record: a removed multipleOf on b does not excuse a too long a beside it",
         excused(removed_mult, s, {"a": "xyz", "b": 4}) is None),
        ("a union: a removed multipleOf in one branch excuses a value that fails only it", excused(union_mult, union, 4) is not None),
        ("a union: not a value that still fails that branch's type and the other branch", excused(union_mult, union, 4.5) is None),
        ("a pattern Python cannot compile: a pattern record excuses it, not what else fails beside it",
         excused(pat_removed, letters, "12") is not None and excused(pat_removed, letters, "123") is None and excused(removed_mult, letters, "12") is None),
        ("valid under two oneOf branches: excused by a record in a branch, not by one elsewhere",
         excused([{**removed_mult[0], "path": "/oneOf/1"}], two_of, 6) is not None and excused(removed_elsewhere, two_of, 6) is None),
        ("where the reference validator cannot judge, an unrelated lossy record does not excuse",
         excused(removed_mult, external, {"b": 4}) is None and excused(ext_record, external, {"b": 4}) is not None),
        ("a schema replaced at the root excuses what is under it", excused(whole, s, {"a": "xyz"}) is not None),
        ("a property removed as unspellable excuses its object's required, not another object's",
         excused(unspellable, nested, {"q": 1, "o": {"x": 1, "y": 2}}) is not None and excused(unspellable, nested, {'a"b': 1, "o": {}}) is None),
        ("a key the closed schema does not declare is told apart", undeclared_key(closed, {"a": 1, "z": 2})),
        ("an instance with only declared keys is not", not undeclared_key(closed, {"a": 1})),
        ("strict: an item past prefixItems is undeclared", undeclared_key({"prefixItems": [{}]}, [1, 2], strict=True)
         and not undeclared_key({"prefixItems": [{}]}, [1, 2])),
        ("1.0 has a zero fraction, 1 and 1.5 do not", zero_fraction({"a": [1.0]}) and not zero_fraction([1, 1.5])),
        ("an object const is object data; a string const is not", object_data({"properties": {"a": {"const": {"x": 1}}}}, {"a": {"x": 1}})
         and not object_data({"const": "x"}, {"a": 1})),
    ]
