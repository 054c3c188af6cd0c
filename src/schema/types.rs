//! JSON types as a set, and which keywords apply to which type.

use crate::schema::lookup::Lookup;
use serde_json::{Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Types(pub u8);

impl Types {
    pub const NULL: Types = Types(1);
    pub const BOOLEAN: Types = Types(2);
    pub const OBJECT: Types = Types(4);
    pub const ARRAY: Types = Types(8);
    pub const STRING: Types = Types(16);
    /// Numbers that are not integers; "number" is `FRACTION | INTEGER`.
    pub const FRACTION: Types = Types(32);
    pub const INTEGER: Types = Types(64);
    pub const NUMBER: Types = Types(96);
    pub const ALL: Types = Types(127);
    pub const NONE: Types = Types(0);

    pub fn from_name(name: &str) -> Option<Types> {
        Some(match name {
            "null" => Types::NULL,
            "boolean" => Types::BOOLEAN,
            "object" => Types::OBJECT,
            "array" => Types::ARRAY,
            "string" => Types::STRING,
            "number" => Types::NUMBER,
            "integer" => Types::INTEGER,
            _ => return None,
        })
    }

    /// The types a `type` keyword allows; `None` when the keyword is absent or unusable.
    pub fn of(node: &Map<String, Value>) -> Option<Types> {
        Types::of_value_type(node.at("type")?)
    }

    /// The types a `type` keyword's value names.
    pub fn of_value_type(t: &Value) -> Option<Types> {
        match t {
            Value::String(s) => Types::from_name(s),
            Value::Array(a) => {
                let mut t = Types::NONE;
                for v in a {
                    t = t.union(Types::from_name(v.as_str()?)?);
                }
                Some(t)
            }
            _ => None,
        }
    }

    pub fn of_value(v: &Value) -> Types {
        match v {
            Value::Null => Types::NULL,
            Value::Bool(_) => Types::BOOLEAN,
            Value::Object(_) => Types::OBJECT,
            Value::Array(_) => Types::ARRAY,
            Value::String(_) => Types::STRING,
            Value::Number(n) => {
                if n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0) {
                    Types::INTEGER
                } else {
                    Types::FRACTION
                }
            }
        }
    }

    pub fn union(self, o: Types) -> Types {
        Types(self.0 | o.0)
    }
    pub fn inter(self, o: Types) -> Types {
        Types(self.0 & o.0)
    }
    pub fn minus(self, o: Types) -> Types {
        Types(self.0 & !o.0)
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn contains(self, o: Types) -> bool {
        self.0 & o.0 == o.0
    }

    /// The `type` value for this set: a name when one suffices, else an array in a fixed order.
    pub fn to_json(self) -> Value {
        let mut names = Vec::new();
        for (t, n) in [
            (Types::STRING, "string"),
            (Types::NUMBER, "number"),
            (Types::INTEGER, "integer"),
            (Types::BOOLEAN, "boolean"),
            (Types::OBJECT, "object"),
            (Types::ARRAY, "array"),
            (Types::NULL, "null"),
        ] {
            if t == Types::INTEGER && self.contains(Types::NUMBER) {
                continue;
            }
            if t == Types::NUMBER && !self.contains(Types::NUMBER) {
                continue;
            }
            if self.contains(t) {
                names.push(Value::String(n.to_string()));
            }
        }
        if self.inter(Types::NUMBER) == Types::FRACTION {
            // "numbers that are not integers" has no name; "number" is the closest superset.
            names.push(Value::String("number".into()));
        }
        if names.len() == 1 {
            names.pop().unwrap_or(Value::Null)
        } else {
            Value::Array(names)
        }
    }
}

/// Keywords that constrain only one type of instance, with that type.
pub fn keyword_type(k: &str) -> Option<Types> {
    Some(match k {
        "properties"
        | "required"
        | "additionalProperties"
        | "patternProperties"
        | "propertyNames"
        | "minProperties"
        | "maxProperties"
        | "dependentRequired"
        | "dependentSchemas"
        | "dependencies"
        | "unevaluatedProperties" => Types::OBJECT,
        "items" | "prefixItems" | "minItems" | "maxItems" | "uniqueItems" | "contains" | "minContains" | "maxContains" | "unevaluatedItems"
        | "additionalItems" => Types::ARRAY,
        "minLength" | "maxLength" | "pattern" | "format" | "contentEncoding" | "contentMediaType" | "contentSchema" => Types::STRING,
        "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" => Types::NUMBER,
        _ => return None,
    })
}

/// One schema per type name (in the order given) for a node whose `type` is a list: each branch gets
/// `type: name` and the node's keywords that apply to that type (see [`keyword_type`]), except those in
/// `outside`. Exact as an `anyOf`: a keyword constrains only values of its own type.
pub fn per_type_branches(node: &Map<String, Value>, names: &[&str], outside: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|name| {
            let own = Types::from_name(name).unwrap_or(Types::ALL);
            let mut b: Map<String, Value> = node
                .iter()
                .filter(|(k, _)| k.as_str() != "type" && !outside.contains(&k.as_str()) && keyword_type(k).is_none_or(|kt| !kt.inter(own).is_empty()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            b.insert("type".into(), Value::String((*name).to_string()));
            Value::Object(b)
        })
        .collect()
}
