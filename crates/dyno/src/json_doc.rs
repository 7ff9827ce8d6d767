//! JSON documents as docs/output.md promises them: every one names its schema, so
//! `dyno X --format json | jq .schema` tells a script what it reads.

use serde::Serialize;

/// `value` (a JSON object once serialised) with `"schema": schema` added.
pub fn with_schema(schema: &str, value: &impl Serialize) -> serde_json::Result<serde_json::Value> {
    let mut v = serde_json::to_value(value)?;
    if let serde_json::Value::Object(map) = &mut v {
        map.insert("schema".into(), schema.into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_schema_joins_the_fields() {
        #[derive(Serialize)]
        struct R {
            tps: f64,
        }
        let v = with_schema("dyno.x/1", &R { tps: 2.5 }).unwrap();
        assert_eq!(v["schema"], "dyno.x/1");
        assert_eq!(v["tps"], 2.5);
    }
}
