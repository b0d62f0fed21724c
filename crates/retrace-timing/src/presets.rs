//! Built-in core presets. Each is a TOML file under `presets/` whose comments
//! cite where its numbers come from; they are parsed by the same code as a
//! user's file, so a preset is also a complete example of the format.

use crate::model::{CoreModel, ModelError};

/// The presets: name and TOML text.
pub const PRESETS: &[(&str, &str)] = &[
    ("ideal", include_str!("../presets/ideal.toml")),
    ("picorv32", include_str!("../presets/picorv32.toml")),
    ("inorder5", include_str!("../presets/inorder5.toml")),
    ("rocket", include_str!("../presets/rocket.toml")),
    ("ibex-small", include_str!("../presets/ibex-small.toml")),
    ("ibex-maxperf", include_str!("../presets/ibex-maxperf.toml")),
    ("cv32e40p", include_str!("../presets/cv32e40p.toml")),
    ("e31", include_str!("../presets/e31.toml")),
    ("u74", include_str!("../presets/u74.toml")),
];

/// Asking for a preset that does not exist.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PresetError {
    /// No preset of that name.
    #[error("unknown core `{name}`: known presets are {known}; or give a path to a .toml core description")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A preset failed to parse (a bug, caught by the tests).
    #[error(transparent)]
    Model(#[from] ModelError),
}

/// The built-in core of this name.
pub fn preset(name: &str) -> Result<CoreModel, PresetError> {
    let Some((_, text)) = PRESETS.iter().find(|(n, _)| *n == name) else {
        return Err(PresetError::Unknown {
            name: name.to_string(),
            known: PRESETS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    Ok(CoreModel::from_toml(text, &format!("preset {name}"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_under_its_name() {
        for (name, _) in PRESETS {
            let m = preset(name).unwrap();
            assert_eq!(&m.name, name);
        }
    }

    #[test]
    fn unknown_preset_lists_known_ones() {
        let msg = preset("boom").unwrap_err().to_string();
        assert!(msg.contains("rocket") && msg.contains("picorv32"), "{msg}");
    }
}
