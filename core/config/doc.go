// Package config loads the agent's configuration.
//
// Sources, lowest precedence first: built-in defaults (Defaults), the main
// HCL file (--config), the drop-in directory (--config-dir, *.hcl merged in
// file-name order), the environment (MICROLET_ prefix, "__" between nesting
// levels) and the command-line flags the user actually set. Each source is
// merged through koanf: blocks and maps merge key by key, while scalars and
// lists are replaced whole.
//
// Files are read by an HCL parser of our own (koanf's parsers/hcl keeps
// HCL1's lists of single-entry maps, so several plugin blocks become one
// list that later sources replace instead of merge). It nests block labels
// as map keys, keeps every key verbatim (a quoted key with dots stays one
// key, so plugin config bodies reach plugins unchanged) and records the line
// of every key, so errors and Config.Position name file and line.
//
// Every source is checked before it is merged: unknown keys and values of the
// wrong type are reported with the file and line, environment variable or
// flag that set them, and all problems are reported together.
package config
