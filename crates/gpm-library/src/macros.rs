//! The two macros every registry uses: `registered!` implements `Registered` for an entry (its
//! row of the signature table), `entry_ref!` declares the registry's reference type (a
//! `&'static dyn` law compared, printed and serialised by its name).

/// An entry's row of its registry's signature table: `impl Registered for Entry`, returning a
/// `static` row built from the fields given (each registry's `register!` calls it once per row).
macro_rules! registered {
    ($entry:ty, $row:expr) => {
        impl Registered for $entry {
            fn signature(&self) -> &'static Signature {
                static ROW: Signature = $row;
                &ROW
            }
        }
    };
}

/// A reference to a registered entry of a plug-in table, compared, printed and serialised by
/// its name (what the IR and the schedule store in place of an enum of families).
macro_rules! entry_ref {
    ($(#[$doc:meta])* $name:ident, $law:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $name(pub &'static dyn $law);

        impl std::ops::Deref for $name {
            type Target = dyn $law;
            fn deref(&self) -> &(dyn $law + 'static) {
                self.0
            }
        }

        impl PartialEq for $name {
            fn eq(&self, other: &Self) -> bool {
                self.0.name() == other.0.name()
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0.name())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.0.name())
            }
        }
    };
}
