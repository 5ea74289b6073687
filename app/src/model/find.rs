//! What the top bar's search finds: objects and events by id or by body.
