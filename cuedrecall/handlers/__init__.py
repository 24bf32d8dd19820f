"""Tool handlers: each takes the runtime and the validated arguments of one tool and returns its response."""
