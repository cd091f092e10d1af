package sqlite

import "errors"

// ErrSchemaVersion means the database file was migrated by a newer version
// of this package: its schema_version is past the newest migration this
// package embeds, so Open refuses to touch it.
var ErrSchemaVersion = errors.New("sqlite: database schema is newer than this package")
