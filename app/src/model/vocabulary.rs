//! `vocabulary!`: a closed set of words stored as text (a status, an outcome, an action): an enum
//! with its spellings, parsed and shown by them, decoded from rows by them, and described by them
//! in the API's OpenAPI document.

/// Declares a closed vocabulary: an enum whose variants are spelled as the database and the URL
/// spell them, with `ALL`, `as_str`, `parse` and serde in that spelling. Written first,
/// `#[serde_variant_names]` keeps serde on the variants' Rust names (`Viewer`): the spelling the
/// dashboard's server functions sent before the type joined the vocabulary.
macro_rules! vocabulary {
    (#[serde_variant_names] $(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* $variant),+
        }
        $crate::model::vocabulary::vocabulary!(@spelled $name { $($variant = $text),+ });
    };
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }
        $crate::model::vocabulary::vocabulary!(@spelled $name { $($variant = $text),+ });
    };
    (@spelled $name:ident { $($variant:ident = $text:literal),+ }) => {
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }

            /// Every spelling, for messages: `a, b, c`.
            pub fn spellings() -> String {
                [$($text),+].join(", ")
            }
        }

        /// Compared with its spelling, as a URL or a test has it.
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        /// Rows decode straight into the vocabulary: a spelling it does not know is an error,
        /// never a default.
        #[cfg(feature = "ssr")]
        impl sea_orm::TryGetable for $name {
            fn try_get_by<I: sea_orm::ColIdx>(
                res: &sea_orm::QueryResult,
                index: I,
            ) -> Result<Self, sea_orm::TryGetError> {
                let text = String::try_get_by(res, index)?;
                $name::parse(&text).ok_or_else(|| {
                    sea_orm::TryGetError::DbErr(sea_orm::DbErr::Type(format!(
                        "{} {text:?} is not one of {}",
                        stringify!($name),
                        $name::spellings()
                    )))
                })
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// The API document's schema: a string, one of the spellings.
        #[cfg(feature = "ssr")]
        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .enum_values(Some([$($text),+]))
                    .into()
            }
        }

        #[cfg(feature = "ssr")]
        impl utoipa::ToSchema for $name {}
    };
}

pub(crate) use vocabulary;
