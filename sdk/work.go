package sdk

// Work runs f, work the plugin does of its own accord (a periodic rescan,
// a refresh), as the SDK runs a call: the executable's pages f maps are
// released a moment after it and the calls around it end, instead of
// being held until the plugin's next 10-second release. A plugin whose
// own work comes every few seconds would otherwise hold that code all the
// time. Work that runs more often than every second or so gains nothing
// from it (each run maps its code back) and should not use it.
func Work(f func()) {
	if workTracker != nil {
		workTracker.Begin()
		defer workTracker.End()
	}
	f()
}

// callTracker is what counts a plugin's calls and Work to release its
// pages after them (exepages.AfterCalls).
type callTracker interface {
	Begin()
	End()
}

// workTracker is the callTracker Serve installs before it serves, so
// before any goroutine a call starts can run Work; nil in a plugin served
// in-process (NewGRPCPlugin) or where nothing is released.
var workTracker callTracker
