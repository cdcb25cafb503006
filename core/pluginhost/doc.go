// Package pluginhost launches, supervises and hot-swaps the core's plugin
// processes, one per configured plugin block, and hands the rest of the core
// a way to call them.
//
// A Host keeps one slot (a *Plugin) per configured plugin: one per kind for
// singleton kinds, one per name for devices. A slot outlives the processes
// that serve it: when a process crashes, hangs or is replaced by a hot swap,
// the slot's callers keep their *Plugin and Acquire the next process. While a
// slot has no serving process, calls fail at once with ErrUnavailable and the
// kind's core component applies its fallback (Kind.Fallback).
//
// See docs/plugin-host.md for the lifecycle, the launch sequence, the trust
// checks and the hot-swap sequence.
package pluginhost
